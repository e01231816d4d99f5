// The forward backlog's cost does not grow with the forwards it has seen, on both engines. The relay
// ranks every batch it queues and each forward leaves as a worker starts it, so a busy clinic's rows
// are deleted as fast as they are added; both statements must read the forwards still waiting, not
// every one deleted within the order's horizon. No VACUUM runs in between, as on PGlite (which has no
// autovacuum) or on a database between two of autovacuum's runs, and the statistics are those gathered
// while the backlog was empty.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../src/db/database.ts';
import { forwardBacklogRepository } from '../../../src/db/forwarding/backlog.ts';
import { ENGINES, openTestStore } from '../../support/engines.ts';

const INSTITUTION = 'hci:S1234A';
/** Forwards ranked and started between the two batches looked at: a busy clinic's few minutes. */
const HISTORY = 1000;
/** The relay ranks up to 32 referrals' forwards at once. */
const BATCH = 32;

describe.each(ENGINES)('the forward backlog on %s, as its history grows', (engine) => {
  let store: Store;
  let seen = 0;

  beforeAll(async () => {
    store = await openTestStore(engine);
    await sql`ANALYZE`.execute(store.db);
  });
  afterAll(async () => {
    await store.close();
  });

  const backlog = () => forwardBacklogRepository(store.db);
  const horizon = () => new Date(Date.now() - 3600_000);
  const entries = (n: number) =>
    Array.from({ length: n }, () => ({ institution: INSTITUTION, jobId: `job-${++seen}.v2` }));

  /** `n` forwards ranked in batches, then each started (forgotten) as a worker would. */
  async function history(n: number) {
    for (let i = 0; i < n; i += BATCH) {
      const batch = entries(Math.min(BATCH, n - i));
      await backlog().rank(batch, new Date(), horizon());
      await backlog().forget(batch);
    }
  }

  /**
   * A batch ranked and then started (forgotten), committed: its ranks, and the sequential scans of the
   * backlog's table the two statements made. The counter read is the backend's count not yet sent to
   * the statistics collector, which may hold earlier transactions' scans on the same connection; it is
   * not sent during a transaction, so the difference across the two statements is theirs alone.
   */
  const rankAndStart = () =>
    store.db.transaction().execute(async (trx) => {
      const scans = async () => {
        const { rows } = await sql<{ scans: string }>`
          select pg_stat_get_xact_numscans('forward_backlog'::regclass)::text as scans`.execute(trx);
        return Number(rows[0]?.scans);
      };
      const before = await scans();
      const batch = entries(BATCH);
      const ranks = await forwardBacklogRepository(trx).rank(batch, new Date(), horizon());
      await forwardBacklogRepository(trx).forget(batch);
      return { ranks, sequentialScans: (await scans()) - before };
    });

  it('keeps no entry once its forward has started', async () => {
    const batch = entries(3);
    expect(await backlog().rank(batch, new Date(), horizon())).toEqual([1, 2, 3]);
    await backlog().forget(batch);
    const left = await store.db.selectFrom('forward_backlog').select('job_id').execute();
    expect(left).toEqual([]);
  });

  // A worker starting a forward takes out its one entry by its key. Before, the batch was joined with
  // the table and planned as a walk of the clinic's whole backlog for each entry: after an outage, with
  // thousands waiting, every start read them all.
  it('starts a forward by its key, whatever the clinic has waiting', async () => {
    const waiting = entries(2000);
    for (let i = 0; i < waiting.length; i += 500) {
      await backlog().rank(waiting.slice(i, i + 500), new Date(), horizon());
    }
    const started = waiting.slice(1000, 1000 + BATCH);
    const read = await store.db.transaction().execute(async (trx) => {
      // Index entries read, summed over the table's indexes; not sent to the collector mid-transaction.
      const entriesRead = async () => {
        const { rows } = await sql<{ read: string }>`
          select coalesce(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0)::text as read
          from pg_index where indrelid = 'forward_backlog'::regclass`.execute(trx);
        return Number(rows[0]?.read);
      };
      const before = await entriesRead();
      await forwardBacklogRepository(trx).forget(started);
      return (await entriesRead()) - before;
    });
    expect(read).toBeLessThanOrEqual(started.length);
    await backlog().forget(waiting);
  });

  // With statistics gathered while the backlog was empty, the rank and the forget read the whole table
  // (sequential scans) or counted with a bitmap scan; neither marks the entries of
  // deleted rows, so every forward started within the hour was read again by each. Now both walk the
  // indexes, whatever the statistics say, and a walk marks what it passes.
  it('ranks and starts forwards without reading the whole backlog, after thousands as before', async () => {
    // One forward of the clinic still waiting, as in a burst.
    const waiting = entries(1);
    await backlog().rank(waiting, new Date(), horizon());
    const first = await rankAndStart();
    await history(HISTORY);
    const later = await rankAndStart();
    for (const { ranks } of [first, later]) {
      expect(ranks).toEqual(Array.from({ length: BATCH }, (_, i) => i + 2));
    }
    // Before, a batch made 9 sequential scans of the table on the nearly empty backlog and 64 to 108
    // once 1,000 forwards had come and gone (a scan of every deleted row for each).
    expect(later.sequentialScans).toBe(0);
    await backlog().forget(waiting);
  });
});
