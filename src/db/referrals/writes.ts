// The writes of a referral: the compare-and-set on `version` that every change makes, the soft
// delete, and the new draft; each a statement of its own or a part of a change's one statement
// (change.ts), returning what the change's other parts read.
import { sql, type Compilable, type RawBuilder, type Selectable } from 'kysely';
import type { FieldCipher } from '../../domain/data-keys.ts';
import type { OfferingRecord } from '../catalog.repository.ts';
import type { Executor } from '../executor.ts';
import type { ReferralsTable } from '../schema.ts';
import {
  offeringColumns,
  patchColumns,
  plainReferralRow,
  sealed,
  toRecord,
  type NewDraftNames,
  type NewReferral,
  type ReferralPatch,
  type ReferralRecord,
  type ReferralSnapshot,
  type Row,
} from './rows.ts';

/**
 * The UPDATE that sets `columns` and increments `version` only if the row is still at
 * `expectedVersion` (and `guard` holds): no row when another write got there first.
 */
function versionedUpdate(
  db: Executor,
  id: string,
  expectedVersion: number,
  columns: Partial<Selectable<ReferralsTable>>,
  now: Date,
  guard: RawBuilder<boolean> = sql<boolean>`true`,
) {
  return db
    .updateTable('referrals')
    .set((eb) => ({ ...columns, version: eb('version', '+', 1), updated_at: now }))
    .where('id', '=', id)
    .where('version', '=', expectedVersion)
    .where('deleted_at', 'is', null)
    .where(guard);
}

/** The compare-and-set of a patch's columns, sealed. */
export function compareAndSetQuery(
  db: Executor,
  id: string,
  expectedVersion: number,
  columns: Partial<Selectable<ReferralsTable>>,
  now: Date,
  guard?: RawBuilder<boolean>,
) {
  return versionedUpdate(db, id, expectedVersion, columns, now, guard);
}

/** The soft delete: the row stays for the audit trail but is never visible again. */
export function softDeleteQuery(
  db: Executor,
  id: string,
  expectedVersion: number,
  now: Date,
  guard?: RawBuilder<boolean>,
) {
  return versionedUpdate(db, id, expectedVersion, { deleted_at: now }, now, guard);
}

/** What a change does to the referral's own row. */
export type RowChange =
  /** A new draft; `names` are what its record names besides its own columns. */
  | { readonly kind: 'insert'; readonly referral: NewReferral; readonly names: NewDraftNames }
  /** The compare-and-set of `patch` on the referral `before` saw; `offering` is the one `patch` names. */
  | {
      readonly kind: 'update';
      readonly before: ReferralSnapshot;
      readonly patch: ReferralPatch;
      readonly offering?: OfferingRecord | null;
      readonly now: Date;
    }
  /** The soft delete of the referral `before` saw, if it is still at its version. */
  | { readonly kind: 'delete'; readonly before: ReferralSnapshot; readonly now: Date };

/**
 * The write of `change`, as a statement for a common table expression of the change's statement
 * (change.ts) that returns `returning`, sealed with the cipher it is given, and the record the
 * referral is after it. The record is made from the row the read saw by the same columns the statement
 * sets, so it is exactly what a read after the statement would return.
 */
export function rowWrite(
  db: Executor,
  change: RowChange,
  returning: readonly (keyof ReferralsTable)[],
): {
  readonly after: ReferralRecord;
  readonly query: (cipher: FieldCipher, guard: RawBuilder<boolean>) => Compilable;
} {
  switch (change.kind) {
    case 'insert': {
      const { referral, names } = change;
      const row = plainReferralRow(referral);
      return {
        after: toRecord({ ...(row as Row), ...offeringColumns(names.offering), sender_name: names.sender }),
        query: (cipher) =>
          db
            .insertInto('referrals')
            .values(sealed(referral.id, row, cipher))
            .returning(returning),
      };
    }
    case 'update': {
      const { before, patch, offering, now } = change;
      const row: Row = {
        ...before.row,
        ...patchColumns(patch),
        ...(patch.offeringId === undefined ? {} : offeringColumns(offering ?? null)),
        version: before.row.version + 1,
        updated_at: now,
      };
      return {
        after: toRecord(row),
        query: (cipher, guard) =>
          compareAndSetQuery(
            db,
            before.record.id,
            before.record.version,
            sealed(before.record.id, patchColumns(patch), cipher, before.row),
            now,
            guard,
          ).returning(returning),
      };
    }
    case 'delete': {
      const { before, now } = change;
      return {
        after: before.record,
        query: (_cipher, guard) =>
          softDeleteQuery(db, before.record.id, before.record.version, now, guard).returning(returning),
      };
    }
  }
}
