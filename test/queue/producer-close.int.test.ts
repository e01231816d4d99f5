// Closing the producer says nothing when nothing went wrong. Its queues begin to connect as soon as
// they are built; a command that finishes before their first round trip (`refhub reconcile` with
// nothing to repair) closed the connection in the middle of its handshake, and ioredis reported the
// failed ready check as a connection error after a run that went well.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import { createLogger } from '../../src/logger.ts';
import { redisQueueBackend } from '../../src/queue/backend.ts';
import type { RedisConnection } from '../../src/queue/connections.ts';
import { createQueueProducer, type QueueProducer } from '../../src/queue/producer.ts';
import { testRedisUrl } from '../support/bridge.ts';
import { openTestStore } from '../support/engines.ts';
import { storesOf } from '../support/stores.ts';

/** The queues write only their metadata under it, removed at the end. */
const PREFIX = `{producer-close-${randomUUID()}}`;

/** The database the forward order's backlog is in. */
let store: Store;
beforeAll(async () => {
  store = await openTestStore('pglite');
});

afterAll(async () => {
  await store.close();
  const redis = new Redis(testRedisUrl());
  const keys = await redis.keys(`${PREFIX}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

function producerWithLog(redisUrl = testRedisUrl()): {
  producer: QueueProducer;
  redis: RedisConnection;
  lines: string[];
} {
  const lines: string[] = [];
  const logger = createLogger(
    { logLevel: 'info', env: 'test' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  const backend = redisQueueBackend({ redisUrl, queuePrefix: PREFIX }, 'producer', logger);
  const producer = createQueueProducer(
    { ehrMaxAttempts: 3, webhookRetryScheduleMs: [] },
    backend,
    storesOf(store.db).forwarding.backlog,
    logger,
  );
  return { producer, redis: backend.redis, lines };
}

/** Resolves once the connection has ended: nothing it does after that can be logged. */
function ended(redis: RedisConnection): Promise<void> {
  return redis.status === 'end' ? Promise.resolve() : new Promise((resolve) => redis.once('end', resolve));
}

describe('closing the producer', () => {
  it('logs nothing when it closes while its connection is still in its handshake', async () => {
    const { producer, redis, lines } = producerWithLog();
    // The queues connect when they are built; `connect` is the socket open, before the ready check.
    await new Promise((resolve) => redis.once('connect', resolve));
    const end = ended(redis);
    await producer.close();
    await end;
    expect(lines).toEqual([]);
  });

  it('logs nothing when it closes at once, and nothing when it closes after work', async () => {
    const idle = producerWithLog();
    const idleEnd = ended(idle.redis);
    await idle.producer.close();
    await idleEnd;

    const used = producerWithLog();
    expect(await used.producer.hasReminderSchedule('0190a0a0-0000-7000-8000-000000000001')).toBe(false);
    const usedEnd = ended(used.redis);
    await used.producer.close();
    await usedEnd;
    expect([...idle.lines, ...used.lines]).toEqual([]);
  });

  it('still closes when Redis cannot be reached', async () => {
    const { producer, redis } = producerWithLog('redis://127.0.0.1:1');
    await expect(producer.close()).resolves.toBeUndefined();
    expect(redis.status).not.toBe('ready');
  });
});
