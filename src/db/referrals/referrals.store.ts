// The referral store: the one door to referrals. Reads with tenancy (reads.ts), the list (list.ts),
// and the writes (writes.ts, change.ts), sealing and opening the patient data inside.
import type { InstitutionRef } from '../../domain/access.ts';
import { ARCHIVED } from '../../domain/lifecycle.ts';
import { ReferralArchivedError, ReferralNotFoundError } from '../../errors.ts';
import type { AuditEvent } from '../audit/audit.repository.ts';
import type { DataKeys } from '../data-keys/data-keys.repository.ts';
import { auditRow } from '../audit/audit.repository.ts';
import { SEALED_COLUMNS } from '../data-keys/data-keys.repository.ts';
import type { Executor } from '../executor.ts';
import { linkTokenRows } from '../links.repository.ts';
import { pendingChange, recordChange, type ChangeRecord, type ReferralChange } from './change.ts';
import { listPage } from './list.ts';
import {
  markTriageOverdue,
  triageOverdueDue,
  worklistCounts,
  worklistPage,
  type WorklistFilter,
} from './worklists.ts';
import { timelineRepository, toReferralParts } from './parts.ts';
import {
  readForSystem,
  readForSystemWithParts,
  readVisible,
  readVisibleAudited,
  readVisibleWithParts,
} from './reads.ts';
import {
  newReferralRow,
  opened,
  patchColumns,
  sealed,
  toRecord,
  type CandidateLink,
  type ListFilter,
  type NewReferral,
  type ReferralPatch,
  type ReferralRecord,
  type ReferralSnapshot,
  type ReferralWithParts,
  type Row,
} from './rows.ts';
import { compareAndSetQuery, softDeleteQuery } from './writes.ts';
import type { LinkAction } from '../../domain/referral-view.ts';

/**
 * `row` when it may be shown; 410 referral_archived when it was archived: a caller's read of an
 * archived referral, and so every step on it, answers with the archive's reference (never 404).
 */
function shown<T extends Pick<Row, 'id' | 'status' | 'archived_at' | 'archive_name'>>(rows: T[]): T[] {
  const [row] = rows;
  if (row?.status === ARCHIVED) {
    throw new ReferralArchivedError(row.id, row.archive_name ?? '', row.archived_at ?? new Date(0));
  }
  return rows;
}

