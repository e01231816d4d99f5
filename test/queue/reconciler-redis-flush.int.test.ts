// Losing Redis's data is a delay, not a loss: after a FLUSHALL takes every pending forward job and
// every reminder schedule, the reconciler rebuilds them from the database and the forwards go out.
// The test flushes Redis, so it runs a redis-server of its own.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createBridgeApp,
  eventually,
  forwardingStates,
  startEhr,
  submitReferrals,
  type BridgeApp,
} from '../support/bridge.ts';
import { ENGINES } from '../support/engines.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';

const PENDING = 50;

describe.each(ENGINES)('a Redis FLUSHALL on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let redis: RedisServer;
  let t: BridgeApp | undefined;

  beforeAll(async () => {
    [ehr, redis] = await Promise.all([startEhr(), startRedisServer()]);
  });
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await ehr.reset();
  });
  afterAll(async () => {
    await Promise.all([redis.close(), ehr.stop()]);
  });

  it(`gets all ${PENDING} pending forwards delivered, and the reminder schedules back`, async () => {
    // The EHR's circuit stays closed (0 turns it off): every forward meets the EHR once before the
    // flush, rather than most waiting on the circuit without an attempt.
    const app = await createBridgeApp(engine, ehr, {
      env: { REDIS_URL: redis.url, EHR_CIRCUIT_FAILURES: '0' },
    });
    t = app;
    const forwards = app.ctx.queues.queues['ehr-forward'];
    // Every first attempt meets a 503 with an hour's Retry-After, so each job sits delayed in Redis.
    await ehr.setBehaviour({ statuses: Array<number>(PENDING).fill(503), retryAfterSeconds: 3600 });
    const background = app.startBackground();
    const ids = await submitReferrals(app, PENDING);
    // Delayed alone is not the state: a job the worker set aside for its institution's fair share
    // (FAIR_SHARE in the queue registry) waits delayed too, before its first attempt.
    await eventually(`${PENDING} forward jobs waiting out their Retry-After`, async () => {
      const counts = await forwards.getJobCounts('delayed', 'wait', 'active');
      const attempted = (await ehr.requests()).byStatus['503'] ?? 0;
      return counts.delayed === PENDING && attempted === PENDING ? counts : undefined;
    });
    expect((await ehr.requests()).byStatus).toEqual({ '503': PENDING });
    expect(await app.ctx.queues.hasReminderSchedule(ids[0] ?? '')).toBe(true);

    await redis.flushall();
    expect(await forwards.getJobCounts('delayed', 'wait', 'active', 'failed')).toEqual({
      delayed: 0,
      wait: 0,
      active: 0,
      failed: 0,
    });
    expect(await app.ctx.queues.hasReminderSchedule(ids[0] ?? '')).toBe(false);
    expect(await forwardingStates(app, ids)).toEqual({ queued: PENDING });

    // The reconciler leaves a forward alone for a quiet period after its last attempt (the worker
    // may still be on it), then re-enqueues it. It rebuilds every missing schedule at once. It runs
    // here until every forward is through, as its timer would.
    let requeued = 0;
    let rebuilt = 0;
    await eventually(
      `all ${PENDING} re-enqueued and forwarded`,
      async () => {
        const repairs = await background.reconciler.reconcileOnce();
        requeued += repairs.forwardsRequeued;
        rebuilt += repairs.schedulersRebuilt;
        const states = await forwardingStates(app, ids);
        return states.forwarded === PENDING ? states : undefined;
      },
      45_000,
    );
    // A run may find a forward still queued just as its job finishes, and add one more job; that
    // job finds nothing to send. So at least one per referral, and no second send (below).
    expect(requeued).toBeGreaterThanOrEqual(PENDING);
    expect(rebuilt).toBe(PENDING);
    for (const id of ids) expect(await app.ctx.queues.hasReminderSchedule(id)).toBe(true);

    const deliveries = await ehr.deliveries();
    expect(deliveries).toHaveLength(PENDING);
    expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(PENDING);
    expect(new Set(deliveries.map((d) => d.referralId))).toEqual(new Set(ids));
    expect((await ehr.requests()).byStatus).toEqual({ '201': PENDING, '503': PENDING });
    // Once repaired, there is nothing left to repair.
    expect(await background.reconciler.reconcileOnce()).toEqual({
      forwardsRequeued: 0,
      scansRequeued: 0,
      schedulersRebuilt: 0,
    });
  }, 120_000);
});
