// Opens the store: PostgreSQL through a pg pool when DATABASE_URL is set, embedded PGlite in DATA_DIR
// otherwise. Both speak the same SQL and run the same migrations.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import v8 from 'node:v8';
import {
  Kysely,
  PostgresDialect,
  sql,
  type KyselyConfig,
  type PostgresPool,
  type PostgresPoolClient,
  type TransactionBuilder,
} from 'kysely';
import { Migrator, type MigrationResultSet } from 'kysely/migration';
import pg from 'pg';
import { lockDataDir } from './data-dir-lock.ts';
import {
  pgliteQueueDatabase,
  postgresQueueDatabase,
  relayNotifications,
  type QueueDatabase,
} from './queue-database.ts';
import { migrations } from './migrations/index.ts';
import { MigrationFailedError, type StorePlace } from './store-failure.ts';
import type { Database } from './schema.ts';

export type Engine = 'postgres' | 'pglite';

export interface Store {
  readonly db: Kysely<Database>;
  readonly engine: Engine;
  /** The pool's connections: how many are held (checked out) now, and how many it may open. */
  connections(): { readonly held: number; readonly max: number };
  /** Asks the database about itself: for readiness and the doctor, which hold no database handle. */
  readonly probe: DatabaseProbe;
  /**
   * The queues' database, for BullMQ's PostgreSQL backend (queue-database.ts): made on first use,
   * closed with the store.
   */
  queueDatabase(): QueueDatabase;
  /**
   * An in-memory PGlite's data directory, as a tarball another in-memory store can start from
   * (`from`); undefined on PostgreSQL and on a PGlite in DATA_DIR.
   */
  readonly snapshot?: () => Promise<Blob>;
  close(): Promise<void>;
}

export type StoreTarget =
  | {
      readonly engine: 'postgres';
      readonly url: string;
      readonly poolSize?: number;
      /** Keep each connection's statements prepared (see `preparing`); on unless set to false. */
      readonly preparedStatements?: boolean;
    }
  | {
      readonly engine: 'pglite';
      readonly dataDir: string | undefined;
      readonly command: string;
      /**
       * With no dataDir: start from this data directory (another store's `snapshot`) rather than
       * from an empty cluster, which skips PGlite's initdb, most of the time opening one takes.
       */
      readonly from?: Blob;
    };

/** The settings that choose the store: DATABASE_URL and DATA_DIR, as the configuration holds them. */
export interface StoreSettings {
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
}

/** How a PostgreSQL store's pool is set up; PGlite always has its one connection. */
export type PostgresOptions = Pick<
  Extract<StoreTarget, { engine: 'postgres' }>,
  'poolSize' | 'preparedStatements'
>;

/**
 * The store an installation is configured for, chosen here alone: PostgreSQL when DATABASE_URL is
 * set, embedded PGlite in DATA_DIR otherwise, held for `command` while it is open.
 */
export function configuredStoreTarget(
  settings: StoreSettings,
  command: string,
  postgres: PostgresOptions = {},
): StoreTarget {
  return settings.databaseUrl === undefined
    ? { engine: 'pglite', dataDir: settings.dataDir, command }
    : { engine: 'postgres', url: settings.databaseUrl, ...postgres };
}

/** Statements one connection keeps prepared; past this, new statements run unnamed. */
const MAX_PREPARED_PER_CONNECTION = 250;

/** `SELECT *`, `"t".*` or `RETURNING *`: a result whose columns a later migration could change. */
const STAR = /(?:\.\*|\bselect\s+\*|\breturning\s+\*)/i;

/**
 * Runs every statement with parameters as a named (prepared) statement, so that each connection plans
 * it once instead of on every execution. Planning is most of what PostgreSQL spends on refhub's reads:
 * the full read of a referral (three joins, three correlated subqueries) costs about six times more
 * to plan than to run. A statement's name is a hash of its text, so the same SQL shares one name on
 * every connection. Statements that select `*` stay unnamed: a migration that adds a column would
 * otherwise fail them on connections that prepared them before ("cached plan must not change result
 * type"). Named statements are session state: behind PgBouncer in transaction mode they need
 * PgBouncer 1.21 or later with `max_prepared_statements` set, or DATABASE_PREPARED_STATEMENTS=false.
 */
