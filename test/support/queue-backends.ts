// The queues on each backend (QUEUE_BACKEND), for tests of the queue layer: BullMQ's PostgreSQL backend
// in a fresh database (PGlite or PostgreSQL), or Redis under a fresh prefix, each with a store for
// the forward order's backlog. Closing removes what the bed made.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Engine, Store } from '../../src/db/database.ts';
import { createLogger, type Logger } from '../../src/logger.ts';
import {
  migrateQueues,
  postgresQueueBackend,
  redisQueueBackend,
  type QueueBackend,
  type QueueBackendName,
} from '../../src/queue/backend.ts';
import type { ConnectionRole } from '../../src/queue/connections.ts';
import { createQueueProducer, type QueueProducer, type QueueSettings } from '../../src/queue/producer.ts';
import { testRedisUrl } from './bridge.ts';
import { openTestStore } from './engines.ts';
import { storesOf } from './stores.ts';

export const QUEUE_BACKEND_NAMES: readonly QueueBackendName[] = ['postgres', 'redis'];

export interface QueueBed {
  readonly name: QueueBackendName;
  readonly store: Store;
  readonly backlog: ReturnType<typeof storesOf>['forwarding']['backlog'];
  /** A new backend; the bed closes it. */
  backend(role: ConnectionRole): QueueBackend;
  /** A producer over a new backend; the bed closes it. */
  producer(settings?: Partial<QueueSettings>): QueueProducer;
  close(): Promise<void>;
}

export interface QueueBedOptions {
  /** The database's engine (the postgres backend's queues are in it): PGlite unless given. */
  readonly engine?: Engine;
  readonly redisUrl?: string;
  readonly logger?: Logger;
}

export async function openQueueBed(name: QueueBackendName, options: QueueBedOptions = {}): Promise<QueueBed> {
  const logger = options.logger ?? createLogger({ logLevel: 'silent', env: 'test' });
  const store = await openTestStore(options.engine ?? 'pglite');
  const redisUrl = options.redisUrl ?? testRedisUrl();
  const queuePrefix = `{test-${randomUUID()}}`;
  if (name === 'postgres') await migrateQueues(store.queueDatabase());
  const opened: { close(): Promise<void> }[] = [];
  const backend = (role: ConnectionRole): QueueBackend => {
    const made =
      name === 'postgres'
        ? postgresQueueBackend(store.queueDatabase(), logger)
        : redisQueueBackend({ redisUrl, queuePrefix }, role, logger);
    opened.push(made);
    return made;
  };
  const backlog = storesOf(store.db).forwarding.backlog;
  return {
    name,
    store,
    backlog,
    backend,
    producer: (settings = {}) =>
      createQueueProducer(
        { ehrMaxAttempts: 3, webhookRetryScheduleMs: [], ...settings },
        backend('producer'),
        backlog,
        logger,
      ),
    async close() {
      await Promise.allSettled(opened.map((b) => b.close()));
      if (name === 'redis') {
        const redis = new Redis(redisUrl);
        try {
          // The claim under the installation's tag, each queue under its own (`{test-…:<queue>}`).
          const keys = await redis.keys(`${queuePrefix.slice(0, -1)}[}:]*`);
          if (keys.length > 0) await redis.del(...keys);
        } finally {
          redis.disconnect();
        }
      }
      await store.close();
    },
  };
}
