// The queues' database: with QUEUE_BACKEND=postgres, BullMQ's PostgreSQL backend keeps the jobs in
// the installation's own database, in a schema of their own (`bullmq`), beside refhub's tables. This
// module hands BullMQ what it takes as its connection: an object shaped as a `pg.Pool`.
//
// BullMQ sends every statement of its own as one call of a stored function or one query, on the
// pool, and keeps one more connection per queue or worker to LISTEN for new jobs. Here:
//
// - On PGlite there is one database session in the process, the store's (database.ts): a transaction
//   holds it from BEGIN to COMMIT. BullMQ's statements go through that same pool, so they wait for a
//   transaction to end instead of running inside it (a statement sent to PGlite beside the pool, as
//   a second client over pglite-socket would send it, could land in another client's transaction and
//   commit or roll back with it). Each runs with the search path set to the queues' schema and put
//   back after it, since the session's own path is refhub's. LISTEN is issued on that session, and
//   PGlite hands the notifications to the pool's one client, from which they go to every listener.
// - On PostgreSQL the queues have a pool of their own whose connections search the queues' schema,
//   and one dedicated connection LISTENs for all of the process's queues and workers (BullMQ would
//   otherwise hold one pooled connection per worker). When it is lost, every listener is told; BullMQ
//   asks for a new one, which connects again.
//
// BullMQ's own migrations create and upgrade the schema, in one transaction on a `session` of their
// own, before any queue is used (queue/backend.ts runs them). This module does not load BullMQ: the
// shapes below are the parts of node-postgres's that BullMQ's backend uses.
import { EventEmitter } from 'node:events';
import pg from 'pg';

/** The schema that holds BullMQ's tables and functions, in the installation's database. */
export const QUEUE_SCHEMA = 'bullmq';

type Row = pg.QueryResultRow;

type Run = <R extends Row = Row>(text: string, params?: readonly unknown[]) => Promise<pg.QueryResult<R>>;

/** One session for a while: a migration's (its statements share one connection until released). */
export interface Session {
  readonly query: Run;
  release(): void;
}

/** A client as BullMQ checks one out of its pool, to LISTEN on. */
interface PoolClient extends EventEmitter {
  readonly query: Run;
  release(destroy?: boolean): void;
}

/** A pool as BullMQ's PostgreSQL backend takes one (its `PgPool`). */
export interface QueuePool extends EventEmitter {
  readonly options: { readonly keepAlive: boolean };
  readonly query: Run;
  connect(): Promise<PoolClient>;
  end(): Promise<void>;
}

export interface QueueDatabase {
  /** What BullMQ's PostgreSQL backend takes as its connection. */
  readonly pool: QueuePool;
  /** A session of its own, for BullMQ's migrations of the queues' schema. */
  session(): Promise<Session>;
  /** The schema that holds BullMQ's tables and functions: QUEUE_SCHEMA. */
  readonly schema: string;
  /** Where the queues are, for logs and the doctor: the engine and the schema, never a password. */
  readonly address: string;
  close(): Promise<void>;
}

/** The one connection that LISTENs: its statements, its notifications and the news of its loss. */
interface Listener {
  readonly query: Run;
  readonly events: EventEmitter;
}

/**
 * A LISTEN client as BullMQ holds one: it runs its statements on the shared listener, passes on the
 * listener's notifications while it is held, and is told when the listener is lost.
 */
function listenClient(listener: () => Promise<Listener>): Promise<PoolClient> {
  return listener().then(({ query, events }) => {
    const client = new EventEmitter();
    const notify = (message: unknown) => client.emit('notification', message);
    const lost = (error: Error) => {
      // BullMQ's handler releases this client and asks for another: listen again then.
      if (client.listenerCount('error') > 0) client.emit('error', error);
    };
    events.on('notification', notify);
    events.once('lost', lost);
    return Object.assign(client, {
      query,
      release() {
        events.off('notification', notify);
        events.off('lost', lost);
        client.removeAllListeners();
      },
    });
  });
}

/** BullMQ's pool over `run` (each statement), `session` (a migration's) and the shared listener. */
function queuePool(run: Run, listener: () => Promise<Listener>): QueuePool {
  return Object.assign(new EventEmitter(), {
    // TCP keepalive is on for the PostgreSQL listener, and PGlite's has no socket to lose: BullMQ may
    // then let an idle worker wait for a notification for as long as it likes.
    options: { keepAlive: true },
    query: run,
    // BullMQ checks out a client only to LISTEN (its migrations run on a `session`).
    connect: () => listenClient(listener),
    end: () => Promise.resolve(),
  });
}