function preparing(pool: pg.Pool): PostgresPool {
  // Each text's name, or null for a text that stays unnamed; decided once per text.
  const names = new Map<string, string | null>();
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (name === undefined) {
      name = STAR.test(text) ? null : `refhub_${createHash('sha1').update(text).digest('base64url')}`;
      if (names.size >= 10_000) names.clear();
      names.set(text, name);
    }
    return name;
  };
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    const prepared = new Set<string>();
    const query = (text: string, parameters: readonly unknown[]) => {
      const values = [...parameters];
      const name = values.length === 0 ? null : nameOf(text);
      if (name === null) return client.query(text, values);
      if (!prepared.has(name)) {
        if (prepared.size >= MAX_PREPARED_PER_CONNECTION) return client.query(text, values);
        prepared.add(name);
      }
      return client.query({ name, text, values });
    };
    return {
      // Kysely reads the backend's process ID to cancel a query; node-postgres has it untyped.
      get processID() {
        return (client as { processID?: number }).processID;
      },
      // Kysely's cursor overload is never used here (no cursor is configured).
      query: query as unknown as PostgresPoolClient['query'],
      release: (destroy?: boolean) => {
        client.release(destroy);
      },
    };
  };
  return {
    options: pool.options,
    async connect() {
      const client = await pool.connect();
      let wrapped = clients.get(client);
      if (wrapped === undefined) {
        wrapped = wrap(client);
        clients.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => pool.end(),
  };
}

/** Errors the store's driver raised: the only ones that may tell of a database outage. */
const raisedByStore = new WeakSet<object>();

function marked(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) raisedByStore.add(error);
  return error;
}

/**
 * Set for the code a transaction runs (see `GuardedKysely`), and for everything that code starts. A
 * statement such code sends to the pool, not to its transaction, waits for a connection of its own
 * while the transaction holds one: on PGlite, whose pool has its one connection, that wait never
 * ends, and every request after it waits behind it; on PostgreSQL, a pool full of such transactions
 * waits for itself. The pool refuses such a statement at once, with the stack that sent it.
 */
const insideTransaction = new AsyncLocalStorage<true>();

/** A statement sent to the pool from inside a transaction (see `insideTransaction`): a defect. */
export class StatementOutsideTransactionError extends Error {
  constructor() {
    super(
      'A statement was sent to the store from inside a transaction but not through it: it would wait ' +
        'for a connection while the transaction holds one. Send it through the transaction.',
    );
    this.name = 'StatementOutsideTransactionError';
  }
}

