// Closing the producer says nothing when nothing went wrong. Its queues begin to connect as soon as
// they are built; a command that finishes before their first round trip (`refhub reconcile` with
// nothing to repair) closed the connection in the middle of its handshake, and ioredis reported the
// failed ready check as a connection error after a run that went well.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { createQueueProducer, type QueueProducer } from '../../src/queue/producer.ts';
import { testRedisUrl } from '../support/bridge.ts';

/** The queues write only their metadata under it, removed at the end. */
const PREFIX = `{producer-close-${randomUUID()}}`;

afterAll(async () => {
  const redis = new Redis(testRedisUrl());
  const keys = await redis.keys(`${PREFIX}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

function producerWithLog(redisUrl = testRedisUrl()): { producer: QueueProducer; lines: string[] } {
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
  const producer = createQueueProducer(
    { redisUrl, queuePrefix: PREFIX, ehrMaxAttempts: 3, webhookRetryScheduleMs: [] },
    logger,
  );
  return { producer, lines };
}

/** Resolves once the connection has ended: nothing it does after that can be logged. */
function ended(redis: Redis): Promise<void> {
  return redis.status === 'end' ? Promise.resolve() : new Promise((resolve) => redis.once('end', resolve));
}

describe('closing the producer', () => {
  it('logs nothing when it closes while its connection is still in its handshake', async () => {
    const { producer, lines } = producerWithLog();
    // The queues connect when they are built; `connect` is the socket open, before the ready check.
    await new Promise((resolve) => producer.redis.once('connect', resolve));
    const end = ended(producer.redis);
    await producer.close();
    await end;
    expect(lines).toEqual([]);
  });

  it('logs nothing when it closes at once, and nothing when it closes after work', async () => {
    const idle = producerWithLog();
    const idleEnd = ended(idle.producer.redis);
    await idle.producer.close();
    await idleEnd;

    const used = producerWithLog();
    expect(await used.producer.hasReminderSchedule('0190a0a0-0000-7000-8000-000000000001')).toBe(false);
    const usedEnd = ended(used.producer.redis);
    await used.producer.close();
    await usedEnd;
    expect([...idle.lines, ...used.lines]).toEqual([]);
  });

  it('still closes when Redis cannot be reached', async () => {
    const { producer } = producerWithLog('redis://127.0.0.1:1');
    await expect(producer.close()).resolves.toBeUndefined();
    expect(producer.redis.status).not.toBe('ready');
  });
});
