// Sets up everything one benchmark run needs, on this machine and nothing else, and takes it down
// again: a fresh database (a new PostgreSQL database made from BENCH_DATABASE_URL, or a PGlite data
// directory), seeded; a fresh queue prefix on the local Redis; the sandbox EHR, `refhub all` and the
// bare baseline server as child processes. Tearing down drops the database, removes the directory and
// deletes the run's Redis keys, so runs leave nothing behind and never see each other's data.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { migrateToLatest, openStore, type Engine, type Store } from '../src/db/database.ts';
import type { Database } from '../src/db/schema.ts';
import { createBareSchema, seedBareDrafts } from './bare-pipeline.ts';
import {
  sampleRss,
  startBarePipeline,
  startBaselineServer,
  startRefhub,
  startSandboxEhr,
  type Service,
} from './processes.ts';
import { seedCatalogAndKeys, seedDrafts, sendBack, type BenchParties } from './seed.ts';

export interface BenchOptions {
  readonly engine: Engine;
  /** The PostgreSQL server to make the run's database on (its own database is not touched). */
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** How many drafts the write and forward scenarios will consume. */
  readonly writeDrafts: number;
  readonly forwardDrafts: number;
  /** Drafts for the bare forwarding pipeline (PostgreSQL only; 0: no bare pipeline). */
  readonly bareDrafts: number;
  /** Extra Node options for the refhub process (for example heap limits, or --cpu-prof). */
  readonly refhubNodeOptions: readonly string[];
  readonly log: (message: string) => void;
}

/** Hands out seeded drafts, each once. */
export interface DraftPool {
  take(): string | undefined;
  remaining(): number;
}

export interface BenchEnv {
  readonly engine: Engine;
  readonly refhub: Service;
  readonly baseline: Service;
  readonly sandbox: Service;
  readonly parties: BenchParties;
  /** The 10,000 referrals of the reader's institution: what get and list read. */
  readonly readerIds: readonly string[];
  readonly writePool: DraftPool;
  readonly forwardPool: DraftPool;
  readonly redisUrl: string;
  /** The run's queue prefix, bare (refhub wraps it in braces). */
  readonly queuePrefix: string;
  /** A connection of the benchmark's own to the run's database (PostgreSQL only: PGlite is refhub's). */
  readonly db: Kysely<Database> | undefined;
  /** The bare forwarding pipeline, the forward scenario's baseline (PostgreSQL only). */
  readonly bare: BarePipeline | undefined;
  /** Makes another database of the run on the same server, dropped at tear-down (PostgreSQL only). */
  extraDatabase(suffix: string): Promise<string>;
  /** The highest RSS `refhub all` reached since it started, in MiB, sampled every 250 ms. */
  peakRssMiB(): number;
  /** The run's scratch directory, removed at tear-down. */
  readonly dataDir: string;
  /** Node options the refhub process runs with after those of `npm start` (none: `npm start`'s alone). */
  readonly refhubNodeOptions: readonly string[];
  readonly log: (message: string) => void;
  tearDown(): Promise<void>;
}

export interface BarePipeline {
  readonly service: Service;
  readonly pool: DraftPool;
  /** A connection of the benchmark's own to the bare pipeline's database. */
  readonly client: pg.Client;
}

/** The size of the institution that get and list read (10,000, as a large clinic's). */
export const READER_REFERRALS = 10_000;

function pool(ids: readonly string[]): DraftPool {
  let next = 0;
  return {
    take: () => ids[next++],
    remaining: () => Math.max(0, ids.length - next),
  };
}

/** `url` with its database replaced by `name`. */
export function databaseUrlOf(url: string, name: string): string {
  const next = new URL(url);
  next.pathname = `/${name}`;
  return next.toString();
}

export async function withAdmin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function seed(store: Store, options: BenchOptions) {
  const parties = await seedCatalogAndKeys(store.db);
  const readerIds = await seedDrafts(store.db, { party: parties.reader, count: READER_REFERRALS });
  // A tenth sent back to the reader, for the worklist page of the list scenario (needs-action).
  await sendBack(store.db, readerIds, 10);
  const writeIds = await seedDrafts(store.db, {
    party: parties.writer,
    count: options.writeDrafts,
    offset: READER_REFERRALS,
  });
  const forwardIds = await seedDrafts(store.db, {
    party: parties.writer,
    count: options.forwardDrafts,
    offset: READER_REFERRALS + options.writeDrafts,
  });
  // The steady state of a live database: statistics gathered and the visibility map set, as
  // autovacuum leaves them, so that neither refhub nor the baseline runs on a cold, unanalysed table.
  await sql`vacuum analyze`.execute(store.db);
  return { parties, readerIds, writeIds, forwardIds };
}

/** A database of refhub's own beside the run's, for scenarios that run refhub processes of their own. */
export interface RefhubDatabase {
  readonly url: string;
  readonly db: Kysely<Database>;
  readonly parties: BenchParties;
  readonly pool: DraftPool;
  close(): Promise<void>;
}

/**
 * Makes, migrates and seeds another database of the run (the catalog, the keys and `drafts` drafts of
 * the writer's clinic); it is dropped at tear-down with the others.
 */
export async function refhubDatabase(env: BenchEnv, suffix: string, drafts: number): Promise<RefhubDatabase> {
  const url = await env.extraDatabase(suffix);
  const store = await openStore({ engine: 'postgres', url, poolSize: 2 });
  await migrateToLatest(store.db);
  const parties = await seedCatalogAndKeys(store.db);
  const ids = await seedDrafts(store.db, { party: parties.writer, count: drafts });
  await sql`vacuum analyze`.execute(store.db);
  return { url, db: store.db, parties, pool: pool(ids), close: () => store.close() };
}

