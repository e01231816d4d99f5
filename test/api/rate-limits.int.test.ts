// Rate limits per client, shared by the API processes of one installation: two apps, each with its
// own context, store connection and (on Redis) connection, count one client's requests against one
// budget — on one Redis prefix, and in one PostgreSQL database. Every answer to the client says its
// limit (RateLimit-Policy, RateLimit), a refusal is 429 problem+json with Retry-After, the operator's
// raise (`refhub keys limit`, `refhub clients limit`) takes effect and is audited, and a Redis outage
// leaves the API answering, each process then holding the client to its limit on its own. The clock
// is the test's: no assertion depends on how fast anything runs.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createApiApp } from '../../src/composition/api-app.ts';
import { createContext, type AppContext } from '../../src/composition/context.ts';
import { DEMO_CATALOG_FILE } from '../../src/composition/demo-setup.ts';
import { openStore, type Store } from '../../src/db/database.ts';
import { createLogger } from '../../src/logger.ts';
import { limitClient, limitKey } from '../../src/cli/rate-limit.command.ts';
import { accessToken, type TestClient } from '../support/access-tokens.ts';
import { eventually } from '../support/bridge.ts';
import { openPostgresStoreWithUrl } from '../support/engines.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import type { TestApp } from '../support/test-app.ts';
import { exportJWK, generateKeyPair } from 'jose';

const LIST = '/api/v1/institutions/hci/S1234A/referrals';

/** The test's clock, shared by both apps: it moves only when the test moves it. */
function manualClock(startMs: number) {
  let nowMs = startMs;
  return {
    now: () => new Date(nowMs),
    advance(ms: number) {
      nowMs += ms;
    },
    /** To the real time, for what is signed on it (an assertion's iat). */
    catchUp() {
      nowMs = Math.max(nowMs, Date.now());
    },
    /** Back by `ms`: a clock set right after running ahead, or another process's clock behind. */
    back(ms: number) {
      nowMs -= ms;
    },
  };
}

interface Installation {
  readonly apps: readonly [FastifyInstance, FastifyInstance];
  readonly contexts: readonly [AppContext, AppContext];
  readonly clock: ReturnType<typeof manualClock>;
  readonly logs: string[];
  close(): Promise<void>;
}

/** Two API apps of one installation: one database, and `env`'s queue backend. */
async function twoApps(env: Record<string, string>, count: 1 | 2 = 2): Promise<Installation> {
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    PUBLIC_URL: 'http://refhub.test',
    RATE_LIMIT_PER_SECOND: '1',
    RATE_LIMIT_BURST: '5',
    ...env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const clock = manualClock(Date.now());
  const { store, url } = await openPostgresStoreWithUrl();
  const second: Store = await openStore({ engine: 'postgres', url, poolSize: 2 });
  const contexts: AppContext[] = [];
  for (const s of count === 2 ? [store, second] : [store]) {
    contexts.push(
      await createContext(config, 'test', { store: s, clock, logger: createLogger(config, sink) }),
    );
  }
  const [first] = contexts;
  if (first === undefined) throw new Error('no context');
  await first.catalog.loadFile(DEMO_CATALOG_FILE);
  const apps = await Promise.all(contexts.map((ctx) => createApiApp(ctx)));
  for (const app of apps) await app.ready();
  return {
    apps: [apps[0]!, apps[apps.length - 1]!],
    contexts: [contexts[0]!, contexts[contexts.length - 1]!],
    clock,
    logs,
    close: async () => {
      for (const app of apps) await app.close();
      // The first context's store drops the database: it goes last.
      for (const ctx of contexts.reverse()) await ctx.close();
      if (count === 1) await second.close();
    },
  };
}

async function senderKey(ctx: AppContext): Promise<{ id: string; key: string }> {
  const { key, record } = await ctx.apiKeys.create({
    system: 'HAS',
    role: 'sender',
    institutions: [{ idType: 'hci', id: 'S1234A' }],
    environment: 'test',
  });
  return { id: record.id, key };
}

const list = (app: FastifyInstance, authorization: string) =>
  app.inject({ method: 'GET', url: LIST, headers: { authorization } });

