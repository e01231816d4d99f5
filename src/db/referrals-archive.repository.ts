// Archiving referrals (services/retention/referrals-archive.ts), its side in the database: which
// referrals are due, each one's full record as the archive holds it, and the purge that follows a
// verified archive.
//
// The record is the rows as stored, with every sealed value sealed again under the active data key at
// its own place (table, column, row), as the data keys' sweep does: a value still in the clear (a row
// written before field encryption and not yet swept) is sealed on its way out, so an archive never
// holds patient data in the clear. The attachments' bytes go as stored (sealed, chunk by chunk, at the
// place of the attachment that stored them). The archive carries the wrapped data keys they are under,
// so an operator who holds the key ring opens it without this database (docs/security.md).
//
// The purge keeps what the figures and the ledger read: the referral's row (identifiers, offering,
// priority, times, the EHR hash), its appointments' statuses and times, its outcome code, its files'
// hashes and sizes, its timeline's types and times, the forms' SHA-256s and the delivery ledger. It
// removes what may name or describe the patient: the sealed columns (null), the notes and the files'
// bytes (deleted), and each timeline sentence (null; the feed's copy quotes no free text and stays).
import { sql } from 'kysely';
import type { FieldCipher } from '../domain/data-keys.ts';
import { ARCHIVED, FINAL_STATUSES } from '../domain/lifecycle.ts';
import {
  openColumns,
  sealColumns,
  sealedColumnNames,
  SEALED_COLUMNS,
  type DataKeys,
  type SealedTable,
} from './data-keys/data-keys.repository.ts';
import type { Executor } from './executor.ts';

/** A referral's full record, as one line of an archive's `referrals.ndjson` holds it. */
export interface ArchivedReferral {
  /** The referrals row (sealed values sealed under the active data key; the blind index left out). */
  readonly referral: Record<string, unknown>;
  readonly appointments: readonly Record<string, unknown>[];
  readonly notes: readonly Record<string, unknown>[];
  readonly outcome: Record<string, unknown> | null;
  /** The files' rows (their bytes are in `attachment-contents.ndjson`). */
  readonly attachments: readonly Record<string, unknown>[];
  readonly timeline: readonly Record<string, unknown>[];
  /** The forms sent to the EHR, and each attempt to deliver one (the ledger). */
  readonly forms: readonly Record<string, unknown>[];
  readonly deliveries: readonly Record<string, unknown>[];
}

/** What the purge checks it still finds: the referral as it was when its record was read. */
export interface ArchivedState {
  readonly version: number;
  /** How many timeline rows and notes it had: a step taken since (a note) means the record is stale. */
  readonly timelineRows: number;
  readonly notes: number;
}

/** One file's stored bytes, as one line of an archive's `attachment-contents.ndjson` holds them. */
export interface ArchivedContent {
  readonly referralId: string;
  readonly attachmentId: string;
  /** The attachment that stored the bytes, whose place they are sealed at (a redirect's successor reads its predecessor's). */
  readonly storedAs: string;
  readonly content: Buffer;
}

/** A wrapped data key, as one line of an archive's `data-keys.ndjson` holds it. */
export interface ArchivedDataKey {
  readonly id: string;
  readonly purpose: 'fields';
  readonly kekId: string;
  readonly wrapped: string;
}

const FINAL = () =>
  sql.join(
    FINAL_STATUSES.map((s) => sql.lit(s)),
    sql`, `,
  );

/** The columns of `row` that hold sealed values, opened and sealed again under `sealing`. */
async function sealedAgain(
  db: Executor,
  keys: DataKeys,
  sealing: FieldCipher,
  table: SealedTable,
  row: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const opened = await keys.reading(db, (cipher) => openColumns(table, row, cipher));
  const only = Object.fromEntries(sealedColumnNames(table).map((c) => [c, opened[c]]));
  return { ...row, ...sealColumns(table, row, only, sealing) };
}

