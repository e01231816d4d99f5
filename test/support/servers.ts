// What the tiers need beyond Node (test/README.md): PostgreSQL and Redis for `int` and `browser`,
// Chromium for `browser`, and qpdf for the tests that upload or read PDFs. global-setup.ts stops the
// `int` and `browser` projects when a server does not answer; `npm test` (test/tiers.ts) runs only
// what this machine can run and says what it left out.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';

export const CHROMIUM = '/usr/bin/chromium';

export function testDatabaseUrl(): string {
  return process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
}

export function testRedisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** Something a tier needs that this machine does not have: its name, and why, as a reader would say it. */
export interface Missing {
  readonly name: string;
  readonly said: string;
}

const PROBE_TIMEOUT_MS = 3_000;

async function postgresMissing(): Promise<Missing | undefined> {
  const client = new pg.Client({
    connectionString: testDatabaseUrl(),
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
  });
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (error) {
    return {
      name: 'PostgreSQL',
      said: `PostgreSQL at ${testDatabaseUrl()} (TEST_DATABASE_URL), which does not answer (${(error as Error).message})`,
    };
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function redisMissing(): Promise<Missing | undefined> {
  const redis = new Redis(testRedisUrl(), {
    lazyConnect: true,
    connectTimeout: PROBE_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (error) {
    return {
      name: 'Redis',
      said: `Redis at ${testRedisUrl()} (REDIS_URL), which does not answer (${(error as Error).message})`,
    };
  } finally {
    redis.disconnect();
  }
}

/** The servers of the `int` and `browser` tiers that do not answer. */
export async function serversMissing(): Promise<Missing[]> {
  const missing = await Promise.all([postgresMissing(), redisMissing()]);
  return missing.filter((m) => m !== undefined);
}

export function chromiumMissing(): Missing | undefined {
  return fs.existsSync(CHROMIUM)
    ? undefined
    : { name: 'Chromium', said: `Chromium at ${CHROMIUM} (Debian: apt-get install chromium)` };
}

export function qpdfMissing(): Missing | undefined {
  const probe = spawnSync('qpdf', ['--version'], { stdio: 'ignore' });
  return probe.status === 0 ? undefined : { name: 'qpdf', said: 'qpdf (Debian: apt-get install qpdf)' };
}

export function promtoolMissing(): Missing | undefined {
  const probe = spawnSync('promtool', ['--version'], { stdio: 'ignore' });
  return probe.status === 0
    ? undefined
    : { name: 'promtool', said: 'promtool (Debian: apt-get install prometheus)' };
}

/** What `npm test` left out on this machine (test/tiers.ts sets it; vitest alone leaves out nothing). */
const leftOut = new Set((process.env.REFHUB_TESTS_WITHOUT ?? '').split(','));

/**
 * Whether the tests that run qpdf run: always, but where `npm test` found no qpdf and says so in its
 * last line (with CI=true it leaves nothing out, and those tests fail without qpdf).
 */
export const withQpdf = !leftOut.has('qpdf');

/**
 * Whether the tests of the Prometheus alert rules (deploy/prometheus/) run promtool: as `withQpdf`,
 * always but where `npm test` found no promtool and says so.
 */
export const withPromtool = !leftOut.has('promtool');