function expectRefused(res: LightMyRequestResponse, retryAfter: number) {
  expect(res.statusCode, res.body).toBe(429);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json()).toMatchObject({ status: 429, code: 'rate_limited' });
  expect(res.headers['retry-after']).toBe(String(retryAfter));
  expect(res.headers.ratelimit).toBe(`"default";r=0;t=${retryAfter}`);
}

describe.each([
  [
    'one Redis prefix',
    () => ({
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: `rl-${randomUUID()}`,
    }),
  ],
  ['one PostgreSQL database', () => ({ QUEUE_BACKEND: 'postgres' })],
] as const)('rate limits shared on %s', (_name, env) => {
  let i: Installation;
  let key: { id: string; key: string };
  beforeAll(async () => {
    i = await twoApps(env());
    key = await senderKey(i.contexts[0]);
  });
  afterAll(async () => {
    await i.close();
  });

  // First: its assertions are signed on the real clock, which the other tests move the apps' away from.
  it('a client of signed credentials is limited as one, whichever of its tokens it presents', async () => {
    i.clock.catchUp();
    const ctx = i.contexts[0];
    const kid = `key-${randomUUID()}`;
    const { privateKey, publicKey } = await generateKeyPair('ES384', { extractable: true });
    const { id } = await ctx.clientCredentials.register({
      system: 'HAS',
      role: 'sender',
      institution: { idType: 'hci', id: 'S1234A' },
      keys: {
        kind: 'inline',
        jwks: { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'ES384', use: 'sig' }] },
      },
    });
    const client: TestClient = { id, kid, privateKey };
    const asApp = (n: 0 | 1) => ({ ctx: i.contexts[n], app: i.apps[n] }) as unknown as TestApp;
    const tokens = [await accessToken(asApp(0), client), await accessToken(asApp(1), client)];
    for (let n = 1; n <= 5; n++) {
      const res = await list(i.apps[(n % 2) as 0 | 1], `Bearer ${tokens[n % 2]}`);
      expect(res.statusCode, res.body).toBe(200);
    }
    expectRefused(await list(i.apps[0], `Bearer ${tokens[0]}`), 1);

    await limitClient({ ...ctx, out: () => undefined }, id, { perSecond: 10, burst: 50 });
    // A token's client is read with the token on every request: the raise applies at once, to the
    // debt the client has run up (4 seconds of the old rate, 40 requests of the new one: 10 are left).
    i.clock.advance(1_000);
    const raised = await list(i.apps[1], `Bearer ${tokens[1]}`);
    expect(raised.statusCode, raised.body).toBe(200);
    expect(raised.headers['ratelimit-policy']).toBe('"default";q=50;w=5');
    expect(raised.headers.ratelimit).toBe('"default";r=9;t=5');
  });

  it("two apps count one client's requests against one budget, and say so on every answer", async () => {
    const auth = `ApiKey ${key.key}`;
    for (let n = 1; n <= 5; n++) {
      const res = await list(i.apps[(n % 2) as 0 | 1], auth);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"default";q=5;w=5');
      // 1 a second: after n requests at one instant, the whole burst is back n seconds later.
      expect(res.headers.ratelimit).toBe(`"default";r=${5 - n};t=${n}`);
    }
    for (const app of i.apps) {
      const refused = await list(app, auth);
      expectRefused(refused, 1);
      expect(refused.headers['ratelimit-policy']).toBe('"default";q=5;w=5');
    }
    // A second later one more request is earned, on whichever app it reaches.
    i.clock.advance(1_000);
    expect((await list(i.apps[1], auth)).statusCode).toBe(200);
    expectRefused(await list(i.apps[0], auth), 1);
  });

  it('a request refused for its limit changes nothing', async () => {
    const auth = `ApiKey ${key.key}`;
    const write = await i.apps[0].inject({
      method: 'POST',
      url: '/api/v1/referrals',
      headers: { authorization: auth },
      payload: { institutionIdType: 'hci', institutionId: 'S1234A', offeringId: 'cgh-gastro' },
    });
    expectRefused(write, 1);
    const rows = await i.contexts[0].db.selectFrom('referrals').select('id').execute();
    expect(rows).toEqual([]);
  });

  it("the operator's raise takes effect in both apps, and is audited", async () => {
    const printed: string[] = [];
    const deps = { ...i.contexts[1], out: (line: string) => void printed.push(line) };
    await limitKey(deps, key.id, { perSecond: 2, burst: 20 });
    expect(printed.join('')).toContain('is limited to 2 requests a second, with up to 20 at once');
    // Past the apps' reuse of a key lookup (KEY_LOOKUP_REUSE_MS), and past the old burst's debt.
    i.clock.advance(60_000);
    const auth = `ApiKey ${key.key}`;
    for (let n = 1; n <= 20; n++) {
      const res = await list(i.apps[(n % 2) as 0 | 1], auth);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"default";q=20;w=10');
    }
    expectRefused(await list(i.apps[0], auth), 1);
    const audit = await i.contexts[0].db
      .selectFrom('audit_events')
      .select(['action', 'system'])
      .where('api_key_id', '=', key.id)
      .where('action', 'like', 'rate-limit.%')
      .execute();
    expect(audit).toEqual([{ action: 'rate-limit.set', system: 'refhub' }]);

    await limitKey(deps, key.id, { default: true });
    expect(printed.join('')).toContain("has the installation's default limit again: 1 requests a second");
    i.clock.advance(60_000);
    expect((await list(i.apps[1], auth)).headers['ratelimit-policy']).toBe('"default";q=5;w=5');
  });

  // A bucket's TAT is never more than a burst ahead of the clock that moved it. One further ahead was
  // written by a clock ahead of this one (this one before it was set back, or another process's): the
  // bucket is read as full, not as refusing the client for as long as the clock was set back.
  it('a clock set back costs the client nothing but the time it was set back by', async () => {
    const auth = `ApiKey ${key.key}`;
    const ninetyDays = 90 * 86_400_000;
    i.clock.advance(ninetyDays);
    for (let n = 1; n <= 6; n++) await list(i.apps[(n % 2) as 0 | 1], auth);
    expectRefused(await list(i.apps[0], auth), 1);
    i.clock.back(ninetyDays);
    for (let n = 1; n <= 5; n++) {
      const res = await list(i.apps[(n % 2) as 0 | 1], auth);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers.ratelimit).toBe(`"default";r=${5 - n};t=${n}`);
    }
    expectRefused(await list(i.apps[1], auth), 1);
  });

  it('what is not an API request of a client is not counted and says no limit', async () => {
    for (const url of ['/healthz', '/readyz']) {
      const res = await i.apps[0].inject({ method: 'GET', url });
      expect(res.headers['ratelimit-policy'], url).toBeUndefined();
    }
    const unknown = await list(i.apps[0], `ApiKey rfh_test_${'x'.repeat(43)}`);
    expect(unknown.statusCode).toBe(401);
    expect(unknown.headers.ratelimit).toBeUndefined();
  });
});

