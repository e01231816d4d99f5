// Builds the real application on a test store with the demo catalog, and API keys for every party a
// test needs: two senders, two providers and ops. Logs are captured so tests can inspect them.
import type { DataKeysOptions } from '../../src/db/data-keys/data-keys.repository.ts';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../src/config.ts';
import { createContext, type AppContext } from '../../src/composition/context.ts';
import { createApiApp } from '../../src/composition/api-app.ts';
import type { Engine } from '../../src/db/database.ts';
import type { Clock } from '../../src/domain/clock.ts';
import { createLogger } from '../../src/logger.ts';
import { DEMO_CATALOG_FILE } from '../../src/composition/demo-setup.ts';
import { openTestStore, type TestStoreOptions } from './engines.ts';

export interface TestParty {
  readonly key: string;
  readonly institution: { readonly institutionIdType: 'hci'; readonly institutionId: string };
}

export interface TestApp {
  readonly app: FastifyInstance;
  readonly ctx: AppContext;
  readonly engine: Engine;
  /** Bukit Timah Family Clinic (HAS) */
  readonly sender: TestParty;
  /** Tampines Medical Centre (Epic): another sender institution */
  readonly otherSender: TestParty;
  /** Central General Hospital (Epic): provider of the cgh-* offerings */
  readonly provider: TestParty;
  /** Eastside Regional Hospital (PartnersBuddy): provider of the erh-* offerings */
  readonly otherProvider: TestParty;
  readonly ops: TestParty;
  readonly logs: string[];
  request(party: TestParty | null, options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  readonly env?: Record<string, string>;
  readonly clock?: Clock;
  readonly store?: TestStoreOptions;
  readonly dataKeys?: DataKeysOptions;
}

export async function createTestApp(engine: Engine, options: TestAppOptions = {}): Promise<TestApp> {
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'debug',
    PUBLIC_URL: 'http://refhub.test',
    // The queues in Redis, as the tests of the queue layer's other users expect; the PostgreSQL
    // backend has tests of its own (test/support/queue-contract.ts).
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    // A rate limit no test reaches, unless the test is about the limit (it sets its own).
    ...(Object.keys(options.env ?? {}).some((name) => name.startsWith('RATE_LIMIT_'))
      ? {}
      : { RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '1000000' }),
    ...options.env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const store = await openTestStore(engine, options.store);
  const ctx = await createContext(config, 'test', {
    store,
    logger: createLogger(config, sink),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.dataKeys ? { dataKeys: options.dataKeys } : {}),
  });
  await ctx.catalog.loadFile(DEMO_CATALOG_FILE);
  const party = async (
    system: string,
    role: 'sender' | 'provider' | 'ops',
    institutionId: string,
  ): Promise<TestParty> => {
    const { key } = await ctx.apiKeys.create({
      system,
      role,
      institutions: role === 'ops' ? [] : [{ idType: 'hci', id: institutionId }],
      environment: 'test',
    });
    return { key, institution: { institutionIdType: 'hci', institutionId } };
  };
  const app = await createApiApp(ctx);
  await app.ready();
  const parties = {
    sender: await party('HAS', 'sender', 'S1234A'),
    otherSender: await party('Epic', 'sender', 'S2345B'),
    provider: await party('Epic', 'provider', 'S9001Z'),
    otherProvider: await party('PartnersBuddy', 'provider', 'S9002Y'),
    ops: await party('HAS', 'ops', 'S1234A'),
  };
  return {
    app,
    ctx,
    engine,
    ...parties,
    logs,
    request: (who, opts) =>
      app.inject({
        ...opts,
        headers: { ...(who ? { authorization: `ApiKey ${who.key}` } : {}), ...opts.headers },
      }),
    close: async () => {
      await app.close();
      await ctx.close();
    },
  };
}

/** Starts the app listening on a free loopback port, as a client reaches it; returns its base URL. */
export async function listeningUrl(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('refhub is not listening on a port');
  return `http://127.0.0.1:${address.port}`;
}
