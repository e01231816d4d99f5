// The parts of a referral that live in their own tables: appointments, notes and timeline events.
// They are read and written only after the referral itself passed the tenancy check.
import { sql, type Insertable, type RawBuilder } from 'kysely';
import type { AppointmentView, NoteView, TimelineEventView } from '../domain/referral-view.ts';
import type { AppointmentStatus } from '../domain/statuses.ts';
import type { Executor } from './executor.ts';
import type { TimelineEventsTable } from './schema.ts';

export interface AppointmentRecord {
  readonly id: string;
  readonly status: AppointmentStatus;
  readonly startAt: Date;
  readonly location: string;
  readonly updatedAt: Date;
}

export interface NewNote {
  readonly id: string;
  readonly referralId: string;
  readonly content: string;
  readonly authorName: string | null;
  readonly authorInstitution: { readonly idType: string; readonly id: string };
  readonly requesterIdentifier: string | null;
  readonly system: string;
  readonly createdAt: Date;
}

export interface NewTimelineEvent {
  readonly id: string;
  readonly referralId: string;
  readonly type: string;
  readonly system: string;
  readonly description: string;
  readonly producedAt: Date;
}

/** The writes of a referral's parts, as statements for a change's statement or to run on their own. */
export const childWrites = {
  upsertAppointment(
    db: Executor,
    referralId: string,
    appointment: Omit<AppointmentRecord, 'updatedAt'>,
    now: Date,
  ) {
    return db
      .insertInto('appointments')
      .values({
        referral_id: referralId,
        id: appointment.id,
        status: appointment.status,
        start_at: appointment.startAt,
        location: appointment.location,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc.columns(['referral_id', 'id']).doUpdateSet({
          status: appointment.status,
          start_at: appointment.startAt,
          location: appointment.location,
          updated_at: now,
        }),
      );
  },

  /** Marks every scheduled appointment of the referral cancelled. */
  cancelScheduled(db: Executor, referralId: string, now: Date) {
    return db
      .updateTable('appointments')
      .set({ status: 'cancelled', updated_at: now })
      .where('referral_id', '=', referralId)
      .where('status', '=', 'scheduled');
  },

  insertNote(db: Executor, note: NewNote) {
    return db.insertInto('notes').values({
      id: note.id,
      referral_id: note.referralId,
      content: note.content,
      author_name: note.authorName,
      author_institution_id_type: note.authorInstitution.idType,
      author_institution_id: note.authorInstitution.id,
      requester_identifier: note.requesterIdentifier,
      system: note.system,
      created_at: note.createdAt,
    });
  },
};

export function appointmentRepository(db: Executor) {
  return {
    async list(referralId: string): Promise<AppointmentRecord[]> {
      const rows = await db
        .selectFrom('appointments')
        .select(['id', 'status', 'start_at', 'location', 'updated_at'])
        .where('referral_id', '=', referralId)
        .orderBy('start_at')
        .orderBy(sql`id collate "C"`)
        .execute();
      return rows.map((r) => ({
        id: r.id,
        status: r.status as AppointmentStatus,
        startAt: r.start_at,
        location: r.location,
        updatedAt: r.updated_at,
      }));
    },

    async upsert(
      referralId: string,
      appointment: Omit<AppointmentRecord, 'updatedAt'>,
      now: Date,
    ): Promise<void> {
      await childWrites.upsertAppointment(db, referralId, appointment, now).execute();
    },

    /** Marks every scheduled appointment cancelled; returns those it changed. */
    async cancelScheduled(referralId: string, now: Date): Promise<AppointmentRecord[]> {
      const rows = await childWrites
        .cancelScheduled(db, referralId, now)
        .returning(['id', 'status', 'start_at', 'location', 'updated_at'])
        .execute();
      return rows
        .map((r) => ({
          id: r.id,
          status: r.status as AppointmentStatus,
          startAt: r.start_at,
          location: r.location,
          updatedAt: r.updated_at,
        }))
        .sort((a, b) => a.startAt.getTime() - b.startAt.getTime() || a.id.localeCompare(b.id));
    },
  };
}

export function toAppointmentView(a: AppointmentRecord): AppointmentView {
  return {
    id: a.id,
    status: a.status,
    startAt: a.startAt.toISOString(),
    location: a.location,
    updatedAt: a.updatedAt.toISOString(),
  };
}

export function noteRepository(db: Executor) {
  return {
    list(referralId: string): Promise<NoteView[]> {
      return this.listWhere('n.referral_id', referralId);
    },

    async listWhere(column: 'n.id' | 'n.referral_id', value: string): Promise<NoteView[]> {
      const rows = await db
        .selectFrom('notes as n')
        .innerJoin('institutions as i', (j) =>
          j
            .onRef('i.id_type', '=', 'n.author_institution_id_type')
            .onRef('i.id', '=', 'n.author_institution_id'),
        )
        .select([
          'n.id',
          'n.content',
          'n.author_name',
          'n.created_at',
          'i.id_type',
          'i.id as inst_id',
          'i.name',
        ])
        .where(column, '=', value)
        .orderBy('n.created_at')
        .orderBy('n.id')
        .execute();
      return rows.map((r) => ({
        id: r.id,
        content: r.content,
        authorName: r.author_name,
        authorInstitution: { idType: r.id_type, id: r.inst_id, name: r.name },
        createdAt: r.created_at.toISOString(),
      }));
    },

    async get(noteId: string): Promise<NoteView> {
      const note = (await this.listWhere('n.id', noteId))[0];
      if (!note) throw new Error(`note ${noteId} is missing`);
      return note;
    },

    async count(referralId: string): Promise<number> {
      const row = await db
        .selectFrom('notes')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('referral_id', '=', referralId)
        .executeTakeFirstOrThrow();
      return row.n;
    },

    async insert(note: NewNote): Promise<void> {
      await childWrites.insertNote(db, note).execute();
    },
  };
}

export function timelineRows(events: readonly NewTimelineEvent[]): Insertable<TimelineEventsTable>[] {
  return events.map((e) => ({
    id: e.id,
    referral_id: e.referralId,
    type: e.type,
    system: e.system,
    description: e.description,
    produced_at: e.producedAt,
  }));
}

export function timelineRepository(db: Executor) {
  return {
    /** Oldest first, in the order the events were written. */
    async list(referralId: string): Promise<TimelineEventView[]> {
      const rows = await db
        .selectFrom('timeline_events')
        .select(['id', 'type', 'system', 'description', 'produced_at'])
        .where('referral_id', '=', referralId)
        .orderBy('seq')
        .execute();
      return rows.map((r) => ({
        id: r.id,
        type: r.type,
        system: r.system,
        description: r.description,
        producedAt: r.produced_at.toISOString(),
      }));
    },

    /** When the referral last entered `type` (for example pending-acceptance), if it ever did. */
    async latestOf(referralId: string, type: string): Promise<Date | undefined> {
      const row = await db
        .selectFrom('timeline_events')
        .select('produced_at')
        .where('referral_id', '=', referralId)
        .where('type', '=', type)
        .orderBy('seq', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row?.produced_at;
    },
  };
}

export interface ReferralParts {
  readonly appointments: AppointmentRecord[];
  readonly notes: NoteView[];
  readonly timelineEvents: TimelineEventView[];
}

/** The parts as the columns of `referralPartsColumns` carry them: JSON, timestamps as ISO text. */
export interface ReferralPartsColumns {
  appointments: { id: string; status: string; startAt: string; location: string; updatedAt: string }[];
  notes: {
    id: string;
    content: string;
    authorName: string | null;
    createdAt: string;
    institution: { idType: string; id: string; name: string };
  }[];
  timelineEvents: { id: string; type: string; system: string; description: string; producedAt: string }[];
}

/**
 * A referral's appointments, notes and timeline as three JSON columns, in the orders of the lists
 * above (appointments by start, then by ID in byte order, whatever the database's collation, so that
 * a write's answer, which orders them in code, lists them as a read does), for the referral whose ID is `referralId` (a value, or a reference to the outer query's
 * column). Every full read of a referral needs all three; reading them in the same statement as the
 * referral saves three round trips, during which the request holds a pooled connection inside its
 * transaction.
 */
export function referralPartsColumns(referralId: string | RawBuilder<unknown>) {
  return [
    sql<ReferralPartsColumns['appointments']>`(
      select coalesce(json_agg(json_build_object(
               'id', a.id, 'status', a.status, 'startAt', a.start_at, 'location', a.location,
               'updatedAt', a.updated_at) order by a.start_at, a.id collate "C"), '[]'::json)
        from appointments a where a.referral_id = ${referralId})`.as('appointments'),
    sql<ReferralPartsColumns['notes']>`(
      select coalesce(json_agg(json_build_object(
               'id', n.id, 'content', n.content, 'authorName', n.author_name, 'createdAt', n.created_at,
               'institution', json_build_object('idType', i.id_type, 'id', i.id, 'name', i.name))
             order by n.created_at, n.id), '[]'::json)
        from notes n
        join institutions i on i.id_type = n.author_institution_id_type and i.id = n.author_institution_id
        where n.referral_id = ${referralId})`.as('notes'),
    sql<ReferralPartsColumns['timelineEvents']>`(
      select coalesce(json_agg(json_build_object(
               'id', t.id, 'type', t.type, 'system', t.system, 'description', t.description,
               'producedAt', t.produced_at) order by t.seq), '[]'::json)
        from timeline_events t where t.referral_id = ${referralId})`.as('timelineEvents'),
  ] as const;
}

/** JSON has no timestamp type: the ISO 8601 text (with an offset) PostgreSQL wrote, as a Date. */
const dateOf = (text: string) => new Date(text);

export function toReferralParts(row: ReferralPartsColumns): ReferralParts {
  return {
    appointments: row.appointments.map((a) => ({
      id: a.id,
      status: a.status as AppointmentStatus,
      startAt: dateOf(a.startAt),
      location: a.location,
      updatedAt: dateOf(a.updatedAt),
    })),
    notes: row.notes.map((n) => ({
      id: n.id,
      content: n.content,
      authorName: n.authorName,
      authorInstitution: n.institution,
      createdAt: dateOf(n.createdAt).toISOString(),
    })),
    timelineEvents: row.timelineEvents.map((t) => ({
      id: t.id,
      type: t.type,
      system: t.system,
      description: t.description,
      producedAt: dateOf(t.producedAt).toISOString(),
    })),
  };
}
