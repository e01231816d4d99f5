// /healthz says the process answers; /readyz names each dependency with its status. Redis must be
// reachable and must never evict keys (maxmemory-policy noeviction), or queued work could vanish.
// This file runs a Redis of its own, because it changes its policy and stops it.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../../support/engines.ts';
import { checkRedis } from '../../../src/queue/connections.ts';
import { startRedisServer, type RedisServer } from '../../support/redis-server.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

describe('health and readiness', () => {
  let redis: RedisServer;
  let admin: Redis;
  let t: TestApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    admin = new Redis(redis.url);
    admin.on('error', () => undefined); // it is stopped on purpose below
    t = await createTestApp('postgres', { env: { REDIS_URL: redis.url, QUEUE_PREFIX: 'health' } });
  });
  afterAll(async () => {
    admin.disconnect();
    await t.close();
    await redis.close();
  });

  const readyz = async () => {
    const res = await t.app.inject({ method: 'GET', url: '/readyz' });
    return {
      status: res.statusCode,
      body: res.json<{ status: string; checks: Record<string, string>; problems?: Record<string, string> }>(),
    };
  };
  const readinessLines = () =>
    t.logs
      .map((l) => JSON.parse(l) as { msg: string; check?: string; problem?: string })
      .filter((l) => l.check !== undefined && l.msg.startsWith('readiness'));

  it('is ready when the database is migrated and Redis answers with noeviction', async () => {
    expect(await readyz()).toEqual({
      status: 200,
      body: { status: 'ready', checks: { database: 'ok', migrations: 'ok', redis: 'ok' } },
    });
  });

  it('is not ready, naming redis, when Redis may evict keys; the body and one log line say why', async () => {
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const why = 'Redis maxmemory-policy is allkeys-lru; queues need noeviction, or Redis may drop jobs';
    try {
      const logsBefore = readinessLines().length;
      expect(await readyz()).toEqual({
        status: 503,
        body: {
          status: 'not-ready',
          checks: { database: 'ok', migrations: 'ok', redis: 'failing' },
          problems: { redis: why },
        },
      });
      await readyz();
      expect(readinessLines().slice(logsBefore)).toEqual([
        expect.objectContaining({ msg: 'readiness check failing', check: 'redis', problem: why }),
      ]);
      expect((await checkRedis(admin)).problem).toBe(
        'Redis maxmemory-policy is allkeys-lru; queues need noeviction, or Redis may drop jobs',
      );
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
    }
    expect((await readyz()).status).toBe(200);
  });

  it('is not ready when Redis refuses writes for lack of memory, and says so', async () => {
    await admin.config('SET', 'maxmemory', '1');
    try {
      const { status, body } = await readyz();
      expect(status).toBe(503);
      expect(body.checks.redis).toBe('failing');
      expect(body.problems?.redis).toBe('Redis refuses writes: it is out of memory (maxmemory)');
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    expect((await readyz()).status).toBe(200);
    expect(readinessLines().at(-1)).toMatchObject({ msg: 'readiness check ok again', check: 'redis' });
  });

  it('is not ready while Redis is down, and answers within seconds; liveness is untouched', async () => {
    await redis.stop();
    try {
      const started = Date.now();
      expect(await readyz()).toMatchObject({
        status: 503,
        body: { checks: { database: 'ok', migrations: 'ok', redis: 'failing' } },
      });
      expect(Date.now() - started).toBeLessThan(6_000);
      const live = await t.app.inject({ method: 'GET', url: '/healthz' });
      expect(live.statusCode).toBe(200);
    } finally {
      await redis.start();
    }
    await expect.poll(async () => (await readyz()).status, { timeout: 15_000, interval: 200 }).toBe(200);
  });
});

describe.each(ENGINES)('readiness while every connection of the database is in use, on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine, { env: { QUEUE_PREFIX: `health-${randomUUID()}` } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('says the database is busy, not out of reach, and stays ready; ok again once a connection is free', async () => {
    const { max } = t.ctx.store.connections();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    let allHeld!: () => void;
    const holding = new Promise<void>((resolve) => (allHeld = resolve));
    // Transactions hold every connection of the pool (PGlite's one) until released.
    const transactions = Array.from({ length: max }, () =>
      t.ctx.db.transaction().execute(async (trx) => {
        await trx.selectFrom('data_keys').select('id').execute();
        if (++held === max) allHeld();
        await released;
      }),
    );
    await holding;
    try {
      const res = await t.app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(200);
      const body = res.json<{
        status: string;
        checks: Record<string, string>;
        busy?: Record<string, string>;
      }>();
      expect(body.status).toBe('ready');
      expect(body.checks.database).toBe('busy');
      expect(body.busy?.database).toMatch(
        /^(the one connection|all \d+ connections) to the database (is|are) in use/,
      );
      expect(JSON.stringify(body)).not.toContain('cannot be reached');
    } finally {
      release();
      await Promise.all(transactions);
    }
    const again = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(again.json<{ checks: Record<string, string> }>().checks.database).toBe('ok');
    expect(t.logs.some((line) => line.includes('readiness check busy'))).toBe(true);
  });
});
