// The ops pages while a dependency fails. With Redis away, hung, refusing to count or free to evict,
// /admin still renders within seconds and says what is wrong; the board's JSON fails with a body that
// quotes no error message, and so does a store failure while signing in. What cannot be audited is
// not served. One engine is enough: these are failures around the store, not in its SQL.
import net from 'node:net';
import * as cheerio from 'cheerio';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { testRedisUrl } from '../../support/bridge.ts';
import { CANARY } from '../../support/fixtures/patients.ts';
import { startRedisServer, type RedisServer } from '../../support/redis-server.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import { opsGet } from '../../support/ops-client.ts';

/** A TCP server that accepts connections and never says a word: a Redis that hangs. */
async function silentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** A port nothing listens on: a Redis that is down. */
async function closedPort(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  return `redis://127.0.0.1:${port}`;
}

describe('the ops pages while a dependency fails', () => {
  let t: TestApp | undefined;
  let silent: Awaited<ReturnType<typeof silentServer>> | undefined;
  let own: RedisServer | undefined;

  afterEach(async () => {
    await t?.close();
    await silent?.close();
    await own?.close();
    t = undefined;
    silent = undefined;
    own = undefined;
  });

  /** An app on a Redis of this test's own, which the test may then reconfigure or pause. */
  const withOwnRedis = async () => {
    own = await startRedisServer();
    t = await createTestApp('pglite', { env: { REDIS_URL: own.url } });
    const admin = new Redis(own.url);
    return {
      send: async (...args: [string, ...string[]]) => {
        await admin.call(...args);
      },
      close: () => {
        admin.disconnect();
      },
    };
  };

  const overviewWithin = async (ms: number) => {
    const started = Date.now();
    const res = await opsGet(t!, '/admin');
    const elapsed = Date.now() - started;
    expect(res.statusCode, res.body).toBe(200);
    expect(elapsed).toBeLessThan(ms);
    return cheerio.load(res.body);
  };

  it('renders /admin and says Redis is unreachable when it refuses connections', async () => {
    t = await createTestApp('pglite', { env: { REDIS_URL: await closedPort() } });
    const $ = await overviewWithin(6_000);
    expect($('[data-stat="redis"] .stat__value').text()).toBe('Unreachable');
    expect($('[data-queues-problem]').text()).toContain('Redis is unreachable');
    expect($('[data-queue="ehr-forward"] [data-count="failed"]').text()).toBe('–');
    expect($('[data-stat="outbox-backlog"] .stat__value').text()).toBe('0');
  });

  it('renders /admin within seconds when Redis accepts a connection and never answers', async () => {
    silent = await silentServer();
    t = await createTestApp('pglite', { env: { REDIS_URL: silent.url } });
    const $ = await overviewWithin(6_000);
    expect($('[data-stat="redis"] .stat__value').text()).toBe('Unreachable');
  });

  it('renders /admin within seconds when Redis stops answering after the connection is up', async () => {
    const redis = await withOwnRedis();
    const healthy = await overviewWithin(6_000);
    expect(healthy('[data-stat="redis"] .stat__value').text()).toBe('Healthy');
    await redis.send('CLIENT', 'PAUSE', '8000', 'ALL');
    redis.close();
    const $ = await overviewWithin(6_000);
    expect($('[data-stat="redis"] .stat__value').text()).toBe('Unreachable');
    expect($('[data-queues-problem]').text()).toContain('Redis did not answer within 4 seconds');
  });

  it('shows the outbox and failed forwards without queue counts when Redis refuses to count jobs', async () => {
    const redis = await withOwnRedis();
    // BullMQ counts jobs with Lua scripts; INFO still answers.
    await redis.send('ACL', 'SETUSER', 'default', '-@scripting');
    redis.close();
    const $ = await overviewWithin(6_000);
    expect($('[data-stat="redis"] .stat__value').text()).toBe('Unreachable');
    expect($('[data-queues-problem]').text()).toContain('Redis could not be read (ReplyError)');
    expect($('[data-queue="reminders"] [data-count="delayed"]').text()).toBe('–');
    expect($('[data-stat="failed-forwards"] .stat__value').text()).toBe('0');
  });

  it('asks for attention when Redis may evict keys, and still counts the jobs', async () => {
    const redis = await withOwnRedis();
    await redis.send('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    redis.close();
    const $ = await overviewWithin(6_000);
    expect($('[data-stat="redis"] .stat__value').text()).toBe('Needs attention');
    expect($('[data-stat="redis"]').attr('data-tone')).toBe('attention');
    expect($('[data-queues-problem]').text()).toContain('allkeys-lru');
    expect($('[data-queue="ehr-forward"] [data-count="failed"]').text()).toBe('0');
  });

  it('answers the board’s JSON with a bare error key, and logs the error’s kind, not its message', async () => {
    t = await createTestApp('pglite', { env: { REDIS_URL: await closedPort() } });
    const res = await opsGet(t, '/admin/queues/api/queues');
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      error: { key: 'ERRORS.INTERNAL_SERVER_ERROR' },
      requestId: res.headers['x-request-id'],
    });
    const lines = t.logs.filter((l) => l.includes(res.headers['x-request-id'] as string));
    expect(lines.some((l) => l.includes('ops page request failed'))).toBe(true);
    for (const line of lines) expect(JSON.parse(line)).not.toHaveProperty('err.message');
  });

  it('answers a store failure during sign-in on the board with a bare error key, on its page and API alike', async () => {
    t = await createTestApp('pglite', { env: { REDIS_URL: testRedisUrl() } });
    // A driver error whose message quotes a stored value, as PostgreSQL's do.
    t.ctx.apiKeys.authenticate = () =>
      Promise.reject(new Error(`Key (uin)=(${CANARY.patientUin}) is broken`));
    for (const url of [
      '/admin/queues',
      '/admin/queues/static/favicon-32x32.png',
      '/admin/queues/api/queues',
    ]) {
      const res = await opsGet(t, url);
      expect(res.statusCode, url).toBe(500);
      expect(res.json(), url).toEqual({
        error: { key: 'ERRORS.INTERNAL_SERVER_ERROR' },
        requestId: res.headers['x-request-id'],
      });
    }
    // /admin itself answers through the API's error handler: problem+json, no message either.
    const overview = await opsGet(t, '/admin');
    expect(overview.statusCode).toBe(500);
    expect(overview.json()).toMatchObject({ code: 'internal_error' });
    expect(overview.body).not.toContain(CANARY.patientUin);
    expect(t.logs.join('\n')).not.toContain(CANARY.patientUin);
  });

  it('serves nothing it could not audit', async () => {
    t = await createTestApp('pglite', { env: { REDIS_URL: testRedisUrl() } });
    await sql`CREATE FUNCTION refuse_admin_audit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.action LIKE 'admin.%' THEN RAISE EXCEPTION 'the audit trail is unavailable'; END IF;
        RETURN NEW;
      END $$`.execute(t.ctx.db);
    await sql`CREATE TRIGGER refuse_admin_audit BEFORE INSERT ON audit_events
      FOR EACH ROW EXECUTE FUNCTION refuse_admin_audit()`.execute(t.ctx.db);

    const page = await opsGet(t, '/admin/queues');
    expect(page.statusCode).toBe(500);
    expect(page.body).not.toContain('<html');
    const job = await opsGet(
      t,
      '/admin/queues/api/queues/ehr-forward/01970a4e-1c2b-7d3e-8f40-123456789abc.v2',
    );
    expect(job.statusCode).toBe(500);
    const overview = await opsGet(t, '/admin');
    expect(overview.statusCode).toBe(500);
    expect(overview.json()).toMatchObject({ code: 'internal_error' });
    // The board's polling is not audited, so it goes on.
    expect((await opsGet(t, '/admin/queues/api/queues')).statusCode).toBe(200);
  });
});
