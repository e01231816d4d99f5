// Rotation of the data keys, and the sweep that seals again every value not under the newest one:
// values written before field encryption (what the migration left in the clear), and values under a
// key a rotation replaced. The sweep runs while the service serves. It walks each table in key order,
// a batch at a time, and writes each row back only if it still holds what the sweep read, so a
// request's write in between is never undone; a row it loses to a write is looked at again on the
// next pass. It can stop at any point and start again: what it has done is in the values themselves.
// Attachments' bytes (attachment_contents) are swept last, a file at a time: read a piece at a time,
// sealed again chunk by chunk, and written back only if the stored bytes are still those read. This
// file walks; the reading, sealing and writing back happen in the data keys' store (db/data-keys/data-keys.store.ts).
import type { Clock } from '../domain/clock.ts';
import type { SealedTable } from '../db/data-keys/data-keys.repository.ts';
import type { SweepPass } from '../db/data-keys/data-keys.store.ts';
import type { Stores } from '../db/stores.ts';

/** Rows a sweep reads, seals again and writes back at a time. */
export const SWEEP_BATCH = 200;

/** What a sweep walks: the tables of sealed columns, and the attachments' bytes. */
export type SweptTable = SealedTable | 'attachment_contents';

/** Where a sweep is: rows sealed again so far, of those found stale when it began. */
export interface SweepProgress {
  readonly keyId: string;
  readonly table: SweptTable;
  readonly done: number;
  readonly total: number;
}

export interface DataKeyStatus {
  readonly activeKeyId: string;
  /** Whether every value is sealed under the active key (the last sweep finished). */
  readonly swept: boolean;
  readonly keys: readonly { id: string; purpose: 'fields' | 'blind-index'; kekId: string; createdAt: Date }[];
  /** Rows each table still holds under an older key or in the clear. */
  readonly stale: Readonly<Record<SweptTable, number>>;
}

export interface DataKeyDeps {
  readonly stores: Pick<Stores, 'dataKeys'>;
  readonly clock: Clock;
  /** Rows sealed again per batch (SWEEP_BATCH unless said). */
  readonly batchSize?: number;
}

/** Told after each batch; the sweep goes on once it returns (or its promise settles). */
export type OnSweepProgress = (progress: SweepProgress) => void | Promise<void>;

export function createDataKeyRotation(deps: DataKeyDeps) {
  const keys = deps.stores.dataKeys;
  const batchSize = deps.batchSize ?? SWEEP_BATCH;
  const sleepUntil = (at: Date) =>
    new Promise<void>((resolve) =>
      setTimeout(resolve, Math.max(0, at.getTime() - deps.clock.now().getTime())),
    );

  /** One pass over the attachments' bytes; returns how many files it sealed again. */
  async function contentPass(sweep: SweepPass, onProgress: OnSweepProgress): Promise<number> {
    const { keyId } = sweep;
    const total = await sweep.staleContentCount();
    if (total === 0) return 0;
    let done = 0;
    let after: string | undefined;
    for (;;) {
      const batch = await sweep.resealContents(after, batchSize);
      if (batch.found === 0) break;
      done += batch.resealed;
      after = batch.last;
      await onProgress({ keyId, table: 'attachment_contents', done: Math.min(done, total), total });
    }
    return done;
  }

  /** One pass over every table; returns how many rows it sealed again. */
  async function pass(onProgress: OnSweepProgress): Promise<number> {
    const sweep = await keys.sweepPass();
    const { keyId } = sweep;
    let sealed = 0;
    for (const table of keys.sealedTables) {
      const total = await sweep.staleCount(table);
      if (total === 0) continue;
      let done = 0;
      let after: readonly unknown[] | undefined;
      for (;;) {
        const batch = await sweep.resealBatch(table, after, batchSize);
        if (batch.found === 0) break;
        done += batch.resealed;
        after = batch.last;
        await onProgress({ keyId, table, done: Math.min(done, total), total });
      }
      sealed += done;
    }
    return sealed + (await contentPass(sweep, onProgress));
  }

  return {
    async status(): Promise<DataKeyStatus> {
      const sweep = await keys.sweepPass();
      const all = await keys.all();
      const active = all.find((k) => k.id === sweep.keyId);
      const stale = Object.fromEntries([
        ...(await Promise.all(keys.sealedTables.map(async (t) => [t, await sweep.staleCount(t)] as const))),
        ['attachment_contents', await sweep.staleContentCount()] as const,
      ]) as Record<SweptTable, number>;
      return {
        activeKeyId: sweep.keyId,
        swept: active?.swept_at !== null && active?.swept_at !== undefined,
        keys: all.map((k) => ({ id: k.id, purpose: k.purpose, kekId: k.kek_id, createdAt: k.created_at })),
        stale,
      };
    },

    /** Whether the active key was never swept to: a rotation left unfinished, or a fresh migration. */
    async pending(): Promise<{ readonly keyId: string; readonly first: boolean } | undefined> {
      const activeKeyId = await keys.activeKeyId();
      const fields = (await keys.all()).filter((k) => k.purpose === 'fields');
      const active = fields.find((k) => k.id === activeKeyId);
      if (active === undefined || active.swept_at !== null) return undefined;
      return { keyId: active.id, first: fields.length === 1 };
    },

    /**
     * Seals every value under the active key, then records it. The last passes start only after every
     * other process has looked for the new key and finished the requests it began before (twice the
     * refresh interval after the key was made), and go on until one finds nothing, so no value sealed
     * under an older key by a process that had not yet seen the new one is left behind.
     */
    async sweep(onProgress: OnSweepProgress = () => undefined): Promise<{ keyId: string; sealed: number }> {
      const keyId = await keys.activeKeyId();
      const fields = (await keys.all()).filter((k) => k.purpose === 'fields');
      const active = fields.find((k) => k.id === keyId);
      const older = fields.length > 1;
      let sealed = await pass(onProgress);
      if (older && active !== undefined) {
        // One refresh interval for every process to see the key, one more for the requests they had
        // begun with the older one to finish; then passes until one finds nothing left.
        await sleepUntil(new Date(active.created_at.getTime() + 2 * keys.refreshMs));
        for (let more = await pass(onProgress); more > 0; more = await pass(onProgress)) sealed += more;
      }
      if ((await keys.activeKeyId()) === keyId) await keys.markSwept(keyId, deps.clock.now());
      return { keyId, sealed };
    },

    /**
     * Rotates: wraps every data key with the ring's active key-encryption key (so an old one can
     * leave the ring), makes a new data key, and sweeps to it. A rotation left unfinished (the active
     * key not yet swept to) is finished instead of starting another.
     */
    async rotate(
      onProgress: OnSweepProgress = () => undefined,
    ): Promise<{ keyId: string; sealed: number; rewrapped: number; resumed: boolean }> {
      const rewrapped = await keys.rewrap();
      const resumed = (await this.pending()) !== undefined;
      if (!resumed) await keys.makeFieldsKey();
      const result = await this.sweep(onProgress);
      return { ...result, rewrapped, resumed };
    },
  };
}

export type DataKeyRotation = ReturnType<typeof createDataKeyRotation>;
