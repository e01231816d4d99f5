// Installations side by side on one machine, as `refhub` is really run: two DATA_DIRs (`npm start` in
// two folders) against one Redis, and a PostgreSQL installation started with the PGlite one's
// DATA_DIR. They must never take each other's jobs or keys. And the commands that open Redis end
// their run without a word on stderr, nor a log line on stdout.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { testDatabaseUrl } from '../../support/engines.ts';
import { childEnv } from '../../support/child-env.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { dataKeysSetting, testKeyEncryptionKey } from '../../support/data-keys.ts';
import { freePort } from '../../support/free-port.ts';
import { describeRun, runRefhub, type CliResult } from '../../support/refhub-cli.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const BIN = path.join(ROOT, 'bin', 'refhub.js');
const ANY_KEY = /rfh_test_[0-9A-Za-z]{43}/g;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** Every queue prefix this file uses starts so, to be removed at the end. */
const RUN = `installations-${randomUUID()}`;

const children = new Set<ChildProcess>();
const tempDirs: string[] = [];

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-installations-'));
  tempDirs.push(dir);
  return dir;
}

function spawnRefhub(args: readonly string[], env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: childEnv({ NODE_ENV: 'development', LOG_LEVEL: 'warn', REDIS_URL: testRedisUrl(), ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** A command run once, on this file's Redis. */
const run = (args: readonly string[], env: Record<string, string>) =>
  runRefhub(args, { REDIS_URL: testRedisUrl(), ...env });

interface Server {
  output(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `refhub all`; resolves once it serves, or with its result when it exits first. */
function startServer(env: Record<string, string>): Promise<Server | CliResult> {
  return new Promise((resolve) => {
    const child = spawnRefhub(['all'], { HOST: '127.0.0.1', ...env });
    let stdout = '';
    let stderr = '';
    let serving = false;
    const exited = new Promise<number | null>((done) => child.once('exit', done));
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (!serving && /is serving/.test(stdout)) {
        serving = true;
        resolve({
          output: () => stdout + stderr,
          stop: async () => {
            child.kill('SIGTERM');
            return exited;
          },
        });
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (code) => {
      if (!serving) resolve({ code, stdout, stderr });
    });
  });
}

async function admin(query: string): Promise<void> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    await client.query(query);
  } finally {
    await client.end();
  }
}

const pgDatabase = `refhub_installations_${randomUUID().replaceAll('-', '')}`;
let pgUrl = '';
/**
 * The key ring of the PostgreSQL installation, given to each of its processes, as every process of an
 * installation needs the same one: they run each in a DATA_DIR of its own, where each would otherwise
 * make a key file of its own and fail to open the data keys another one wrapped.
 */
const PG_DATA_KEYS = dataKeysSetting(testKeyEncryptionKey('installations'));

beforeAll(async () => {
  await admin(`CREATE DATABASE ${pgDatabase}`);
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${pgDatabase}`;
  pgUrl = url.toString();
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  const redis = new Redis(testRedisUrl());
  const keys = await redis.keys(`{${RUN}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
  await admin(`DROP DATABASE IF EXISTS ${pgDatabase} WITH (FORCE)`);
});

describe('installations side by side', () => {
  it.concurrent(
    'two DATA_DIRs on one queue prefix: the second refuses to start, naming both installations',
    { timeout: 600_000 },
    async ({ expect }) => {
      const prefix = `${RUN}-shared`;
      const first = await startServer({
        DATA_DIR: tempDir(),
        PORT: String(await freePort()),
        QUEUE_PREFIX: prefix,
      });
      if (!('stop' in first)) throw new Error(describeRun(['all'], first));
      try {
        const secondDir = tempDir();
        const second = await startServer({
          DATA_DIR: secondDir,
          PORT: String(await freePort()),
          QUEUE_PREFIX: prefix,
        });
        if ('stop' in second) {
          await second.stop();
          throw new Error(`the second installation served on the first one's queues:\n${second.output()}`);
        }
        expect(second.code, describeRun(['all'], second)).toBe(1);
        expect(second.stdout).not.toMatch(/is serving/);
        // One line, naming the prefix, both installations and what to do.
        expect(second.stderr).toMatch(
          new RegExp(
            `^refhub: the queue prefix \\{${prefix}\\} in Redis belongs to installation ${UUID}, and this ` +
              `database is installation ${UUID}; .*QUEUE_PREFIX=${prefix}-[0-9a-f]{8}.*\\n$`,
          ),
        );
        const [, holder, mine] =
          new RegExp(`belongs to installation (${UUID}), and this database is installation (${UUID})`).exec(
            second.stderr,
          ) ?? [];
        expect(holder).not.toBe(mine);

        // Its operator's commands that use the queues refuse too, with the same line.
        const reconcile = await run(['reconcile'], { DATA_DIR: secondDir, QUEUE_PREFIX: prefix });
        expect(reconcile.code, describeRun(['reconcile'], reconcile)).toBe(1);
        expect(reconcile.stderr).toContain(`belongs to installation ${holder}`);
        expect(reconcile.stderr).not.toMatch(/\n\s+at /);
      } finally {
        expect(await first.stop()).toBe(0);
      }
      // Stopped, the embedded installation gave its prefix back: `npm start` in a fresh DATA_DIR (the
      // old one deleted) starts at once.
      const fresh = await startServer({
        DATA_DIR: tempDir(),
        PORT: String(await freePort()),
        QUEUE_PREFIX: prefix,
      });
      if (!('stop' in fresh)) throw new Error(describeRun(['all'], fresh));
      expect(await fresh.stop()).toBe(0);
    },
  );

  it.concurrent(
    "a PostgreSQL installation started with the PGlite one's DATA_DIR leaves its demo keys alone",
    { timeout: 600_000 },
    async ({ expect }) => {
      const dataDir = tempDir();
      const plain = path.join(dataDir, 'demo-keys.txt');
      const embedded = await startServer({
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        QUEUE_PREFIX: `${RUN}-embedded`,
      });
      if (!('stop' in embedded)) throw new Error(describeRun(['all'], embedded));
      const embeddedKeys = embedded.output().match(ANY_KEY);
      expect(embedded.output()).toContain(`also in ${plain}, mode 600`);
      expect(await embedded.stop()).toBe(0);
      expect(fs.readFileSync(plain, 'utf8').match(ANY_KEY)).toEqual(embeddedKeys);

      const postgres = await startServer({
        DATABASE_URL: pgUrl,
        DATA_KEYS: PG_DATA_KEYS,
        DATA_DIR: dataDir,
        PORT: String(await freePort()),
        QUEUE_PREFIX: `${RUN}-postgres`,
      });
      if (!('stop' in postgres)) throw new Error(describeRun(['all'], postgres));
      try {
        const banner = postgres.output();
        const postgresKeys = banner.match(ANY_KEY);
        expect(postgresKeys).toHaveLength(3);
        // It says where its keys are: a file of its own, beside the embedded installation's.
        const file = new RegExp(`also in (${dataDir}/demo-keys-${UUID}\\.txt), mode 600`).exec(banner)?.[1];
        expect(file, banner).toBeDefined();
        expect(fs.readFileSync(file!, 'utf8').match(ANY_KEY)).toEqual(postgresKeys);
        expect(fs.readFileSync(plain, 'utf8').match(ANY_KEY)).toEqual(embeddedKeys);
      } finally {
        expect(await postgres.stop()).toBe(0);
      }
    },
  );

  it.concurrent(
    'commands that open Redis end without a warning or an error',
    { timeout: 600_000 },
    async ({ expect }) => {
      const env = {
        DATABASE_URL: pgUrl,
        DATA_KEYS: PG_DATA_KEYS,
        DATA_DIR: tempDir(),
        QUEUE_PREFIX: `${RUN}-commands`,
      };
      const migrated = await run(['migrate'], env);
      expect(migrated.code, describeRun(['migrate'], migrated)).toBe(0);
      // A short run closed Redis in the middle of its handshake some of the time: each runs twice.
      const commands = [['reconcile'], ['webhooks', 'replay', '--since', '2020-01-01T00:00:00Z']];
      for (let round = 0; round < 2; round++) {
        const results = await Promise.all(commands.map((args) => run(args, env)));
        results.forEach((r, i) => {
          const args = commands[i]!;
          expect(r.code, describeRun(args, r)).toBe(0);
          expect(r.stderr, describeRun(args, r)).toBe('');
          // Logs are JSON lines on stdout: none at warn or above.
          expect(r.stdout, describeRun(args, r)).not.toMatch(/^\{/m);
        });
      }
    },
  );
});
