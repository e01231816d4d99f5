// The outbox's cost does not grow with the work it has done, on both engines. The relay claims due rows
// many times a second while submits arrive, and the reconciler looks up every referral awaiting
// acceptance once a minute; both must read the work still to do, not every row that was ever
// dispatched. Cost is counted in the pages PostgreSQL touches (statement-cost.ts), with no VACUUM in
// between, as on a database between two runs of autovacuum (or one where it is off).
//
// A read steps over the index entries of deleted rows and marks them, so that later reads skip them;
// PostgreSQL marks an entry only once no transaction on the server can still see its row. On a server
// that other databases share, a long transaction elsewhere delays that, so a measurement after the
// history is repeated (a bounded number of times) until it has settled.
import { sql, type Transaction } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { outboxRepository, type NewOutboxMessage } from '../../src/db/outbox.repository.ts';
import { ehrSubmissionRepository } from '../../src/db/forwarding/ledger.ts';
import { reminderRepository } from '../../src/db/reminders.repository.ts';
import type { Database } from '../../src/db/schema.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { createOutboxRelay, type OutboxRelay } from '../../src/queue/outbox-relay.ts';
import { ENGINES } from '../support/engines.ts';
import { call, createDraft } from '../support/scenarios.ts';
import { costOf, type StatementCost } from '../support/statement-cost.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

/** Rows dispatched before the first measurement: an outbox whose indexes have outgrown one page. */
const WARM_UP = 1000;
/** Rows dispatched between the two measurements: a few busy minutes of submits. */
const HISTORY = 3000;

describe.each(ENGINES)('the outbox on %s, as its history grows', (engine) => {
  let t: TestApp;
  let referralIds: string[];
  let relay: OutboxRelay;

  beforeAll(async () => {
    t = await createTestApp(engine);
    // Statistics as a live database has them: gathered while the outbox was empty, as autovacuum
    // leaves them (and the benchmark does), and not again while rows come and go.
    await sql`ANALYZE`.execute(t.ctx.db);
    referralIds = [];
    // Referrals awaiting acceptance, each with its forward and its reminder schedule in the outbox.
    for (let i = 0; i < 10; i++) {
      const { id } = await createDraft(t);
      await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
      referralIds.push(id);
    }
    const dispatched = () => Promise.resolve();
    relay = createOutboxRelay({
      stores: t.ctx.stores,
      clock: systemClock,
      logger: t.ctx.logger,
      handlers: {
        'ehr-forward': dispatched,
        'ehr-forward-again': dispatched,
        reminders: dispatched,
        'attachment-scan': dispatched,
      },
    });
    await drain();
    await dispatchHistory(WARM_UP);
  });
  afterAll(async () => {
    await t.close();
  });

  const outbox = () => outboxRepository(t.ctx.db);
  const rowsFor = (n: number): NewOutboxMessage[] => {
    const at = new Date();
    return Array.from({ length: n }, (_, i) => ({
      topic: i % 2 === 0 ? ('ehr-forward' as const) : ('reminders' as const),
      referralId: referralIds[i % referralIds.length] ?? '',
      version: 2,
      requestId: `history-${i}`,
      at,
    }));
  };
  async function drain() {
    while ((await relay.drainOnce()).dispatched > 0);
  }
  /** Adds `n` rows, 100 at a time, each hundred taken by the relay as it would be during a burst. */
  async function dispatchHistory(n: number) {
    for (let i = 0; i < n; i += 100) {
      await outbox().add(rowsFor(Math.min(100, n - i)));
      await drain();
    }
  }
  /** The lowest of a few measurements: what the reads cost once nothing is left to mark. */
  async function least(measure: () => Promise<StatementCost>): Promise<StatementCost> {
    let best = await measure();
    for (let i = 0; i < 2; i++) {
      const next = await measure();
      if (next.buffers < best.buffers) best = next;
    }
    return best;
  }
  /** The cost once it is within `bound`, or the last measured when it never was (within 20 s). */
  async function settled(measure: () => Promise<StatementCost>, bound: number): Promise<StatementCost> {
    let cost = await measure();
    await vi
      .waitFor(
        async () => {
          cost = await measure();
          if (cost.buffers > bound) throw new Error(`${cost.buffers} pages`);
        },
        { timeout: 20_000, interval: 100 },
      )
      .catch(() => undefined);
    return cost;
  }
  const explain = (label: string, before: StatementCost, after: StatementCost) =>
    `${label}: ${before.buffers} pages before, ${after.buffers} after ${HISTORY} rows dispatched\n` +
    `before: ${before.plans.join('\n')}\nafter: ${after.plans.join('\n')}`;

  it('keeps no row once it is dispatched', async () => {
    await outbox().add(rowsFor(5));
    await drain();
    const left = await t.ctx.db.selectFrom('outbox').select('id').execute();
    expect(left).toEqual([]);
  });

  // The relay runs its claim many times a second, on the plan PostgreSQL keeps for it: either one.
  it.each(['custom', 'generic'] as const)(
    'claims reading as much after thousands of rows were dispatched as before (%s plan)',
    async (plan) => {
      // With nothing due, a claim reads everything it passes on the way to the end of the pending
      // rows: what a busy relay passes before each batch it takes. It is a claim made a minute later,
      // when the leases the history's claims took (30 s) have all ended.
      const claim = () => {
        const now = new Date(Date.now() + 60_000);
        return costOf(
          t.ctx.db,
          (trx) => outboxRepository(trx).claim(100, now, new Date(now.getTime() + 30_000)),
          plan,
        );
      };
      const before = await least(claim);
      await dispatchHistory(HISTORY);
      const after = await settled(claim, before.buffers + 3);
      // Before the outbox held only pending work, a claim read each version of every row ever
      // written whose lease had ended (a bitmap scan of its index of pending rows, which marks
      // nothing): 3,000 rows made it read 11 pages more, and every 3,000 more as many again.
      expect(after.buffers, explain('claim', before, after)).toBeLessThanOrEqual(before.buffers + 3);
    },
  );

  it('finds the referrals the reconciler checks reading as much after thousands were dispatched', async () => {
    const reconcilerPages = async () => {
      const lookups = async (trx: Transaction<Database>) => {
        await reminderRepository(trx).pendingAcceptance(null, 500);
        await ehrSubmissionRepository(trx).dueWithoutProgress(new Date(Date.now() + 60_000), 500);
      };
      const [custom, generic] = [await costOf(t.ctx.db, lookups), await costOf(t.ctx.db, lookups, 'generic')];
      return { buffers: custom.buffers + generic.buffers, plans: [...custom.plans, ...generic.plans] };
    };
    const before = await least(reconcilerPages);
    await dispatchHistory(HISTORY);
    const after = await settled(reconcilerPages, before.buffers + 10);
    // Each referral was looked up in the outbox by a scan of every row version ever written: 3,000
    // rows made the ten referrals' lookups read about 2,800 pages more.
    expect(after.buffers, explain('reconciler', before, after)).toBeLessThanOrEqual(before.buffers + 10);
  });
});
