// Postgres is the truth and Redis only a work queue: while Redis is down, submits still succeed and
// their work waits in the outbox; once it is back, the relay hands it over and everything is
// forwarded. The test stops Redis, so it runs a redis-server of its own.
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
import { CANARY, CANARY_MARKERS } from '../support/fixtures/patients.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';

const SUBMITS = 50;

describe.each(ENGINES)('a Redis outage on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let redis: RedisServer;
  let t: BridgeApp | undefined;

  beforeAll(async () => {
    [ehr, redis] = await Promise.all([startEhr(), startRedisServer()]);
  });
  afterEach(async () => {
    if (!redis.running) await redis.start();
    await t?.close();
    t = undefined;
    await ehr.reset();
  });
  afterAll(async () => {
    await Promise.all([redis.close(), ehr.stop()]);
  });

  it(`accepts ${SUBMITS} submits while Redis is down, and forwards them all once it is back`, async () => {
    const app = await createBridgeApp(engine, ehr, { env: { REDIS_URL: redis.url } });
    t = app;
    const background = app.startBackground();
    await Promise.all(background.workers.map((worker) => worker.waitUntilReady()));

    await redis.stop();
    const ids = await submitReferrals(app, SUBMITS, { fields: (i) => (i === 0 ? CANARY : {}) });

    // The work waits in the outbox. The relay has tried each row and recorded why it could not
    // dispatch it: a code, never a message (which could quote a value).
    const waiting = await eventually('the relay to try every outbox row', async () => {
      const rows = await app.ctx.db
        .selectFrom('outbox')
        .select(['topic', 'processed_at', 'last_error', 'attempts'])
        .where('referral_id', 'in', ids)
        .execute();
      return rows.every((row) => row.last_error !== null) ? rows : undefined;
    });
    // Per submit: the forward, and the provider's reminder schedule.
    expect(waiting).toHaveLength(SUBMITS * 2);
    for (const row of waiting) {
      expect(row.processed_at).toBeNull();
      expect(row.attempts).toBeGreaterThanOrEqual(1);
      expect(row.last_error).toMatch(/^[A-Za-z0-9_.-]{1,64}$/);
    }
    expect(await forwardingStates(app, ids)).toEqual({ queued: SUBMITS });
    expect((await ehr.requests()).total).toBe(0);

    await redis.start();
    await eventually(
      `all ${SUBMITS} forwarded`,
      async () => {
        const states = await forwardingStates(app, ids);
        return states.forwarded === SUBMITS ? states : undefined;
      },
      60_000,
    );
    const deliveries = await ehr.deliveries();
    expect(deliveries).toHaveLength(SUBMITS);
    expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(SUBMITS);
    expect(new Set(deliveries.map((d) => d.referralId))).toEqual(new Set(ids));
    await eventually('the outbox to drain', async () => {
      const left = await app.ctx.db
        .selectFrom('outbox')
        .select('id')
        .where('processed_at', 'is', null)
        .execute();
      return left.length === 0 ? left : undefined;
    });
    // Every pending referral has its reminder schedule again.
    for (const id of ids.slice(0, 5)) expect(await app.ctx.queues.hasReminderSchedule(id)).toBe(true);

    const dump = await app.redisDump();
    expect(dump).toContain(ids[0]);
    for (const marker of CANARY_MARKERS) {
      expect(dump).not.toContain(marker);
      expect(app.logs.join('\n')).not.toContain(marker);
    }
  }, 120_000);
});
