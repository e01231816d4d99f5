// The queues on a primary that Redis Sentinels watch (REDIS_SENTINELS, REDIS_SENTINEL_NAME), through a
// failover in the middle of the traffic: the Sentinels name the replica the new primary, the app's
// connections move to it, and every submitted referral is forwarded exactly once, none lost. The test
// runs its own primary, replica and three Sentinels (test/support/redis-topologies.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createBridgeApp,
  eventually,
  forwardingStates,
  startEhr,
  submitReferrals,
  type BridgeApp,
} from '../support/bridge.ts';
import {
  SENTINEL_FAILOVER_TIMEOUT_MS,
  startRedisSentinels,
  type RedisSentinels,
} from '../support/redis-topologies.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';

const BEFORE = 10;
const DURING = 10;
/** The reconciler's interval here: a job the failover lost (written to the old primary only) comes back. */
const RECONCILE_EVERY_MS = 1_000;

describe('the queues through a Sentinel failover', () => {
  let ehr: SandboxEhrProcess;
  let redis: RedisSentinels;
  let t: BridgeApp | undefined;

  beforeAll(async () => {
    [ehr, redis] = await Promise.all([startEhr(), startRedisSentinels()]);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await Promise.all([redis.close(), ehr.stop()]);
  });

  it('forwards every referral exactly once across a failover', async () => {
    const app = await createBridgeApp('postgres', ehr, {
      env: { REDIS_SENTINELS: redis.sentinels, REDIS_SENTINEL_NAME: redis.name },
    });
    t = app;
    const [first, second] = redis.serverPorts;
    expect(app.ctx.queues.backend.address).toBe(
      `Redis primary ${redis.name} through the Sentinels at ${redis.sentinels}`,
    );
    expect((await app.ctx.queues.health()).detail).toBe(
      `primary 127.0.0.1:${first}, maxmemory-policy noeviction`,
    );
    const background = app.startBackground({ reconcileEveryMs: RECONCILE_EVERY_MS });
    await Promise.all(background.workers.map((worker) => worker.waitUntilReady()));
    const forwarded = (ids: readonly string[]) =>
      eventually(
        `${ids.length} forwarded`,
        async () => {
          const states = await forwardingStates(app, ids);
          return states.forwarded === ids.length ? states : undefined;
        },
        // The forward's own bound, after a reconciler pass that puts back what a failover lost.
        app.forwardWithinMs + RECONCILE_EVERY_MS + 5_000,
      );

    const before = await submitReferrals(app, BEFORE);
    await forwarded(before);

    // Submits go on while the Sentinels fail over.
    const [during, promoted] = await Promise.all([submitReferrals(app, DURING), redis.failover()]);
    expect(promoted).toBe(second);
    expect(await redis.primaryPort()).toBe(second);
    // The app's producer connection is on the new primary (it takes writes there: no problem).
    await eventually(
      'the app on the new primary',
      async () => {
        const health = await app.ctx.queues.health();
        return health.problem === undefined && health.detail?.startsWith(`primary 127.0.0.1:${second},`)
          ? health
          : undefined;
      },
      SENTINEL_FAILOVER_TIMEOUT_MS,
    );
    // And after the failover too.
    const after = await submitReferrals(app, 5);
    const ids = [...before, ...during, ...after];
    await forwarded(ids);

    const deliveries = await ehr.deliveries();
    expect(deliveries).toHaveLength(ids.length);
    expect(new Set(deliveries.map((d) => d.referralId))).toEqual(new Set(ids));
    expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(ids.length);
  }, 240_000);
});