/** Deletes every key of the run's queue prefixes (`{prefix}…`, `{prefix-baseline}…`). */
export async function deleteQueueKeys(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  let deleted = 0;
  try {
    for await (const keys of redis.scanStream({ match: `{${prefix}*`, count: 1000 })) {
      const batch = keys as string[];
      if (batch.length > 0) deleted += await redis.unlink(...batch);
    }
  } finally {
    redis.disconnect();
  }
  return deleted;
}

export async function setUp(options: BenchOptions): Promise<BenchEnv> {
  const id = randomBytes(4).toString('hex');
  const queuePrefix = `bench-${id}`;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `refhub-bench-${id}-`));
  const started: Service[] = [];
  const undo: (() => Promise<unknown>)[] = [() => fs.rm(dir, { recursive: true, force: true })];
  let db: Kysely<Database> | undefined;
  let bareClient: pg.Client | undefined;
  let rss: { stop(): number; peak(): number } | undefined;
  const tearDown = async () => {
    rss?.stop();
    for (const service of started.reverse()) await service.stop().catch(() => undefined);
    await db?.destroy();
    await bareClient?.end().catch(() => undefined);
    await deleteQueueKeys(options.redisUrl, queuePrefix).catch(() => undefined);
    for (const step of undo.reverse()) await step().catch(() => undefined);
  };

  try {
    options.log(`seeding ${options.engine === 'postgres' ? 'a PostgreSQL database' : 'PGlite'}…`);
    const seeded = Date.now();
    let refhubDatabaseUrl: string | undefined;
    let baselineTarget: { databaseUrl: string } | { pgliteDir: string };
    let data: Awaited<ReturnType<typeof seed>>;
    const refhubDataDir = path.join(dir, 'refhub');
    if (options.engine === 'postgres') {
      const name = `refhub_bench_${id}`;
      await withAdmin(options.databaseUrl, (c) => c.query(`CREATE DATABASE ${name}`));
      undo.push(() =>
        withAdmin(options.databaseUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
      );
      refhubDatabaseUrl = databaseUrlOf(options.databaseUrl, name);
      const store = await openStore({ engine: 'postgres', url: refhubDatabaseUrl, poolSize: 2 });
      await migrateToLatest(store.db);
      data = await seed(store, options);
      db = store.db;
      baselineTarget = { databaseUrl: refhubDatabaseUrl };
    } else {
      // Seeded while closed, then copied: PGlite serves one process, so the baseline gets a twin.
      const store = await openStore({ engine: 'pglite', dataDir: refhubDataDir, command: 'npm run bench' });
      try {
        await migrateToLatest(store.db);
        data = await seed(store, options);
      } finally {
        await store.close();
      }
      const twin = path.join(dir, 'baseline', 'pgdata');
      await fs.cp(path.join(refhubDataDir, 'pgdata'), twin, { recursive: true });
      baselineTarget = { pgliteDir: twin };
    }
    options.log(
      `seeded ${READER_REFERRALS + options.writeDrafts + options.forwardDrafts} drafts in ${((Date.now() - seeded) / 1000).toFixed(1)} s`,
    );

    const sandbox = await startSandboxEhr();
    started.push(sandbox);
    const refhubSettings = {
      databaseUrl: refhubDatabaseUrl,
      dataDir: refhubDataDir,
      redisUrl: options.redisUrl,
      queuePrefix,
      ehrUrl: sandbox.address,
      nodeOptions: options.refhubNodeOptions,
    };
    // Every start of an installation after its first finds its sources in the compile cache
    // (bin/refhub.js), which a serving process writes once it listens: one start and stop first makes
    // the measured process such a start, on a fresh checkout too.
    await (await startRefhub(refhubSettings)).stop();
    const refhub = await startRefhub(refhubSettings);
    started.push(refhub);
    rss = sampleRss(refhub);
    const baseline = await startBaselineServer(baselineTarget);
    started.push(baseline);
    const extraDatabase = async (suffix: string) => {
      if (options.engine !== 'postgres') throw new Error('extra databases are made on PostgreSQL only');
      const name = `refhub_bench_${id}_${suffix}`;
      await withAdmin(options.databaseUrl, (c) => c.query(`CREATE DATABASE ${name}`));
      undo.push(() =>
        withAdmin(options.databaseUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
      );
      return databaseUrlOf(options.databaseUrl, name);
    };
    let bare: BarePipeline | undefined;
    if (options.engine === 'postgres' && options.bareDrafts > 0) {
      const url = await extraDatabase('bare');
      bareClient = new pg.Client({ connectionString: url });
      await bareClient.connect();
      await createBareSchema(bareClient);
      const ids = await seedBareDrafts(bareClient, options.bareDrafts);
      await bareClient.query('VACUUM ANALYZE');
      const service = await startBarePipeline({
        databaseUrl: url,
        redisUrl: options.redisUrl,
        queuePrefix: `{${queuePrefix}-bare}`,
        ehrUrl: sandbox.address,
      });
      started.push(service);
      bare = { service, pool: pool(ids), client: bareClient };
    }
    const sampler = rss;
    return {
      engine: options.engine,
      refhub,
      baseline,
      sandbox,
      parties: data.parties,
      readerIds: data.readerIds,
      writePool: pool(data.writeIds),
      forwardPool: pool(data.forwardIds),
      redisUrl: options.redisUrl,
      queuePrefix,
      db,
      bare,
      extraDatabase,
      dataDir: dir,
      peakRssMiB: () => sampler.peak(),
      refhubNodeOptions: options.refhubNodeOptions,
      log: options.log,
      tearDown,
    };
  } catch (error) {
    await tearDown();
    throw error;
  }
}
