// The `refhub` command and its store, spawned as operators run it: a database that is missing,
// unreachable, silent or refuses the user stops every command that opens the store with one line on
// stderr that says what to do (and never the password); only `refhub migrate` and the serving modes
// change the schema, and every other command refuses a schema with migrations pending; `refhub
// migrate` lists what it applied, or says that nothing was pending. On embedded PGlite and PostgreSQL.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createMigrator, MIGRATION_NAMES, openStore, type StoreTarget } from '../../../src/db/database.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { testDatabaseUrl } from '../../support/engines.ts';
import { freePort } from '../../support/free-port.ts';
import { describeRun, runRefhub, type CliResult } from '../../support/refhub-cli.ts';
import { startRefhubProcess } from '../../support/worker-process.ts';

const SERVER = new URL(testDatabaseUrl());
const HOST = SERVER.hostname;
const PORT = SERVER.port || '5432';
const USER = decodeURIComponent(SERVER.username) || 'postgres';
const PASSWORD = 'Not-To-Be-Printed-7f3a';
const QUEUE_PREFIX = `cli-store-${randomUUID()}`;
const SUFFIX = randomUUID().replaceAll('-', '').slice(0, 12);
/** A role of this file's own on the shared server, with no right to create tables in `public`. */
const LIMITED_ROLE = `refhub_limited_${SUFFIX}`;
/** Node prints a stack as lines of "    at …". */
const STACK = /\n\s+at /;

const databases = new Set<string>();
const tempDirs: string[] = [];
const servers: net.Server[] = [];

async function admin(query: string, database?: string): Promise<void> {
  const url = new URL(testDatabaseUrl());
  if (database !== undefined) url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(query);
  } finally {
    await client.end();
  }
}

function urlOf(database: string, user = USER, password?: string, port = PORT): string {
  const url = new URL(testDatabaseUrl());
  url.username = user;
  url.password = password ?? '';
  url.port = port;
  url.pathname = `/${database}`;
  return url.toString();
}

/** A database name this file owns, created or not; every one is dropped afterwards. */
function databaseName(kind: string): string {
  const name = `refhub_${kind}_${SUFFIX}_${databases.size}`;
  databases.add(name);
  return name;
}

async function freshDatabase(kind: string): Promise<string> {
  const name = databaseName(kind);
  await admin(`CREATE DATABASE ${name}`);
  return name;
}

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-cli-store-'));
  tempDirs.push(dir);
  return dir;
}

function cli(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return runRefhub(args, { REDIS_URL: testRedisUrl(), QUEUE_PREFIX, ...env });
}

/** The one line a command that stopped for the operator printed: exit 1, nothing else on stderr. */
function oneLine(args: readonly string[], r: CliResult): string {
  expect(r.code, describeRun(args, r)).toBe(1);
  expect(r.stderr, describeRun(args, r)).not.toMatch(STACK);
  expect(r.stderr.endsWith('\n'), describeRun(args, r)).toBe(true);
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, describeRun(args, r)).toHaveLength(1);
  expect(r.stdout, describeRun(args, r)).not.toMatch(/is serving|is running/);
  return lines[0]!;
}

/** Runs each command, two at a time: each is a Node process of its own, on a shared machine. */
async function each<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

/**
 * Commands that open the store, one for each way there: `refhub migrate`, a serving mode, and an
 * operator's command. All of them open it in one place (composition/context.ts).
 */
const STORE_COMMANDS: readonly (readonly string[])[] = [
  ['migrate'],
  ['api'],
  ['keys', 'list'],
  ['reconcile'],
];

