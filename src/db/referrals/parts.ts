// The parts of a referral that live in their own tables: appointments, notes, the provider's outcome
// and timeline events.
// They are read and written only after the referral itself passed the tenancy check.
import { sql, type Insertable, type RawBuilder } from 'kysely';
import type { OutcomeView } from '../../domain/outcome.ts';
import type { ReasonView } from '../../domain/reasons.ts';
import type { AppointmentView, NoteView, TimelineEventView } from '../../domain/referral-view.ts';
import type { AppointmentStatus } from '../../domain/statuses.ts';
import type { FieldCipher } from '../../domain/data-keys.ts';
import { sealColumns } from '../data-keys/data-keys.repository.ts';
import type { Executor } from '../executor.ts';
import type { TimelineEventsTable } from '../schema.ts';

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

export interface NewOutcome {
  readonly referralId: string;
  readonly code: string;
  readonly display: string;
  readonly summary: string | null;
  readonly attachmentIds: readonly string[];
  readonly completedByName: string | null;
  readonly requesterIdentifier: string | null;
  readonly system: string;
  readonly completedAt: Date;
}

export interface NewTimelineEvent {
  readonly id: string;
  readonly referralId: string;
  readonly type: string;
  readonly system: string;
  /** The timeline's sentence, which may quote what a person typed. */
  readonly description: string;
  /** The event feed's sentence: the same, without free text (domain/timeline.ts). */
  readonly eventDescription: string;
  readonly producedAt: Date;
  /** The coded reason, which the timeline row and its feed row both keep (not patient data). */
  readonly reason?: ReasonView | undefined;
  /** For a step copied into a redirect's successor, the referral it was taken on. */
  readonly fromReferralId?: string | undefined;
}