/** `builder`, running its transaction's code inside `insideTransaction`. */
function guardedTransaction(builder: TransactionBuilder<Database>): TransactionBuilder<Database> {
  return new Proxy(builder, {
    get(target, property) {
      if (property === 'execute') {
        return (callback: Parameters<TransactionBuilder<Database>['execute']>[0]) =>
          target.execute((trx) => insideTransaction.run(true, () => callback(trx)));
      }
      if (property === 'setIsolationLevel' || property === 'setAccessMode') {
        return (setting: never) => guardedTransaction(target[property](setting));
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Kysely, with every transaction's code marked (see `insideTransaction`). */
class GuardedKysely extends Kysely<Database> {
  override transaction(): TransactionBuilder<Database> {
    return guardedTransaction(super.transaction());
  }
}

/** A pool that counts the connections it has handed out and not yet had back. */
interface CountedPool extends PostgresPool {
  readonly held: () => number;
}

/**
 * Marks every error the pool raises, connecting or querying, as the store's own. An error's code does
 * not tell where it came from: a client that resets its upload reports ECONNRESET as a lost
 * connection to PostgreSQL does, and only the second is a database outage (see isDatabaseOutage).
 * Also refuses a connection to code inside a transaction (see `insideTransaction`), and counts the
 * connections held, which readiness reads to tell a busy database from one that does not answer.
 */
function attributed(pool: PostgresPool): CountedPool {
  let held = 0;
  // One wrapper per connection, as `preparing` keeps: Kysely keys its connection state by the client.
  const clients = new WeakMap<PostgresPoolClient, PostgresPoolClient>();
  const wrap = (client: PostgresPoolClient): PostgresPoolClient => {
    const query = (...args: unknown[]): unknown => {
      const result = (client.query as (...a: unknown[]) => unknown)(...args);
      return result instanceof Promise
        ? result.catch((error: unknown) => {
            throw marked(error);
          })
        : result;
    };
    return {
      get processID() {
        return client.processID;
      },
      query: query as PostgresPoolClient['query'],
      release: (destroy?: boolean) => {
        held -= 1;
        client.release(destroy);
      },
    };
  };
  return {
    options: pool.options,
    held: () => held,
    async connect() {
      if (insideTransaction.getStore() === true) throw new StatementOutsideTransactionError();
      const client = await pool.connect().catch((error: unknown) => {
        throw marked(error);
      });
      held += 1;
      let wrapped = clients.get(client);
      if (wrapped === undefined) {
        wrapped = wrap(client);
        clients.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => pool.end(),
  };
}

/** A Kysely over `pool` (guarded, see `insideTransaction`), and its count of connections held. */
function storeOver(pool: PostgresPool, max: number): Pick<Store, 'db' | 'connections'> {
  const counted = attributed(pool);
  const config: KyselyConfig = { dialect: new PostgresDialect({ pool: counted }) };
  return { db: new GuardedKysely(config), connections: () => ({ held: counted.held(), max }) };
}

/**
 * PGlite's own settings, beside its defaults. Its PostgreSQL keeps shared buffers inside its
 * WebAssembly memory and fills them as it starts, so PostgreSQL's default of 128 MB is 128 MB of
 * resident memory from the first moment. An embedded installation is small (docs/scaling.md), and a
 * page that is not in the buffers is read from the operating system's file cache, so 32 MB is enough
 * (docs/performance.md, "Memory").
 */
export const PGLITE_SETTINGS: Readonly<Record<string, string>> = { shared_buffers: '32MB' };

/**
 * Keeps WebAssembly on V8's baseline compiler (Liftoff), for the whole process, before PGlite's
 * PostgreSQL (9 MB of WebAssembly) is compiled. By default V8 recompiles the functions that run often
 * with its optimising compiler, and for one of PostgreSQL's largest functions (105 KB of WebAssembly)
 * that takes more than 600 MB of compiler memory for a moment: most of an embedded installation's
 * peak. refhub's statements ran as fast on Liftoff's code, measured under load (docs/performance.md,
 * "Memory"). V8 reads these flags when it compiles a module; Node lets them be set only on its own
 * command line, not in NODE_OPTIONS, so they are set here, where PGlite is opened.
 */
function keepWebAssemblyOnLiftoff(): void {
  v8.setFlagsFromString('--no-wasm-dynamic-tiering');
  v8.setFlagsFromString('--no-wasm-tier-up');
}

export async function openStore(target: StoreTarget): Promise<Store> {
  if (target.engine === 'postgres') {
    const max = target.poolSize ?? 10;
    const pool = new pg.Pool({
      connectionString: target.url,
      max,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      application_name: 'refhub',
    });
    // A client that loses its server (a crash, a failover, a terminated backend) emits 'error'; with
    // no listener that would end the process. Idle ones are the pool's; a checked-out one, held by a
    // transaction between statements, needs its own. The statement in flight, or the next one,
    // reports the failure to its caller, and the pool drops the broken client when it is released.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => {
      client.on('error', () => undefined);
    });
    const { db, connections } = storeOver(target.preparedStatements === false ? pool : preparing(pool), max);
    let queues: QueueDatabase | undefined;
    return {
      db,
      engine: 'postgres',
      connections,
      probe: databaseProbe(db),
      queueDatabase: () => (queues ??= postgresQueueDatabase(target.url)),
      close: async () => {
        try {
          await queues?.close();
        } finally {
          await db.destroy();
        }
      },
    };
  }
  // No dataDir means an in-memory database (tests).
  const release =
    target.dataDir === undefined ? () => undefined : lockDataDir(target.dataDir, target.command);
  try {
    // Loaded here, so that a PostgreSQL process never loads PGlite.
    const [{ PGlite }, { createPgConfig }] = await Promise.all([
      import('@electric-sql/pglite'),
      import('@electric-sql/pglite/node-postgres'),
    ]);
    keepWebAssemblyOnLiftoff();
    const options = {
      startParams: [
        ...PGlite.defaultStartParams,
        ...Object.entries(PGLITE_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
      ],
    };
    const client =
      target.dataDir === undefined
        ? new PGlite({ ...options, ...(target.from === undefined ? {} : { loadDataDir: target.from }) })
        : new PGlite(`${target.dataDir}/pgdata`, options);
    // Opening fails here, not at the first query, when the data directory is unusable.
    await client.waitReady;
    // PGlite speaks PostgreSQL's wire protocol to node-postgres, so both engines run the same
    // driver: the same types, the same errors and the same prepared statements (which keep PGlite
    // from planning the full read on every request). PGlite is one backend, so the pool holds one
    // connection: a transaction has it from BEGIN to COMMIT, and other statements wait their turn
    // instead of running inside it. It never closes for being idle: PGlite lives as long as the store.
    const pool = new pg.Pool(Object.assign(createPgConfig(client), { max: 1, idleTimeoutMillis: 0 }));
    pool.on('error', () => undefined);
    // The queues share the session (queue-database.ts): its notifications are theirs.
    const notifications = new EventEmitter();
    relayNotifications(pool, notifications);
    const { db, connections } = storeOver(preparing(pool), 1);
    let queues: QueueDatabase | undefined;
    return {
      db,
      engine: 'pglite',
      connections,
      probe: databaseProbe(db),
      ...(target.dataDir === undefined ? { snapshot: () => client.dumpDataDir('none') } : {}),
      queueDatabase: () =>
        (queues ??= pgliteQueueDatabase(pool, notifications, () => {
          if (insideTransaction.getStore() === true) throw new StatementOutsideTransactionError();
        })),
      close: async () => {
        try {
          await db.destroy();
          await client.close();
        } finally {
          release();
        }
      },
    };
  } catch (error) {
    release();
    throw error;
  }
}

/** Told as each migration of a run starts and ends (inside the run's one transaction). */
export interface MigrationProgress {
  started?(name: string): void;
  finished?(name: string, ms: number): void;
}

/** Every migration this refhub knows, in order. */
export const MIGRATION_NAMES: readonly string[] = Object.keys(migrations);

export function createMigrator(db: Kysely<Database>, progress: MigrationProgress = {}): Migrator {
  const timed = Object.fromEntries(
    Object.entries(migrations).map(([name, migration]) => [
      name,
      {
        ...migration,
        up: async (trx: Kysely<unknown>) => {
          progress.started?.(name);
          const start = performance.now();
          await migration.up(trx);
          progress.finished?.(name, performance.now() - start);
        },
      },
    ]),
  );
  return new Migrator({ db, provider: { getMigrations: () => Promise.resolve(timed) } });
}

/**
 * Applies every pending migration, in one transaction, telling `progress` as each starts and ends;
 * throws MigrationFailedError when one fails (the transaction is then rolled back). With nothing
 * pending it does not touch the migrator's bookkeeping, so a refhub older than the database's schema
 * (a rolling restart) starts without complaint.
 */
export async function migrateToLatest(
  db: Kysely<Database>,
  progress: MigrationProgress = {},
  place?: StorePlace,
): Promise<MigrationResultSet> {
  if ((await pendingMigrations(db)).length === 0) return { results: [] };
  const result = await createMigrator(db, progress).migrateToLatest();
  if (result.error !== undefined) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName;
    throw new MigrationFailedError(failed, result.error, place);
  }
  return result;
}

/** The migrations this refhub knows that the database has not applied, in order. */
export async function pendingMigrations(db: Kysely<Database>): Promise<string[]> {
  const list = await createMigrator(db).getMigrations();
  return list.filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/** True when every known migration has been applied (used by /readyz). */
export async function isMigrated(db: Kysely<Database>): Promise<boolean> {
  return (await pendingMigrations(db)).length === 0;
}

const UNREACHABLE_NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/**
 * SQLSTATEs of a server that is away or cannot take the work now: connection exceptions (class 08),
 * shutting down or starting up (57P01-57P03), out of connections or other resources (class 53),
 * and the transient answers a retry may pass (serialization failure, deadlock, lock wait bound).
 */
const TRANSIENT_SQLSTATE = /^(08...|57P0[1-3]|53...|40001|40P01|55P03)$/;
/** node-postgres reports a lost connection, and its pool a connect timeout, by message alone. */
const UNREACHABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed)/;

/**
 * Whether `error` means the database cannot do the work now (an outage, or a transient conflict a
 * retry passes) rather than a defect: such requests are answered 503 with Retry-After, not 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (UNREACHABLE_NETWORK_CODES.has(code) || TRANSIENT_SQLSTATE.test(code)))
      return true;
    if (typeof message === 'string' && UNREACHABLE_MESSAGE.test(message)) return true;
  }
  return false;
}

/**
 * Whether `error` is a database outage: raised by the store's driver (see `attributed`), itself or an
 * error it wraps, and of a kind isDatabaseUnavailable names. A network error of anything else, above
 * all of the client's own connection, is not the database's.
 */
export function isDatabaseOutage(error: unknown): boolean {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    if (raisedByStore.has(e)) return isDatabaseUnavailable(e);
  }
  return false;
}

export async function ping(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}

// How readiness and the doctor ask the database about itself: does it answer, is every migration
// applied, what is a server setting. Readiness asks on a connection of its own, so that it can tell a
// database whose every connection is in use from one that does not answer.
export interface DatabaseProbe {
  /** Resolves when the database answers a statement. */
  ping(): Promise<void>;
  /** Whether every migration is applied. */
  isMigrated(): Promise<boolean>;
  /** A server setting's current value (PostgreSQL's `current_setting`). */
  setting(name: string): Promise<string | undefined>;
  /** Runs `work` on a connection of its own, checked out of the pool for it. */
  onConnection<T>(work: (probe: Omit<DatabaseProbe, 'onConnection'>) => Promise<T>): Promise<T>;
}

function probeOver(db: Kysely<Database>): Omit<DatabaseProbe, 'onConnection'> {
  return {
    ping: () => ping(db),
    isMigrated: () => isMigrated(db),
    async setting(name) {
      const { rows } = await sql<{ value: string }>`select current_setting(${name}) as value`.execute(db);
      return rows[0]?.value;
    },
  };
}

/** The probe of the database `db`. */
export function databaseProbe(db: Kysely<Database>): DatabaseProbe {
  return {
    ...probeOver(db),
    onConnection: (work) => db.connection().execute((connection) => work(probeOver(connection))),
  };
}
