// The data keys' store: the keys themselves (made, wrapped again, marked swept) and the passes of a
// sweep, which seal again, here in db/, what is not under the active key. A pass takes the active key
// once, as it starts, and seals with that key only; each row is written back only if it still holds
// what was read (data-keys.repository.ts, `reseal`), each attachment's bytes likewise.
import { attachmentRepository } from '../attachments.repository.ts';
import {
  dataKeyRepository,
  openColumns,
  sealColumns,
  sealedColumnNames,
  SEALED_COLUMNS,
  type DataKeys,
  type SealedTable,
} from './data-keys.repository.ts';
import type { Executor } from '../executor.ts';

/** What one batch of a pass did: rows (or files) found stale, those sealed again, and where it ended. */
export interface ResealedBatch<After> {
  readonly found: number;
  readonly resealed: number;
  /** Where the next batch starts (the last row's key); the same `after` when nothing was found. */
  readonly last: After;
}

/** One pass of a sweep, under the key that was active when it began. */
export interface SweepPass {
  readonly keyId: string;
  /** Rows of `table` not under the pass's key (or missing their blind index). */
  staleCount(table: SealedTable): Promise<number>;
  /** Seals again up to `limit` stale rows of `table` after `after`, in key order. */
  resealBatch(
    table: SealedTable,
    after: readonly unknown[] | undefined,
    limit: number,
  ): Promise<ResealedBatch<readonly unknown[] | undefined>>;
  /** Attachments whose bytes are not under the pass's key. */
  staleContentCount(): Promise<number>;
  /** Seals again up to `limit` stale attachments' bytes after `after`, one file at a time. */
  resealContents(after: string | undefined, limit: number): Promise<ResealedBatch<string | undefined>>;
}

/** The sealed columns of an opened row: a sweep writes only those back (with the blind index). */
function onlySealed(table: SealedTable, opened: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(sealedColumnNames(table).map((c) => [c, opened[c]]));
}

export function dataKeyStore(db: Executor, keys: DataKeys) {
  const repo = dataKeyRepository(db);
  const contents = attachmentRepository(db, keys);
  return {
    /** Every data key, oldest first (the newest fields key is the active one). */
    all: () => repo.all(),
    /** Records that no sealed value is under a key older than `keyId` any more. */
    markSwept: (keyId: string, at: Date) => repo.markSwept(keyId, at),
    /** Wraps every data key with the key ring's active key-encryption key; returns how many changed. */
    rewrap: () => repo.rewrap(keys.ring),
    /** Makes a new fields key, the active one from now on; returns its ID. */
    makeFieldsKey: () => repo.makeFieldsKey(keys.ring),
    /** The tables whose rows hold sealed columns, each swept a batch at a time. */
    sealedTables: Object.keys(SEALED_COLUMNS) as SealedTable[],
    /** How long a process may keep sealing with a key after a newer one was made. */
    refreshMs: keys.refreshMs,
    /** The active key's ID, the keys looked up again now. */
    async activeKeyId(): Promise<string> {
      return (await keys.reload(db)).activeKeyId;
    },
    /** Begins a pass under the active key, the keys looked up again now. */
    async sweepPass(): Promise<SweepPass> {
      const sealing = await keys.reload(db);
      const keyId = sealing.activeKeyId;
      return {
        keyId,
        staleCount: (table) => repo.staleCount(table, keyId),
        async resealBatch(table, after, limit) {
          const rows = await repo.staleRows(table, keyId, after, limit);
          let resealed = 0;
          for (const stored of rows) {
            const opened = await keys.reading(db, (c) => openColumns(table, stored, c));
            const sealed = sealColumns(table, stored, onlySealed(table, opened), sealing);
            if (await repo.reseal(table, stored, sealed)) resealed += 1;
          }
          const lastRow = rows[rows.length - 1];
          const last = lastRow === undefined ? after : SEALED_COLUMNS[table].key.map((c) => lastRow[c]);
          return { found: rows.length, resealed, last };
        },
        staleContentCount: () => contents.staleContentCount(keyId),
        async resealContents(after, limit) {
          const files = await contents.staleContents(keyId, after, limit);
          let resealed = 0;
          // One file at a time: the sweep holds one file's sealed bytes at once, never a batch of them.
          for (const file of files) {
            if (await contents.resealContent(file.id, file.sizeBytes, sealing)) resealed += 1;
          }
          return { found: files.length, resealed, last: files[files.length - 1]?.id ?? after };
        },
      };
    },
  };
}

export type DataKeyStore = ReturnType<typeof dataKeyStore>;