/** The writes of a referral's parts, as statements for a change's statement (change.ts). */
export const childWrites = {
  upsertAppointment(
    db: Executor,
    cipher: FieldCipher,
    referralId: string,
    appointment: Omit<AppointmentRecord, 'updatedAt'>,
    now: Date,
  ) {
    const { location } = sealColumns(
      'appointments',
      { referral_id: referralId, id: appointment.id },
      { location: appointment.location },
      cipher,
    );
    return db
      .insertInto('appointments')
      .values({
        referral_id: referralId,
        id: appointment.id,
        status: appointment.status,
        start_at: appointment.startAt,
        location,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc.columns(['referral_id', 'id']).doUpdateSet({
          status: appointment.status,
          start_at: appointment.startAt,
          location,
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

  insertOutcome(db: Executor, cipher: FieldCipher, outcome: NewOutcome) {
    const place = { referral_id: outcome.referralId };
    return db.insertInto('referral_outcomes').values({
      referral_id: outcome.referralId,
      code: outcome.code,
      display: outcome.display,
      summary: sealColumns('referral_outcomes', place, { summary: outcome.summary }, cipher).summary,
      attachment_ids: JSON.stringify(outcome.attachmentIds),
      completed_by_name: outcome.completedByName,
      requester_identifier: outcome.requesterIdentifier,
      system: outcome.system,
      completed_at: outcome.completedAt,
    });
  },

  acknowledgeOutcome(db: Executor, referralId: string, byName: string | null, now: Date) {
    return db
      .updateTable('referral_outcomes')
      .set({ acknowledged_at: now, acknowledged_by_name: byName })
      .where('referral_id', '=', referralId);
  },

  insertNote(db: Executor, cipher: FieldCipher, note: NewNote) {
    return db.insertInto('notes').values({
      id: note.id,
      referral_id: note.referralId,
      content: sealColumns('notes', { id: note.id }, { content: note.content }, cipher).content,
      author_name: note.authorName,
      author_institution_id_type: note.authorInstitution.idType,
      author_institution_id: note.authorInstitution.id,
      requester_identifier: note.requesterIdentifier,
      system: note.system,
      created_at: note.createdAt,
    });
  },
};

export function toAppointmentView(a: AppointmentRecord): AppointmentView {
  return {
    id: a.id,
    status: a.status,
    startAt: a.startAt.toISOString(),
    location: a.location,
    updatedAt: a.updatedAt.toISOString(),
  };
}

/** The timeline rows of `events`, each sentence sealed. */
export function timelineRows(
  events: readonly NewTimelineEvent[],
  cipher: FieldCipher,
): Insertable<TimelineEventsTable>[] {
  return events.map((e) => ({
    id: e.id,
    referral_id: e.referralId,
    type: e.type,
    system: e.system,
    description: sealedDescription(e, cipher),
    produced_at: e.producedAt,
    reason_code: e.reason?.code ?? null,
    reason_display: e.reason?.display ?? null,
    from_referral_id: e.fromReferralId ?? null,
  }));
}

/** The timeline sentence of `event`, sealed for its row. */
export function sealedDescription(event: NewTimelineEvent, cipher: FieldCipher): string {
  return sealColumns('timeline_events', { id: event.id }, { description: event.description }, cipher)
    .description;
}

export function timelineRepository(db: Executor) {
  return {
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
  /** The provider's outcome, once it completed the referral. */
  readonly outcome: OutcomeView | null;
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
  outcome: {
    code: string;
    display: string;
    summary: string | null;
    attachmentIds: string[];
    completedByName: string | null;
    completedAt: string;
    acknowledgedByName: string | null;
    acknowledgedAt: string | null;
  } | null;
  timelineEvents: {
    id: string;
    type: string;
    system: string;
    description: string;
    producedAt: string;
    reasonCode: string | null;
    reasonDisplay: string | null;
    fromReferralId: string | null;
  }[];
}

/**
 * A referral's appointments, notes, outcome and timeline as four JSON columns, in the orders of the
 * lists above (appointments by start, then by ID in byte order, whatever the database's collation, so
 * that a write's answer, which orders them in code, lists them as a read does), for the referral whose
 * ID is `referralId` (a value, or a reference to the outer query's column). Every full read of a
 * referral needs all four; reading them in the same statement as the referral saves four round trips,
 * during which the request holds a pooled connection inside its transaction.
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
    sql<ReferralPartsColumns['outcome']>`(
      select json_build_object(
               'code', o.code, 'display', o.display, 'summary', o.summary, 'attachmentIds', o.attachment_ids,
               'completedByName', o.completed_by_name, 'completedAt', o.completed_at,
               'acknowledgedByName', o.acknowledged_by_name, 'acknowledgedAt', o.acknowledged_at)
        from referral_outcomes o where o.referral_id = ${referralId})`.as('outcome'),
    sql<ReferralPartsColumns['timelineEvents']>`(
      select coalesce(json_agg(json_build_object(
               'id', t.id, 'type', t.type, 'system', t.system, 'description', t.description,
               'producedAt', t.produced_at, 'reasonCode', t.reason_code, 'reasonDisplay', t.reason_display,
               'fromReferralId', t.from_referral_id)
               order by t.seq), '[]'::json)
        from timeline_events t where t.referral_id = ${referralId})`.as('timelineEvents'),
  ] as const;
}

/** JSON has no timestamp type: the ISO 8601 text (with an offset) PostgreSQL wrote, as a Date. */
const dateOf = (text: string) => new Date(text);

/** The parts of the referral `row.id`, their patient data opened. */
export function toReferralParts(
  row: ReferralPartsColumns & { id: string },
  cipher: FieldCipher,
): ReferralParts {
  return {
    appointments: row.appointments.map((a) => ({
      id: a.id,
      status: a.status as AppointmentStatus,
      startAt: dateOf(a.startAt),
      location: cipher.open(a.location, {
        table: 'appointments',
        column: 'location',
        row: `${row.id}/${a.id}`,
      }),
      updatedAt: dateOf(a.updatedAt),
    })),
    notes: row.notes.map((n) => ({
      id: n.id,
      content: cipher.open(n.content, { table: 'notes', column: 'content', row: n.id }),
      authorName: n.authorName,
      authorInstitution: n.institution,
      createdAt: dateOf(n.createdAt).toISOString(),
    })),
    outcome:
      row.outcome === null
        ? null
        : toOutcomeView({
            ...row.outcome,
            summary: cipher.openOptional(row.outcome.summary, {
              table: 'referral_outcomes',
              column: 'summary',
              row: row.id,
            }),
          }),
    timelineEvents: row.timelineEvents.map((t) => ({
      id: t.id,
      type: t.type,
      system: t.system,
      description: cipher.open(t.description, { table: 'timeline_events', column: 'description', row: t.id }),
      producedAt: dateOf(t.producedAt).toISOString(),
      ...(t.reasonCode === null || t.reasonDisplay === null
        ? {}
        : { reason: { code: t.reasonCode, display: t.reasonDisplay } }),
      ...(t.fromReferralId === null ? {} : { fromReferralId: t.fromReferralId }),
    })),
  };
}

function toOutcomeView(o: NonNullable<ReferralPartsColumns['outcome']>): OutcomeView {
  return {
    code: o.code,
    display: o.display,
    summary: o.summary,
    attachmentIds: o.attachmentIds,
    completedByName: o.completedByName,
    completedAt: dateOf(o.completedAt).toISOString(),
    ...(o.acknowledgedAt === null
      ? {}
      : { acknowledgedAt: dateOf(o.acknowledgedAt).toISOString(), acknowledgedByName: o.acknowledgedByName }),
  };
}
