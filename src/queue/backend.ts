// Where the queues are: QUEUE_BACKEND. BullMQ runs on either of its two backends, and everything
// above this module is the same on both:
//
//   postgres  BullMQ's PostgreSQL backend, in the installation's own database (schema `bullmq`):
//             the embedded default on PGlite, and PostgreSQL alone. Nothing else to run or back up.
//   redis     Redis under QUEUE_PREFIX, each queue on a hash tag of its own: one server at REDIS_URL,
//             a Redis Cluster (REDIS_CLUSTER_NODES) or a primary Sentinels watch (REDIS_SENTINELS):
//             for the volumes docs/scaling.md gives it.
//
// A backend gives BullMQ's queues and workers their connection (`queue`, `worker`), says whether the
// queues can be reached (`ready`, `health`), and claims the queues for the installation where they
// could be shared (a Redis prefix; a database holds one installation, so its queues are its own).
import {
  createPostgresBackend,
  runMigrations,
  Queue,
  Worker,
  type PgQueryable,
  type PgQueryResult,
  type Processor,
  type WorkerOptions,
} from 'bullmq';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import {
  checkRedis,
  closeRedis,
  connected,
  connectRedis,
  QUEUE_UNAVAILABLE,
  redisTopologyOf,
  settled,
  topologyAddress,
  type ConnectionRole,
  type RedisConnection,
  type RedisSettings,
} from './connections.ts';
import { RETENTION } from './job-settings.ts';
import { moveLegacyQueues, type LegacyMove } from './legacy-queues.ts';
import { claimQueuePrefix, queueKeyPrefix, releaseQueuePrefix } from './prefix-claim.ts';

export type QueueBackendName = Config['queueBackend'];

export interface QueueHealth {
  readonly reachable: boolean;
  /** What was found, for the doctor and the dashboard: `maxmemory-policy noeviction`, a schema. */
  readonly detail: string | undefined;
  /** Why the queues cannot take work, for the log and /readyz; undefined when they can. */
  readonly problem: string | undefined;
}

/** The queues' database as the store hands it out (db/queue-database.ts). */
export interface QueueDatabase {
  /** BullMQ's connection: a pool shaped as node-postgres's (its `PgPool`). */
  readonly pool: object;
  /** A session of its own, for BullMQ's migrations. */
  session(): Promise<{
    query(text: string, params?: readonly unknown[]): Promise<{ rows: object[] }>;
    release(): void;
  }>;
  /** The schema BullMQ's tables and functions are in; every connection of `pool` searches it. */
  readonly schema: string;
  readonly address: string;
}

/** Creates or upgrades the queues' schema with BullMQ's own migrations, in one transaction. */
export async function migrateQueues(database: QueueDatabase): Promise<void> {
  const session = await database.session();
  try {
    // node-postgres's rows, which BullMQ reads by its own column names.
    const queryable: PgQueryable = {
      query: <R>(text: string, params?: readonly unknown[]) =>
        session.query(text, params) as Promise<PgQueryResult<R>>,
    };
    await runMigrations(queryable, database.schema);
  } finally {
    session.release();
  }
}

export interface QueueBackend {
  readonly name: QueueBackendName;
  /** Where the queues are, for the start's banner, the log and the doctor; never a password. */
  readonly address: string;
  /** A BullMQ queue on this backend, closed with it. */
  queue<P>(name: string): Queue<P>;
  /** A BullMQ worker on this backend; `options` are the worker's own (concurrency, lock, …). */
  worker<P, R>(
    name: string,
    processor: Processor<P, R>,
    options: Omit<WorkerOptions, 'connection'>,
  ): Worker<P, R>;
  /**
   * Waits briefly until the queues can be reached; an error coded QUEUE_UNAVAILABLE when they
   * cannot, so that a producer's call fails fast and its work waits in the outbox.
   */
  ready(timeoutMs?: number): Promise<void>;
  health(): Promise<QueueHealth>;
  /** Calls `listener` each time the queues are reachable again after an outage. */
  onRestored(listener: () => void): void;
  /**
   * Claims the queues for the installation, or renews its claim (prefix-claim.ts); throws
   * QueuePrefixTakenError when another installation holds them.
   */
  claim(installationId: string, leaseMs: number): Promise<void>;
  /** Gives the claim back if the installation holds it. */
  release(installationId: string): Promise<void>;
  /**
   * Moves the work an earlier release queued under the installation's one tag to each of `names`'s
   * own (legacy-queues.ts); nothing to do on a backend that never had it.
   */
  moveLegacy(names: readonly string[]): Promise<LegacyMove>;
  /** Closes the queues it made, and what it owns (a Redis connection); a worker closes itself. */
  close(): Promise<void>;
}

/** What an outage of the queues is called in the log's `outage` field: `redis`, or `queues`. */
export function outageName(backend: Pick<QueueBackend, 'name'>): string {
  return backend.name === 'redis' ? 'redis' : 'queues';
}

function unavailable(cause: unknown): Error {
  return Object.assign(
    new Error('the queues are unavailable (their database cannot be reached)', { cause }),
    {
      code: QUEUE_UNAVAILABLE,
    },
  );
}

/**
 * The queues in the installation's database. The database is the store's, opened and closed with it;
 * this backend only uses it. Its claim has nothing to do: another installation has a database, and so
 * queues, of its own.
 */
