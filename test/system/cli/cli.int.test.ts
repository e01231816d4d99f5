// The real `refhub` command, spawned as operators run it: `node bin/refhub.js ...` on Node 24, on
// embedded PGlite in a fresh DATA_DIR and on a fresh PostgreSQL database. Each flow that shares a
// store runs in order inside one test; independent flows run concurrently to keep the file fast.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { testDatabaseUrl } from '../../support/engines.ts';
import { childEnv } from '../../support/child-env.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { auditSigningKeySetting, testAuditSigningKey } from '../../support/audit-signing-key.ts';
import { dataKeysSetting, testKeyEncryptionKey } from '../../support/data-keys.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const BIN = path.join(ROOT, 'bin', 'refhub.js');
const DEMO_CATALOG = path.join(ROOT, 'catalog', 'demo.json');
const KEY_LINE = /^rfh_(live|test)_[0-9A-Za-z]{43}$/;
const ANY_KEY = /rfh_(live|test)_[0-9A-Za-z]{43}/g;
/** Settings that would leak from the developer's shell into the command under test. */
/** The queues of the processes this file starts live under a prefix of their own. */
const QUEUE_PREFIX = `cli-${randomUUID()}`;
/**
 * One key ring for every process this file starts, as an installation's processes share one: the
 * PostgreSQL database is shared by commands run each in a DATA_DIR of its own, where each would
 * otherwise make a key file of its own and fail to open the data keys another one wrapped.
 */
const DATA_KEYS = dataKeysSetting(testKeyEncryptionKey('cli'));

interface Result {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

const children = new Set<ChildProcess>();
const tempDirs: string[] = [];

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-'));
  tempDirs.push(dir);
  return dir;
}

function environment(env: Record<string, string>): NodeJS.ProcessEnv {
  return childEnv({
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX,
    DATA_KEYS,
    ...env,
  });
}