afterAll(async () => {
  for (const server of servers) server.close();
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
  for (const name of databases) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin(`DROP ROLE IF EXISTS ${LIMITED_ROLE}`);
  const redis = new Redis(testRedisUrl());
  const keys = await redis.keys(`{${QUEUE_PREFIX}[}:]*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

describe('refhub on a database it cannot use', () => {
  it(
    'stops each way into the store on a missing database with one line, and the createdb that fixes it',
    { timeout: 240_000 },
    async () => {
      const missing = databaseName('missing');
      const url = urlOf(missing);
      const advice =
        `refhub: database "${missing}" does not exist on PostgreSQL at ${HOST}:${PORT}: create it with ` +
        `\`createdb -h ${HOST} -p ${PORT} -U ${USER} ${missing}\`, then run \`refhub migrate\``;
      await each(STORE_COMMANDS, async (args) => {
        expect(oneLine(args, await cli(args, { DATABASE_URL: url, PORT: '0' }))).toBe(advice);
      });

      // The advice works as written.
      const createdb = /`(createdb [^`]+)`/.exec(advice)![1]!;
      await promisify(execFile)('bash', ['-c', createdb]);
      const migrated = await cli(['migrate'], { DATABASE_URL: url });
      expect(migrated.code, describeRun(['migrate'], migrated)).toBe(0);
    },
  );

  it(
    'says in one line that nothing listens on a closed port, never printing the password',
    { timeout: 120_000 },
    async () => {
      const port = String(await freePort());
      const url = urlOf('refhub', USER, PASSWORD, port);
      await each([['migrate'], ['keys', 'list']], async (args) => {
        const line = oneLine(args, await cli(args, { DATABASE_URL: url, PORT: '0' }));
        expect(line).toBe(
          `refhub: nothing accepts connections at ${HOST}:${port} (ECONNREFUSED): start PostgreSQL there, ` +
            'or correct the host and port in DATABASE_URL',
        );
      });
    },
  );

  it(
    'says in one line that a server does not answer, and that a user is turned away, never printing the password',
    { timeout: 120_000 },
    async () => {
      // A port that takes the connection and never says a word: the driver's connect timeout ends it.
      const silent = net.createServer(() => undefined);
      servers.push(silent);
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const silentPort = String((silent.address() as net.AddressInfo).port);
      const [quiet, refused] = await Promise.all([
        cli(['migrate'], { DATABASE_URL: `postgres://${USER}:${PASSWORD}@127.0.0.1:${silentPort}/refhub` }),
        cli(['keys', 'list'], { DATABASE_URL: urlOf('postgres', `refhub_nobody_${SUFFIX}`, PASSWORD) }),
      ]);
      const quietLine = oneLine(['migrate'], quiet);
      expect(quietLine).toMatch(
        new RegExp(
          `^refhub: PostgreSQL at 127\\.0\\.0\\.1:${silentPort} did not answer in time \\(timeout\\): `,
        ),
      );
      expect(quietLine).toContain('firewall');
      const refusedLine = oneLine(['keys', 'list'], refused);
      // pg_hba.conf decides whether an unknown role is told so (28000) or asked for a password first.
      expect(refusedLine).toMatch(
        new RegExp(
          `^refhub: PostgreSQL at ${HOST}:${PORT} (turned user "refhub_nobody_${SUFFIX}" away: .* \\(28000\\)|refused the password of user "refhub_nobody_${SUFFIX}" \\(28P01\\)): .*DATABASE_URL$`,
        ),
      );
      for (const r of [quiet, refused]) expect(r.stderr + r.stdout).not.toContain(PASSWORD);
    },
  );

  it('says in one line that DATA_DIR cannot be used', { timeout: 120_000 }, async () => {
    const file = path.join(tempDir(), 'not-a-directory');
    fs.writeFileSync(file, '');
    const line = oneLine(['keys', 'list'], await cli(['keys', 'list'], { DATA_DIR: file }));
    expect(line).toMatch(
      /^refhub: DATA_DIR .*not-a-directory cannot be used for the embedded database: EEXIST/,
    );
  });

  it(
    "says in one line that the user may not create the schema, and how to make it the database's owner",
    { timeout: 120_000 },
    async () => {
      const name = await freshDatabase('limited');
      await admin(`CREATE ROLE ${LIMITED_ROLE} LOGIN`);
      const url = urlOf(name, LIMITED_ROLE);
      const line = oneLine(['migrate'], await cli(['migrate'], { DATABASE_URL: url }));
      expect(line).toMatch(
        /^refhub: migrating failed before any migration ran: permission denied .* \(42501\)/,
      );
      expect(line).toContain(`\`ALTER DATABASE ${name} OWNER TO ${LIMITED_ROLE}\``);
      expect(line).toMatch(/The run was rolled back: the schema is as it was before\.$/);

      // The advice works as written.
      await admin(/`(ALTER DATABASE [^`]+)`/.exec(line)![1]!);
      const migrated = await cli(['migrate'], { DATABASE_URL: url });
      expect(migrated.code, describeRun(['migrate'], migrated)).toBe(0);
    },
  );
});

describe('refhub on a Redis it cannot reach', () => {
  it('stops an operator command that needs the queues with one line', { timeout: 180_000 }, async () => {
    const env = { DATABASE_URL: urlOf(await freshDatabase('noredis')) };
    const migrated = await cli(['migrate'], env);
    expect(migrated.code, describeRun(['migrate'], migrated)).toBe(0);
    const closed = `redis://127.0.0.1:${await freePort()}`;
    const line = oneLine(['reconcile'], await cli(['reconcile'], { ...env, REDIS_URL: closed }));
    expect(line).toBe(
      'refhub: Redis cannot be reached, so the queues are unavailable: start Redis, or correct REDIS_URL, then run the command again',
    );
  });
});

const LAST = MIGRATION_NAMES.at(-1)!;
const BEFORE_LAST = MIGRATION_NAMES.at(-2)!;
const DURATION = String.raw`\d+(\.\d)? m?s`;