export function postgresQueueBackend(database: QueueDatabase, logger: Logger): QueueBackend {
  const restored = new Set<() => void>();
  const made: Queue[] = [];
  let down = false;
  const probe = async (): Promise<void> => {
    await (database.pool as PgQueryable).query('SELECT 1 FROM migration LIMIT 1');
  };
  return {
    name: 'postgres',
    address: database.address,
    queue: <P>(name: string) => {
      const queue = new Queue<P>(
        name,
        { connection: database.pool, defaultJobOptions: RETENTION.postgres },
        createPostgresBackend as never,
      );
      made.push(queue as Queue);
      return queue;
    },
    worker: <P, R>(name: string, processor: Processor<P, R>, options: Omit<WorkerOptions, 'connection'>) =>
      new Worker<P, R>(
        name,
        processor,
        { ...options, connection: database.pool },
        createPostgresBackend as never,
      ),
    async ready(timeoutMs = 2_000) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          probe(),
          new Promise<never>((_resolve, reject) => {
            timer = setTimeout(() => {
              reject(new Error(`no answer within ${timeoutMs} ms`));
            }, timeoutMs);
          }),
        ]);
      } catch (error) {
        if (!down)
          logger.warn({ err: { message: (error as Error).message } }, 'the queues cannot be reached');
        down = true;
        throw unavailable(error);
      } finally {
        clearTimeout(timer);
      }
      if (down) {
        down = false;
        for (const listener of restored) listener();
      }
    },
    async health() {
      try {
        await this.ready(3_000);
        return { reachable: true, detail: database.address, problem: undefined };
      } catch {
        return {
          reachable: false,
          detail: undefined,
          problem: `the queues cannot be reached (${database.address})`,
        };
      }
    },
    onRestored(listener) {
      restored.add(listener);
    },
    claim: () => Promise.resolve(),
    release: () => Promise.resolve(),
    moveLegacy: () => Promise.resolve({ moved: 0, schedulersRemoved: 0, left: 0 }),
    async close() {
      await Promise.allSettled(made.map((queue) => queue.close()));
    },
  };
}

/** Redis's address without its password. */
export function redisAddress(url: string): string {
  return topologyAddress({ kind: 'server', url });
}

/**
 * The queues in Redis as `settings` say (one server, a cluster, or Sentinels' primary), each under
 * its own tag within `queuePrefix`, on a connection of `role` (queue/connections.ts: a producer's
 * fails fast, a worker's rides out an outage). The backend owns its connection.
 */
export function redisQueueBackend(
  settings: RedisSettings & { readonly queuePrefix: string },
  role: ConnectionRole,
  logger: Logger,
): QueueBackend & { readonly redis: RedisConnection } {
  const topology = redisTopologyOf(settings);
  const redis = connectRedis(topology, role, logger);
  const prefix = settings.queuePrefix;
  const made: Queue[] = [];
  const queue = <P>(name: string) => {
    const created = new Queue<P>(name, {
      connection: redis,
      prefix: queueKeyPrefix(prefix, name),
      defaultJobOptions: RETENTION.redis,
    });
    made.push(created as Queue);
    return created;
  };
  return {
    name: 'redis',
    address: topologyAddress(topology),
    redis,
    queue,
    worker: <P, R>(name: string, processor: Processor<P, R>, options: Omit<WorkerOptions, 'connection'>) =>
      new Worker<P, R>(name, processor, {
        ...options,
        connection: redis,
        prefix: queueKeyPrefix(prefix, name),
      }),
    ready: (timeoutMs) => connected(redis, timeoutMs),
    health: async () => {
      const health = await checkRedis(redis, `${prefix}:readiness-probe`);
      const found = [
        health.topology,
        health.evictionPolicy === undefined ? undefined : `maxmemory-policy ${health.evictionPolicy}`,
      ].filter((part) => part !== undefined);
      return {
        reachable: health.reachable,
        detail: found.length === 0 ? undefined : found.join(', '),
        problem: health.problem,
      };
    },
    onRestored(listener) {
      let wasDown = false;
      redis.on('error', () => {
        wasDown = true;
      });
      redis.on('ready', () => {
        if (wasDown) listener();
        wasDown = false;
      });
    },
    async claim(installationId, leaseMs) {
      await connected(redis);
      await claimQueuePrefix(redis, prefix, installationId, leaseMs);
    },
    async release(installationId) {
      await connected(redis);
      await releaseQueuePrefix(redis, prefix, installationId);
    },
    async moveLegacy(names) {
      await connected(redis);
      const targets: Queue[] = [];
      try {
        return await moveLegacyQueues(redis, prefix, names, (name) => {
          const target = new Queue(name, {
            connection: redis,
            prefix: queueKeyPrefix(prefix, name),
            defaultJobOptions: RETENTION.redis,
          });
          targets.push(target);
          return target;
        });
      } finally {
        await Promise.allSettled(targets.map((target) => target.close()));
      }
    },
    async close() {
      // The queues begin to connect when they are built, and each then reads the server's version.
      // Closing in the middle of that would fail it and log a connection error after a command that
      // went well, so the connection and the queues are let finish starting first (connections.ts).
      await settled(redis);
      if (redis.status === 'ready') await Promise.allSettled(made.map((queue) => queue.waitUntilReady()));
      await Promise.allSettled(made.map((queue) => queue.close()));
      await closeRedis(redis);
    },
  };
}