function spawnRefhub(args: readonly string[], env: Record<string, string>): ChildProcess {
  // process.execPath: vitest runs on the project's Node 24, which runs the TypeScript sources.
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: environment(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function run(args: readonly string[], env: Record<string, string>): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawnRefhub(args, env);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

function describeResult(args: readonly string[], r: Result): string {
  return `refhub ${args.join(' ')} → exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
}

interface Server {
  readonly child: ChildProcess;
  readonly pid: number;
  output(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `refhub all` and resolves once it says it is serving. */
function startServer(env: Record<string, string>): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawnRefhub(['all'], env);
    let out = '';
    const exited = new Promise<number | null>((done) => {
      child.once('exit', (code) => {
        done(code);
      });
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`refhub all did not start in time:\n${out}`));
    }, 90_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (/is serving/.test(out) && child.pid !== undefined) {
        clearTimeout(timer);
        resolve({
          child,
          pid: child.pid,
          output: () => out,
          stop: async () => {
            child.kill('SIGTERM');
            return exited;
          },
        });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`refhub all exited with ${code} before serving:\n${out}`));
    });
  });
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
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

const pgDatabase = `refhub_cli_${randomUUID().replaceAll('-', '')}`;
let pgUrl = '';

beforeAll(async () => {
  await admin(`CREATE DATABASE ${pgDatabase}`);
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${pgDatabase}`;
  pgUrl = url.toString();
  // Only `refhub migrate` (and a serving start) changes the schema; the commands below need it current.
  const migrated = await run(['migrate'], { DATABASE_URL: pgUrl, DATA_DIR: tempDir() });
  if (migrated.code !== 0) throw new Error(describeResult(['migrate'], migrated));
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const keys = await redis.keys(`{${QUEUE_PREFIX}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
  await admin(`DROP DATABASE IF EXISTS ${pgDatabase} WITH (FORCE)`);
});

describe('refhub CLI', () => {
  it.concurrent('lists its commands in --help', async ({ expect }) => {
    const [top, keys] = await Promise.all([run(['--help'], {}), run(['keys', '--help'], {})]);
    expect(top.code, describeResult(['--help'], top)).toBe(0);
    for (const command of [
      'all',
      'api',
      'worker',
      'reconcile',
      'sandbox-ehr',
      'migrate',
      'catalog',
      'keys',
      'clients',
    ]) {
      expect(top.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    }
    expect(keys.code, describeResult(['keys', '--help'], keys)).toBe(0);
    for (const command of ['create', 'list', 'revoke']) {
      expect(keys.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    }
  });

  it.concurrent(
    'keeps what it compiles in a compile cache beside its code, never in the shared temporary directory',
    { timeout: 120_000 },
    async ({ expect }) => {
      const [tmp, named, off] = [tempDir(), tempDir(), tempDir()];
      const files = (dir: string) =>
        fs.existsSync(dir)
          ? fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())
          : [];
      const beside = path.join(ROOT, 'node_modules', '.cache', 'refhub-compile');
      const runs = await Promise.all([
        run(['--version'], { TMPDIR: tmp }),
        run(['--version'], { TMPDIR: tmp, NODE_COMPILE_CACHE: named }),
        run(['--version'], { TMPDIR: tmp, NODE_COMPILE_CACHE: off, NODE_DISABLE_COMPILE_CACHE: '1' }),
      ]);
      for (const r of runs) {
        expect(r.code, describeResult(['--version'], r)).toBe(0);
        expect(r.stdout).toBe(runs[0].stdout);
      }
      expect(files(beside).length).toBeGreaterThan(0);
      expect(files(named).length).toBeGreaterThan(0);
      expect(files(off)).toEqual([]);
      expect(fs.readdirSync(tmp)).toEqual([]);
    },
  );

  it.concurrent(
    'stops at start on a bad configuration value, naming the variable',
    { timeout: 120_000 },
    async ({ expect }) => {
      const dataDir = tempDir();
      const cases: [Record<string, string>, string[], string][] = [
        [{ PORT: 'abc' }, ['all'], 'PORT'],
        [{ DATABASE_URL: 'mysql://db/refhub' }, ['keys', 'list'], 'DATABASE_URL'],
        [{ NODE_ENV: 'prod' }, ['all'], 'NODE_ENV'],
        [
          {
            NODE_ENV: 'production',
            EHR_URL: 'https://127.0.0.1:9/ehr',
            SESSION_SECRET: 's'.repeat(32),
            AUDIT_SIGNING_KEY: auditSigningKeySetting(await testAuditSigningKey()),
            ATTACHMENT_SCANNING: 'elsewhere',
          },
          ['all'],
          'EHR_URL: must reach a public address in production: 127.0.0.1 is a loopback address',
        ],
        [
          {
            NODE_ENV: 'production',
            EHR_URL: 'https://1.1.1.1/ehr',
            SESSION_SECRET: 's'.repeat(32),
            AUDIT_SIGNING_KEY: auditSigningKeySetting(await testAuditSigningKey()),
            ATTACHMENT_SCANNING: 'elsewhere',
            QPDF_PATH: '/nonexistent/bin/qpdf',
          },
          ['all'],
          'QPDF_PATH: no qpdf program at /nonexistent/bin/qpdf: it is not there, or cannot run. PDF ' +
            'attachments are read whole by qpdf before they are kept',
        ],
      ];
      await Promise.all(
        cases.map(async ([env, args, variable]) => {
          const started = Date.now();
          const r = await run(args, { DATA_DIR: dataDir, ...env });
          expect(r.code, describeResult(args, r)).toBe(1);
          expect(r.stderr).toContain(variable);
          expect(r.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
          expect(r.stdout).not.toMatch(/is serving/);
          // It stops by itself rather than waiting for a dependency (a generous bound: the machine is shared).
          expect(Date.now() - started).toBeLessThan(60_000);
        }),
      );
      // Nothing was opened: no lock file was left behind and no database was created.
      expect(fs.readdirSync(dataDir)).toEqual([]);
    },
  );

  it.concurrent(
    'runs API and worker processes only on PostgreSQL, naming DATABASE_URL',
    { timeout: 120_000 },
    async ({ expect }) => {
      const results = await Promise.all(
        ['api', 'worker'].map(
          async (command) => [command, await run([command], { DATA_DIR: tempDir() })] as const,
        ),
      );
      for (const [command, r] of results) {
        expect(r.code, describeResult([command], r)).toBe(1);
        expect(r.stderr).toContain(`\`refhub ${command}\` runs against PostgreSQL: set DATABASE_URL`);
      }
    },
  );

  it.concurrent(
    'doctor checks an installation and exits 1 when a check fails',
    { timeout: 120_000 },
    async ({ expect }) => {
      const fresh = await run(['doctor'], { DATA_DIR: tempDir() });
      expect(fresh.code, describeResult(['doctor'], fresh)).toBe(1);
      expect(fresh.stdout).toMatch(/^passed +pglite lock +DATA_DIR .* is free/m);
      expect(fresh.stdout).toMatch(/^FAILED +migrations +migrations are pending: run `refhub migrate`$/m);
      expect(fresh.stdout).toMatch(/^passed +scanner +unset: attachments are not scanned for malware/m);
      expect(fresh.stdout).toMatch(/^passed +pdf checker +qpdf version [\d.]+ at qpdf reads PDFs whole/m);
      expect(fresh.stdout).toMatch(/^6 checks passed, 1 failed\.$/m);

      const migrated = await run(['migrate'], { DATABASE_URL: pgUrl, DATA_DIR: tempDir() });
      expect(migrated.code, describeResult(['migrate'], migrated)).toBe(0);
      const healthy = await run(['doctor'], { DATABASE_URL: pgUrl, DATA_DIR: tempDir() });
      expect(healthy.code, describeResult(['doctor'], healthy)).toBe(0);
      for (const check of [
        'database',
        'migrations',
        'postgres fsync',
        'postgres synchronous_commit',
        'postgres full_page_writes',
        'redis',
        'ehr url',
        'scanner',
        'pdf checker',
      ]) {
        expect(healthy.stdout).toMatch(new RegExp(`^passed +${check} `, 'm'));
      }
      expect(healthy.stdout).toMatch(/^Every check passed\.$/m);

      const noRedis = await run(['doctor'], {
        DATABASE_URL: pgUrl,
        DATA_DIR: tempDir(),
        REDIS_URL: 'redis://127.0.0.1:1',
        ATTACHMENT_SCANNER: 'clamd://127.0.0.1:1',
        QPDF_PATH: '/nonexistent/bin/qpdf',
      });
      expect(noRedis.code).toBe(1);
      expect(noRedis.stdout).toMatch(
        /^FAILED +pdf checker +no qpdf program at \/nonexistent\/bin\/qpdf: it is not there, or cannot run; every PDF attachment is refused.* \(QPDF_PATH of this shell\)$/m,
      );
      expect(noRedis.stdout).toMatch(/^FAILED +redis +Redis is unreachable/m);
      expect(noRedis.stdout).toMatch(
        /^FAILED +scanner +clamd at clamd:\/\/127\.0\.0\.1:1: nothing accepts connections there.* \(ATTACHMENT_SCANNER of this shell\)$/m,
      );
    },
  );

  it.concurrent(
    'forwards retry takes referral IDs or --all-failed, not both and not neither',
    { timeout: 120_000 },
    async ({ expect }) => {
      const env = { DATABASE_URL: pgUrl, DATA_DIR: tempDir() };
      for (const args of [
        ['forwards', 'retry'],
        ['forwards', 'retry', '--all-failed', '01900000-0000-7000-8000-000000000000'],
        ['forwards', 'retry', 'not-an-id'],
      ]) {
        const r = await run(args, env);
        expect(r.code, describeResult(args, r)).toBe(1);
        expect(r.stderr).not.toMatch(/\n\s+at /);
      }
      const none = await run(['forwards', 'retry', '--all-failed'], env);
      expect(none.code, describeResult(['forwards', 'retry', '--all-failed'], none)).toBe(0);
      expect(none.stdout).toMatch(/^No failed forwards: nothing was queued again\.$/m);
    },
  );

  it.concurrent(
    'webhooks replay takes an event or a time, not both and not neither, and lists subscriptions',
    { timeout: 120_000 },
    async ({ expect }) => {
      const env = { DATABASE_URL: pgUrl, DATA_DIR: tempDir() };
      for (const args of [
        ['webhooks', 'replay'],
        [
          'webhooks',
          'replay',
          '--event',
          '01900000-0000-7000-8000-000000000000',
          '--since',
          '2026-01-01T00:00:00Z',
        ],
        ['webhooks', 'replay', '--event', 'not-an-id'],
        ['webhooks', 'replay', '--since', 'yesterday'],
        ['webhooks', 'replay', '--event', '01900000-0000-7000-8000-000000000000'],
      ]) {
        const r = await run(args, env);
        expect(r.code, describeResult(args, r)).toBe(1);
        expect(r.stderr).not.toMatch(/\n\s+at /);
      }
      const missing = await run(
        ['webhooks', 'replay', '--event', '01900000-0000-7000-8000-000000000000'],
        env,
      );
      expect(missing.stderr).toMatch(/No event 01900000-0000-7000-8000-000000000000/);
      const since = await run(['webhooks', 'replay', '--since', '2999-01-01T00:00:00Z'], env);
      expect(since.code, describeResult(['webhooks', 'replay', '--since'], since)).toBe(0);
      expect(since.stdout).toMatch(/^No events occurred since then: nothing was queued\.$/m);
      const list = await run(['webhooks', 'list'], env);
      expect(list.code, describeResult(['webhooks', 'list'], list)).toBe(0);
    },
  );

  it.concurrent(
    'reconciles once on PostgreSQL and says what it repaired',
    { timeout: 120_000 },
    async ({ expect }) => {
      const r = await run(['reconcile'], { DATABASE_URL: pgUrl, DATA_DIR: tempDir() });
      expect(r.code, describeResult(['reconcile'], r)).toBe(0);
      expect(r.stdout).toMatch(
        /^Nothing to repair: every due forward has a live job and every reminder schedule exists\.$/m,
      );
    },
  );

  // Spawning costs a second or more, so each flow runs only the invocations that prove something.
  const stores: [string, () => Record<string, string>][] = [
    ['embedded PGlite', () => ({ DATA_DIR: tempDir() })],
    ['PostgreSQL', () => ({ DATABASE_URL: pgUrl, DATA_DIR: tempDir() })],
  ];

  it.concurrent.for(stores)(
    'migrates, loads catalogs and manages keys on %s',
    { timeout: 240_000 },
    async ([store, storeEnv], { expect }) => {
      const env = storeEnv();
      const cli = async (args: string[], outcome: 'ok' | 'fail' = 'ok'): Promise<Result> => {
        const r = await run(args, env);
        if (outcome === 'ok') expect(r.code, describeResult(args, r)).toBe(0);
        else {
          expect(r.code, describeResult(args, r)).toBe(1);
          expect(r.stderr, 'a message, not a stack trace').not.toMatch(/\n\s+at /);
        }
        return r;
      };

      const pglite = store === 'embedded PGlite';
      // The PostgreSQL database was migrated before the tests; the PGlite DATA_DIR is fresh.
      expect((await cli(['migrate'])).stdout).toMatch(
        pglite
          ? /^Applied \d+ migrations in .*: the database schema is up to date\.$/m
          : /already up to date/,
      );

      const loaded = await cli(['catalog', 'load', 'catalog/demo.json']);
      expect(loaded.stdout).toMatch(
        /Loaded 3 systems, 4 institutions, 7 offerings, 3 priorities, 6 outcome codes, 11 reason codes and 5 public holidays/,
      );

      // A bad catalog is refused, naming the problem, and nothing of it is loaded.
      const dir = tempDir();
      const demo = JSON.parse(fs.readFileSync(DEMO_CATALOG, 'utf8')) as {
        institutions: { idType: string; id: string; name: string }[];
        offerings: Record<string, unknown>[];
      };
      const badCatalog = path.join(dir, 'bad-catalog.json');
      fs.writeFileSync(
        badCatalog,
        JSON.stringify({
          ...demo,
          institutions: [...demo.institutions, { idType: 'hci', id: 'S5555N', name: 'New Clinic' }],
          offerings: [{ ...demo.offerings[0], institution: { idType: 'hci', id: 'S0000X' } }],
        }),
      );
      const refused = await cli(['catalog', 'load', badCatalog], 'fail');
      expect(refused.stderr).toContain('/offerings/0/institution');
      expect(refused.stderr).toContain('hci:S0000X');
      if (pglite) {
        // The refused catalog's new clinic was not loaded, so a key for it is refused too.
        const unknownInstitution = await cli(
          ['keys', 'create', '--system', 'HAS', '--role', 'sender', '--institution', 'hci:S5555N'],
          'fail',
        );
        expect(unknownInstitution.stderr).toMatch(/hci:S5555N is not an institution in the catalog/);
        expect(unknownInstitution.stdout).not.toMatch(ANY_KEY);
      }

      // keys create prints the key alone on the last line of stdout.
      const created = await cli([
        'keys',
        'create',
        '--system',
        'HAS',
        '--role',
        'sender',
        '--institution',
        'hci:S1234A',
      ]);
      const key = created.stdout.trimEnd().split('\n').at(-1)!;
      expect(key).toMatch(KEY_LINE);
      expect(key.startsWith('rfh_test_')).toBe(true);
      expect(created.stdout.match(ANY_KEY)).toEqual([key]);
      const id = /key ([0-9a-f-]{36})/.exec(created.stdout)?.[1];
      expect(id, created.stdout).toBeDefined();

      if (pglite) {
        const badRole = await cli(
          ['keys', 'create', '--system', 'HAS', '--role', 'admin', '--institution', 'hci:S1234A'],
          'fail',
        );
        expect(badRole.stderr).toMatch(/--role/);
        expect(badRole.stderr).toMatch(/sender, provider, ops/);
        expect(badRole.stdout).not.toMatch(ANY_KEY);
      }

      // keys list shows the key by ID and display prefix, never the key itself.
      const listed = await cli(['keys', 'list']);
      expect(listed.stdout).not.toMatch(ANY_KEY);
      expect(listed.stdout).not.toContain(key.slice('rfh_test_'.length));
      expect(listed.stdout.trim().split('\n')).toHaveLength(2); // the header and the key
      const row = listed.stdout.split('\n').find((l) => l.startsWith(id!));
      expect(row, listed.stdout).toBeDefined();
      expect(row).toContain(key.slice(0, 'rfh_test_'.length + 8));
      expect(row).toMatch(/\tsender\tHAS\thci:S1234A\tactive/);

      expect((await cli(['keys', 'revoke', id!])).stdout).toContain(`Revoked key ${id}`);

      if (pglite) {
        const afterRevoke = await cli(['keys', 'list']);
        expect(afterRevoke.stdout.split('\n').find((l) => l.startsWith(id!))).toMatch(
          // As every page writes times: in the display zone, with the zone named.
          /\trevoked (Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} SGT\t/,
        );
        // A file that is not JSON is reported plainly too.
        const notJson = path.join(dir, 'not-json.json');
        fs.writeFileSync(notJson, '{ "systems": [');
        expect((await cli(['catalog', 'load', notJson], 'fail')).stderr).toContain(
          `${notJson}: cannot be read`,
        );
      } else {
        // PostgreSQL serves several processes at once.
        const [live, again] = await Promise.all([
          cli([
            'keys',
            'create',
            '--system',
            'Epic',
            '--role',
            'provider',
            '--institution',
            'hci:S9001Z',
            '--institution',
            'hci:S9002Y',
            '--environment',
            'live',
          ]),
          cli(['keys', 'revoke', id!], 'fail'),
        ]);
        const liveKey = live.stdout.trimEnd().split('\n').at(-1)!;
        expect(liveKey).toMatch(KEY_LINE);
        expect(liveKey.startsWith('rfh_live_')).toBe(true);
        expect(live.stdout).toContain('hci:S9001Z, hci:S9002Y');
        expect(again.stderr).toContain(`No active API key has the ID or prefix ${id}`);
        const livePrefix = liveKey.slice(0, 'rfh_live_'.length + 8);
        expect((await cli(['keys', 'revoke', livePrefix])).stdout).toContain(livePrefix);
      }
    },
  );

  it.concurrent(
    'serves without qpdf outside production, saying as it starts that every PDF is refused',
    async ({ expect }) => {
      const server = await startServer({
        DATA_DIR: tempDir(),
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        QUEUE_PREFIX: `${QUEUE_PREFIX}-no-qpdf`,
        QPDF_PATH: '/nonexistent/bin/qpdf',
      });
      try {
        const problem = 'no qpdf program at /nonexistent/bin/qpdf: it is not there, or cannot run';
        expect(server.output()).toContain(
          `  PDF attachments are refused: ${problem} (install qpdf, or set QPDF_PATH)`,
        );
        expect(server.output()).toContain(
          `${problem}: every PDF attachment is refused until qpdf is installed (QPDF_PATH)`,
        );
      } finally {
        expect(await server.stop()).toBe(0);
      }
    },
    240_000,
  );

  it.concurrent(
    'says in its banner, with the address, that it cannot reach its queues, and serves',
    async ({ expect }) => {
      const port = await freePort();
      const nobody = `redis://127.0.0.1:${await freePort()}`;
      const server = await startServer({
        DATA_DIR: tempDir(),
        PORT: String(port),
        HOST: '127.0.0.1',
        REDIS_URL: nobody,
        QUEUE_PREFIX: `${QUEUE_PREFIX}-unreachable`,
      });
      try {
        const banner = server.output();
        expect(banner).toMatch(
          new RegExp(
            `^ {2}Queues UNREACHABLE: Redis at ${nobody.replaceAll('.', '\\.')} \\(QUEUE_BACKEND=redis\\): .+; requests are ` +
              'taken and their work waits in the outbox until the queues are back$',
            'm',
          ),
        );
        expect(banner).not.toMatch(/^ {2}Queues: /m);
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      } finally {
        await server.stop();
      }
    },
    120_000,
  );

  it.concurrent(
    'serves from one process per DATA_DIR, with the demo set up on first start only',
    async ({ expect }) => {
      const dataDir = tempDir();
      const port = await freePort();
      // An installation of its own claims the queue prefix it serves on: the others here use another.
      const env = {
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        QUEUE_PREFIX: `${QUEUE_PREFIX}-served`,
      };
      const lockFile = path.join(dataDir, 'refhub.lock');
      const keysFile = path.join(dataDir, 'demo-keys.txt');

      const first = await startServer(env);
      let keys: string[];
      try {
        const banner = first.output();
        expect(banner).toContain(`is serving http://127.0.0.1:${port}`);
        expect(banner).toMatch(/demo catalog was loaded/);
        keys = banner.match(ANY_KEY) ?? [];
        expect(keys).toHaveLength(3);
        expect(new Set(keys).size).toBe(3);
        for (const key of keys) expect(key.startsWith('rfh_test_')).toBe(true);
        for (const label of ['demo-sender', 'demo-provider', 'demo-ops']) expect(banner).toContain(label);

        // demo-keys.txt holds the same keys, readable by the owner only.
        expect(fs.statSync(keysFile).mode & 0o777).toBe(0o600);
        expect(fs.readFileSync(keysFile, 'utf8').match(ANY_KEY)).toEqual(keys);

        // It really serves, and the demo sender's key works.
        const health = await fetch(`http://127.0.0.1:${port}/healthz`);
        expect(health.status).toBe(200);
        const senderKey = /demo-sender\s+(\S+)/.exec(banner)?.[1];
        const list = await fetch(`http://127.0.0.1:${port}/api/v1/institutions/hci/S1234A/referrals`, {
          headers: { authorization: `ApiKey ${senderKey}` },
        });
        expect(list.status).toBe(200);
        expect(await list.json()).toMatchObject({ data: [], metadata: { total: 0 } });

        // A second process on the same DATA_DIR fails at once, naming the holder (the keys and clients
        // commands alone are run by the holder for it: control-socket.embedded.test.ts).
        expect(JSON.parse(fs.readFileSync(lockFile, 'utf8'))).toMatchObject({ pid: first.pid });
        const started = Date.now();
        const second = await run(['webhooks', 'list'], env);
        expect(second.code, describeResult(['webhooks', 'list'], second)).toBe(1);
        expect(second.stderr).toContain(`process ${first.pid}`);
        expect(second.stderr).toContain('refhub all');
        expect(second.stderr).not.toMatch(/\n\s+at /);
        // It stops by itself rather than waiting for a dependency (a generous bound: the machine is shared).
        expect(Date.now() - started).toBeLessThan(60_000);
      } finally {
        expect(await first.stop()).toBe(0);
      }

      // SIGTERM released the lock: the tools work again and see the demo keys.
      expect(fs.existsSync(lockFile)).toBe(false);
      const listed = await run(['keys', 'list'], env);
      expect(listed.code, describeResult(['keys', 'list'], listed)).toBe(0);
      for (const label of ['demo-sender', 'demo-provider', 'demo-ops'])
        expect(listed.stdout).toContain(label);
      expect(listed.stdout).not.toMatch(ANY_KEY);

      // A second start finds the catalog and prints no keys.
      const restarted = await startServer(env);
      try {
        expect(restarted.output()).toMatch(/is serving/);
        expect(restarted.output()).not.toMatch(ANY_KEY);
        expect(restarted.output()).not.toMatch(/demo catalog was loaded/);
      } finally {
        expect(await restarted.stop()).toBe(0);
      }
      expect(fs.readFileSync(keysFile, 'utf8').match(ANY_KEY)).toEqual(keys);
    },
    240_000,
  );
});