/**
 * Passes on every notification the pool's clients receive to `events` (PGlite's one session: its
 * pool's one client receives them all). Called as the pool is made, before its first connection.
 */
export function relayNotifications(pool: pg.Pool, events: EventEmitter): void {
  pool.on('connect', (client) => {
    client.on('notification', (message) => events.emit('notification', message));
  });
}

/**
 * The queues' database over PGlite's one session, `pool` (the store's pool, of one connection), whose
 * notifications `relayNotifications` passes on to `events`. `guard` throws when a statement comes
 * from inside one of the store's transactions, which would wait for the session that transaction
 * holds (database.ts, `insideTransaction`).
 */
export function pgliteQueueDatabase(pool: pg.Pool, events: EventEmitter, guard: () => void): QueueDatabase {
  const inQueueSchema: Run = async <R extends Row>(text: string, params?: readonly unknown[]) => {
    guard();
    const client = await pool.connect();
    try {
      await client.query(`SET search_path TO ${QUEUE_SCHEMA}`);
      return await client.query<R>(text, params as unknown[]);
    } finally {
      await client.query('RESET search_path').then(
        () => {
          client.release();
        },
        (error: unknown) => {
          client.release(error as Error);
        },
      );
    }
  };
  const session = async (): Promise<Session> => {
    guard();
    const client = await pool.connect();
    return {
      query: <R extends Row>(text: string, params?: readonly unknown[]) =>
        client.query<R>(text, params as unknown[]),
      release: () => {
        client.release();
      },
    };
  };
  return {
    pool: queuePool(inQueueSchema, () => Promise.resolve({ query: inQueueSchema, events })),
    session,
    schema: QUEUE_SCHEMA,
    address: `the embedded database, schema ${QUEUE_SCHEMA}`,
    close: () => Promise.resolve(),
  };
}

/** The queues' pool size on PostgreSQL: BullMQ's statements are short, one call each. */
const QUEUE_POOL_SIZE = 10;

/** The queues' database on PostgreSQL at `url`: a pool of its own and one listening connection. */
export function postgresQueueDatabase(url: string): QueueDatabase {
  const config: pg.PoolConfig = {
    connectionString: url,
    options: `-c search_path=${QUEUE_SCHEMA}`,
    application_name: 'refhub-queues',
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  };
  const pool = new pg.Pool({ ...config, max: QUEUE_POOL_SIZE });
  // An idle client that loses its server must not end the process; the next statement reports it.
  pool.on('error', () => undefined);
  const events = new EventEmitter();
  let listening: Promise<pg.Client> | undefined;
  let closed = false;
  const connectListener = (): Promise<pg.Client> => {
    listening ??= (async () => {
      const client = new pg.Client({ ...config, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
      client.on('notification', (message) => events.emit('notification', message));
      client.on('error', (error) => {
        listening = undefined;
        void client.end().catch(() => undefined);
        events.emit('lost', error);
      });
      try {
        await client.connect();
      } catch (error) {
        listening = undefined;
        throw error;
      }
      return client;
    })();
    return listening;
  };
  const listener = async (): Promise<Listener> => {
    if (closed) throw new Error('the queues’ database is closed');
    const client = await connectListener();
    return {
      query: <R extends Row>(text: string, params?: readonly unknown[]) =>
        client.query<R>(text, params as unknown[]),
      events,
    };
  };
  const session = async (): Promise<Session> => {
    const client = await pool.connect();
    return {
      query: <R extends Row>(text: string, params?: readonly unknown[]) =>
        client.query<R>(text, params as unknown[]),
      release: () => {
        client.release();
      },
    };
  };
  const { host, pathname } = new URL(url);
  return {
    pool: queuePool(
      <R extends Row>(text: string, params?: readonly unknown[]) => pool.query<R>(text, params as unknown[]),
      listener,
    ),
    session,
    schema: QUEUE_SCHEMA,
    address: `PostgreSQL at ${host}${pathname}, schema ${QUEUE_SCHEMA}`,
    async close() {
      closed = true;
      const client = await listening?.catch(() => undefined);
      listening = undefined;
      await client?.end().catch(() => undefined);
      await pool.end();
    },
  };
}