export function createReferralStore(db: Executor, keys: DataKeys) {
  const record = (row: Row | undefined) => row && keys.reading(db, (cipher) => toRecord(opened(row, cipher)));
  return {
    /** The referral if `institution` may see it; undefined otherwise (the caller answers 404). */
    async findVisible(id: string, institution: InstitutionRef): Promise<ReferralRecord | undefined> {
      const [row] = shown(await readVisible(db, id, institution.idType, institution.id));
      return record(row);
    },

    /** The referral if `institution` may see it; 404 referral_not_found otherwise. */
    async getVisible(id: string, institution: InstitutionRef): Promise<ReferralRecord> {
      const record = await this.findVisible(id, institution);
      if (!record) throw new ReferralNotFoundError(id);
      return record;
    },

    /** The referral without a tenancy check: for workers acting for the system, never for callers. */
    async findForSystem(id: string): Promise<ReferralRecord | undefined> {
      const [row] = await readForSystem(db, id);
      return record(row);
    },

    /**
     * `findVisible` with the referral's appointments, notes and timeline, read in the same statement
     * (a full read needs them all).
     */
    async findVisibleWithParts(
      id: string,
      institution: InstitutionRef,
    ): Promise<ReferralSnapshot | undefined> {
      const [stored] = shown(await readVisibleWithParts(db, id, institution.idType, institution.id));
      return (
        stored &&
        keys.reading(db, (cipher) => {
          const row = opened(stored, cipher);
          return { record: toRecord(row), parts: toReferralParts(row, cipher), row };
        })
      );
    },

    /**
     * `findVisibleWithParts` with its audit row and one-time links written in the same statement (see
     * readVisibleAudited), so that they are stored before anything read is handed out, in one round
     * trip. Returns the actions whose links were stored.
     */
    async readAudited(
      id: string,
      institution: InstitutionRef,
      audit: AuditEvent,
      links: readonly CandidateLink[],
    ): Promise<(ReferralWithParts & { readonly linked: readonly LinkAction[] }) | undefined> {
      const [row] = shown(
        await readVisibleAudited(
          db,
          id,
          institution.idType,
          institution.id,
          JSON.stringify(auditRow(audit)),
          JSON.stringify(
            links.map(({ token, asSender, asOther }) => ({
              ...linkTokenRows([token])[0],
              as_sender: asSender,
              as_other: asOther,
            })),
          ),
        ),
      );
      return (
        row &&
        keys.reading(db, (cipher) => ({
          record: toRecord(opened(row, cipher)),
          parts: toReferralParts(row, cipher),
          linked: row.minted as LinkAction[],
        }))
      );
    },

    /** `findForSystem` with the referral's parts, in one statement (the forwarder renders from them). */
    async findForSystemWithParts(id: string): Promise<ReferralWithParts | undefined> {
      const [row] = await readForSystemWithParts(db, id);
      return (
        row &&
        keys.reading(db, (cipher) => ({
          record: toRecord(opened(row, cipher)),
          parts: toReferralParts(row, cipher),
        }))
      );
    },

    /** Who sent the referral (it never changes), deleted or not: one indexed row, two columns. */
    async senderOf(id: string): Promise<InstitutionRef | undefined> {
      const row = await db
        .selectFrom('referrals')
        .select(['sender_id_type', 'sender_id'])
        .where('id', '=', id)
        .executeTakeFirst();
      return row && { idType: row.sender_id_type, id: row.sender_id };
    },

    /** Locks the referral's row for the rest of the transaction, then reads it (system work only). */
    async lockForSystem(id: string): Promise<ReferralRecord | undefined> {
      await db.selectFrom('referrals').select('id').where('id', '=', id).forUpdate().executeTakeFirst();
      return this.findForSystem(id);
    },

    /**
     * A command's change of one referral, to be written in one statement (change.ts): the
     * compare-and-set (or insert, or soft delete), its parts, timeline, feed, outbox and audit rows,
     * and, with the answer, its links and the caller's key.
     */
    change: (change: ReferralChange) => pendingChange(db, keys, change),

    /**
     * Writes what a system action leaves behind (its timeline with the feed, outbox and audit rows) in
     * the caller's transaction, after the action's own statements.
     */
    recordChange: (change: ChangeRecord) => recordChange(db, keys, change),

    /** When the referral last entered a status (its timeline's event of that type), if it ever did. */
    timeline: timelineRepository(db),

    /** A page of an institution's referrals (list.ts), with its audit row when `audit` is given. */
    list: (filter: ListFilter, audit?: AuditEvent) => listPage(db, keys, filter, audit),

    /** A page of a worklist (worklists.ts), with its audit row. */
    worklist: (filter: WorklistFilter, audit: AuditEvent) => worklistPage(db, keys, filter, audit),

    /** Every worklist's count for an institution at `now`, with the read's audit row. */
    worklistCounts: (institution: InstitutionRef, now: Date, audit: AuditEvent) =>
      worklistCounts(db, institution, now, audit),

    /** Referrals past their triage due time and not yet said to be overdue, earliest due first. */
    triageOverdueDue: (now: Date, limit: number) => triageOverdueDue(db, now, limit),

    /** Records, once, that the triage due at `dueAt` is overdue. */
    markTriageOverdue: (id: string, dueAt: Date, now: Date) => markTriageOverdue(db, id, dueAt, now),

    async insert(referral: NewReferral): Promise<void> {
      await db
        .insertInto('referrals')
        .values(newReferralRow(referral, await keys.cipher(db)))
        .execute();
    },

    /**
     * Applies `patch` and increments `version` only if the row is still at `expectedVersion`.
     * Returns false when another transaction got there first; the caller decides again.
     */
    async compareAndSet(
      id: string,
      expectedVersion: number,
      patch: ReferralPatch,
      now: Date,
    ): Promise<boolean> {
      const columns = patchColumns(patch);
      let current: Row | undefined;
      if (SEALED_COLUMNS.referrals.columns.some((column) => column in columns)) {
        // The patient data is sealed as one value: the rest of it comes from the row at that version.
        const [stored] = await readForSystem(db, id);
        if (stored === undefined || stored.version !== expectedVersion) return false;
        current = await keys.reading(db, (cipher) => opened(stored, cipher));
      }
      const result = await compareAndSetQuery(
        db,
        id,
        expectedVersion,
        sealed(id, columns, await keys.cipher(db), current),
        now,
      ).executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },

    /** Soft-deletes: the row stays for the audit trail but is never visible again. */
    async softDelete(id: string, expectedVersion: number, now: Date): Promise<boolean> {
      const result = await softDeleteQuery(db, id, expectedVersion, now).executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },
  };
}

export type ReferralStore = ReturnType<typeof createReferralStore>;