describe.each([
  ['embedded PGlite', () => Promise.resolve({ DATA_DIR: tempDir() })],
  ['PostgreSQL', async () => ({ DATA_DIR: tempDir(), DATABASE_URL: urlOf(await freshDatabase('schema')) })],
] as const)('the schema of refhub on %s', (store, settings) => {
  it(
    'changes only with `refhub migrate`, which lists what it applied, or says that nothing was pending',
    {
      timeout: 480_000,
    },
    async () => {
      const env: Record<string, string> = await settings();
      const target: StoreTarget =
        env.DATABASE_URL === undefined
          ? { engine: 'pglite', dataDir: env.DATA_DIR, command: 'test' }
          : { engine: 'postgres', url: env.DATABASE_URL, poolSize: 1 };
      const pending = async () => {
        const opened = await openStore(target);
        try {
          return (await createMigrator(opened.db).getMigrations())
            .filter((m) => m.executedAt === undefined)
            .map((m) => m.name);
        } finally {
          await opened.close();
        }
      };

      // A fresh store: other commands refuse, and leave it as it was.
      const refused = await cli(['keys', 'list'], env);
      expect(oneLine(['keys', 'list'], refused)).toBe(
        'refhub: the database has no refhub schema yet. Run `refhub migrate` first ' +
          '(`refhub all`, `api` and `worker` also apply migrations as they start).',
      );
      expect(await pending(), store).toEqual(MIGRATION_NAMES);

      // `refhub migrate` names each migration as it starts and as it ends, with its duration.
      const first = await cli(['migrate'], env);
      expect(first.code, describeRun(['migrate'], first)).toBe(0);
      const lines = first.stdout.trimEnd().split('\n');
      expect(lines).toHaveLength(2 * MIGRATION_NAMES.length + 1);
      MIGRATION_NAMES.forEach((name, i) => {
        expect(lines[2 * i]).toBe(`Applying ${name} …`);
        expect(lines[2 * i + 1]).toMatch(new RegExp(`^Applied  ${name} in ${DURATION}$`));
      });
      expect(lines.at(-1)).toMatch(
        new RegExp(
          `^Applied ${MIGRATION_NAMES.length} migrations in ${DURATION}, in one transaction: the database schema is up to date\\.$`,
        ),
      );
      expect(await pending()).toEqual([]);

      // Nothing pending: it says so, with the count, and applies nothing.
      const again = await cli(['migrate'], env);
      expect(again.code, describeRun(['migrate'], again)).toBe(0);
      expect(again.stdout).toBe(
        `The database schema is already up to date (${MIGRATION_NAMES.length} migrations): nothing was applied.\n`,
      );

      // One migration behind (as after an upgrade): other commands refuse, naming it; migrate applies it alone.
      const opened = await openStore(target);
      try {
        expect((await createMigrator(opened.db).migrateTo(BEFORE_LAST)).error).toBeUndefined();
      } finally {
        await opened.close();
      }
      const behind = await cli(['keys', 'list'], env);
      expect(oneLine(['keys', 'list'], behind)).toBe(
        `refhub: the database schema is behind this refhub: 1 migration is pending (${LAST}). ` +
          'Run `refhub migrate` first (`refhub all`, `api` and `worker` also apply migrations as they start).',
      );
      expect(await pending()).toEqual([LAST]);
      const one = await cli(['migrate'], env);
      expect(one.code, describeRun(['migrate'], one)).toBe(0);
      expect(one.stdout).toMatch(
        new RegExp(
          `^Applying ${LAST} …\nApplied  ${LAST} in ${DURATION}\nApplied 1 migration in ${DURATION}, in one transaction: the database schema is up to date\\.\n$`,
        ),
      );
      const listed = await cli(['keys', 'list'], env);
      expect(listed.code, describeRun(['keys', 'list'], listed)).toBe(0);
    },
  );
});

describe('a serving process on a fresh database', () => {
  it('migrates as it starts and says so in its log', { timeout: 120_000 }, async () => {
    const url = urlOf(await freshDatabase('serving'));
    const api = await startRefhubProcess('api', {
      databaseUrl: url,
      redisUrl: testRedisUrl(),
      queuePrefix: QUEUE_PREFIX,
      ehrUrl: 'http://127.0.0.1:9/ehr',
      env: { LOG_LEVEL: 'info', NODE_ENV: 'development' },
    });
    try {
      const log = api
        .output()
        .stdout.split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg?: string; migration?: string; ms?: number; migrations?: number });
      expect(log.filter((l) => l.msg === 'migration started').map((l) => l.migration)).toEqual(
        MIGRATION_NAMES,
      );
      const finished = log.filter((l) => l.msg === 'migration finished');
      expect(finished.map((l) => l.migration)).toEqual(MIGRATION_NAMES);
      for (const l of finished) expect(l.ms).toBeTypeOf('number');
      expect(log.find((l) => l.msg === 'database schema migrated')?.migrations).toBe(MIGRATION_NAMES.length);
    } finally {
      await api.stop();
    }
  });
});