describe('rate limits while Redis is down', () => {
  let redis: RedisServer;
  let i: Installation;
  let auth: string;
  beforeAll(async () => {
    redis = await startRedisServer();
    i = await twoApps({ REDIS_URL: redis.url }, 1);
    auth = `ApiKey ${(await senderKey(i.contexts[0])).key}`;
  });
  afterAll(async () => {
    await i.close();
    await redis.close();
  });

  it('the API keeps answering, and this process holds the client to its limit alone', async () => {
    const [app] = i.apps;
    expect((await list(app, auth)).headers.ratelimit).toBe('"default";r=4;t=1');
    await redis.stop();
    // Fails open to this process's own bucket, which starts full: the limit still holds.
    for (let n = 1; n <= 5; n++) {
      const res = await list(app, auth);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers.ratelimit).toBe(`"default";r=${5 - n};t=${n}`);
    }
    expectRefused(await list(app, auth), 1);
    expect(i.logs.join('')).toContain("the rate limits' shared store (redis) does not answer");
    const metrics = await i.contexts[0].metrics.registry.metrics();
    expect(metrics).toMatch(/^refhub_rate_limit_fallbacks_total [1-9]/m);
    expect(metrics).toMatch(/^refhub_rate_limit_rejections_total\{kind="api-key"\} [1-9]/m);

    // Redis is back (empty): the shared bucket counts again, from full.
    await redis.start();
    i.clock.advance(10_000);
    await eventually('the shared store again', async () => {
      await list(app, auth);
      return i.logs.join('').includes("the rate limits' shared store (redis) answers again")
        ? true
        : undefined;
    });
  });
});