export function referralsArchiveRepository(db: Executor, keys: DataKeys) {
  return {
    /**
     * Up to `limit` referrals after `after` (by ID) that may be archived at `cutoff`: final, not
     * deleted, untouched since before `cutoff` (neither their row nor their timeline), their delivery
     * to the EHR ended (never due, or delivered; a forward queued or failed waits for its end), no
     * work left in the outbox and no file waiting for its scan.
     */
    async due(cutoff: Date, after: string | undefined, limit: number): Promise<string[]> {
      const { rows } = await sql<{ id: string }>`
        select r.id from referrals r
        where r.deleted_at is null and r.status in (${FINAL()}) and r.updated_at < ${cutoff}
          and r.ehr_state in ('not-sent', 'forwarded')
          and not exists (select 1 from outbox o where o.referral_id = r.id and o.processed_at is null)
          and not exists (select 1 from timeline_events t
            where t.referral_id = r.id and t.produced_at >= ${cutoff})
          and not exists (select 1 from attachments a
            where a.referral_id = r.id and a.scan_state = 'pending-scan')
          ${after === undefined ? sql`` : sql`and r.id > ${after}::uuid`}
        order by r.id
        limit ${limit}`.execute(db);
      return rows.map((r) => r.id);
    },

    /** The referral's full record and the state the purge must still find; undefined once gone or archived. */
    async record(id: string): Promise<{ record: ArchivedReferral; state: ArchivedState } | undefined> {
      const referral = await db
        .selectFrom('referrals')
        .selectAll()
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .where('status', '<>', ARCHIVED)
        .executeTakeFirst();
      if (referral === undefined) return undefined;
      const [appointments, notes, outcome, attachments, timeline, forms, deliveries] = await Promise.all([
        db.selectFrom('appointments').selectAll().where('referral_id', '=', id).orderBy('id').execute(),
        db
          .selectFrom('notes')
          .selectAll()
          .where('referral_id', '=', id)
          .orderBy('created_at')
          .orderBy('id')
          .execute(),
        db.selectFrom('referral_outcomes').selectAll().where('referral_id', '=', id).executeTakeFirst(),
        db.selectFrom('attachments').selectAll().where('referral_id', '=', id).orderBy('number').execute(),
        db.selectFrom('timeline_events').selectAll().where('referral_id', '=', id).orderBy('seq').execute(),
        db
          .selectFrom('ehr_forms')
          .selectAll()
          .where('referral_id', '=', id)
          .orderBy('created_at')
          .orderBy('message_id')
          .execute(),
        db
          .selectFrom('ehr_submissions')
          .selectAll()
          .where('referral_id', '=', id)
          .orderBy('attempted_at')
          .orderBy('id')
          .execute(),
      ]);
      const sealing = await keys.cipher(db);
      const again = (table: SealedTable, rows: readonly object[]) =>
        Promise.all(rows.map((row) => sealedAgain(db, keys, sealing, table, row as Record<string, unknown>)));
      // The blind index is left out: it would let a holder of the blind-index key find the patient.
      const row: Record<string, unknown> = { ...referral };
      delete row.patient_uin_index;
      return {
        record: {
          referral: await sealedAgain(db, keys, sealing, 'referrals', row),
          appointments: await again('appointments', appointments),
          notes: await again('notes', notes),
          outcome: outcome === undefined ? null : ((await again('referral_outcomes', [outcome]))[0] ?? null),
          attachments: await again('attachments', attachments),
          timeline: await again('timeline_events', timeline),
          forms: await again('ehr_forms', forms),
          deliveries,
        },
        state: { version: referral.version, timelineRows: timeline.length, notes: notes.length },
      };
    },

    /** The stored bytes of the referral's files, one file at a time. */
    async *contents(referralId: string): AsyncGenerator<ArchivedContent> {
      const files = await db
        .selectFrom('attachments')
        .select(['id', sql<string>`coalesce(content_of, id)`.as('stored_as')])
        .where('referral_id', '=', referralId)
        .orderBy('number')
        .execute();
      for (const file of files) {
        const row = await db
          .selectFrom('attachment_contents')
          .select('content')
          .where('attachment_id', '=', file.stored_as)
          .executeTakeFirst();
        if (row === undefined) continue;
        yield {
          referralId,
          attachmentId: file.id,
          storedAs: file.stored_as,
          content: Buffer.from(row.content),
        };
      }
    },

    /** Every fields data key, wrapped as the database keeps it: what an archive's values are under. */
    async dataKeys(): Promise<ArchivedDataKey[]> {
      const rows = await db
        .selectFrom('data_keys')
        .select(['id', 'kek_id', 'wrapped'])
        .where('purpose', '=', 'fields')
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map((r) => ({ id: r.id, purpose: 'fields', kekId: r.kek_id, wrapped: r.wrapped }));
    },

    /**
     * Purges the referral's clinical content and marks it archived in `archive` at `at`, if it is
     * still as its record was read (`state`) and may still be archived; returns whether it did, and
     * the status it was in. Run it in a transaction, with the timeline step written after it.
     */
    async purge(
      id: string,
      state: ArchivedState,
      archive: { readonly name: string; readonly at: Date },
    ): Promise<{ readonly from: string } | undefined> {
      const locked = await db
        .selectFrom('referrals')
        .select(['status', 'version', 'ehr_state'])
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .forUpdate()
        .executeTakeFirst();
      if (
        locked === undefined ||
        !FINAL_STATUSES.includes(locked.status as (typeof FINAL_STATUSES)[number]) ||
        locked.version !== state.version ||
        !['not-sent', 'forwarded'].includes(locked.ehr_state)
      )
        return undefined;
      const counts = await sql<{
        timeline: number | string;
        notes: number | string;
        pending: number | string;
      }>`
        select
          (select count(*)::int from timeline_events where referral_id = ${id}::uuid) as timeline,
          (select count(*)::int from notes where referral_id = ${id}::uuid) as notes,
          (select count(*)::int from outbox where referral_id = ${id}::uuid and processed_at is null) as pending
      `.execute(db);
      const found = counts.rows[0];
      if (
        found === undefined ||
        Number(found.timeline) !== state.timelineRows ||
        Number(found.notes) !== state.notes ||
        Number(found.pending) > 0
      )
        return undefined;

      const sealedReferralColumns = Object.fromEntries(
        [...SEALED_COLUMNS.referrals.columns, SEALED_COLUMNS.referrals.together].map((c) => [c, null]),
      );
      await db
        .updateTable('referrals')
        .set({
          ...sealedReferralColumns,
          patient_uin_index: null,
          status: ARCHIVED,
          archived_at: archive.at,
          archive_name: archive.name,
        })
        .where('id', '=', id)
        .execute();
      await db.updateTable('appointments').set({ location: null }).where('referral_id', '=', id).execute();
      await db.deleteFrom('notes').where('referral_id', '=', id).execute();
      await db
        .updateTable('referral_outcomes')
        .set({ summary: null })
        .where('referral_id', '=', id)
        .execute();
      await db
        .updateTable('timeline_events')
        .set({ description: null })
        .where('referral_id', '=', id)
        .execute();
      // The forms keep their hash and their files' IDs, hashes and sizes; not the files' names.
      await sql`
        update ehr_forms set html = null,
          attachments = coalesce(
            (select jsonb_agg(item.value - 'fileName' order by item.ordinality)
             from jsonb_array_elements(attachments) with ordinality as item(value, ordinality)),
            '[]'::jsonb)
        where referral_id = ${id}::uuid`.execute(db);
      // The bytes of its files go, unless a referral not archived reads them too (a redirect's
      // successor reads its predecessor's stored bytes, and the predecessor ends first).
      await sql`
        delete from attachment_contents c
        where c.attachment_id in (
            select coalesce(a.content_of, a.id) from attachments a where a.referral_id = ${id}::uuid)
          and not exists (
            select 1 from attachments o join referrals r on r.id = o.referral_id
            where coalesce(o.content_of, o.id) = c.attachment_id and r.status <> ${ARCHIVED})`.execute(db);
      await db.updateTable('attachments').set({ file_name: null }).where('referral_id', '=', id).execute();
      return { from: locked.status };
    },
  };
}

export type ReferralsArchiveRepository = ReturnType<typeof referralsArchiveRepository>;
