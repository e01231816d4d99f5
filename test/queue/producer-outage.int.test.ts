// During a Redis outage the producer's connection fails again and again (every reconnect attempt,
// every call), and each queue reports each failure. The log says it once when the outage starts and
// once, with the count, when it ends: an operator reads two lines, not one per failed attempt. This
// file stops Redis, so it runs a Redis of its own.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import { createLogger } from '../../src/logger.ts';
import { redisQueueBackend } from '../../src/queue/backend.ts';
import { createQueueProducer, type QueueProducer } from '../../src/queue/producer.ts';
import { openTestStore } from '../support/engines.ts';
import { storesOf } from '../support/stores.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

describe('the producer during a Redis outage', () => {
  let redis: RedisServer;
  let producer: QueueProducer;
  let store: Store;
  const lines: { msg: string; outage?: string; failures?: number }[] = [];

  beforeAll(async () => {
    redis = await startRedisServer();
    const logger = createLogger(
      { logLevel: 'info', env: 'test' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
          done();
        },
      }),
    );
    store = await openTestStore('pglite');
    producer = createQueueProducer(
      { ehrMaxAttempts: 3, webhookRetryScheduleMs: [] },
      redisQueueBackend({ redisUrl: redis.url, queuePrefix: '{outage-log}' }, 'producer', logger),
      storesOf(store.db).forwarding.backlog,
      logger,
    );
    await producer.enqueueForward({
      referralId: '0190a0a0-0000-7000-8000-000000000001',
      version: 1,
      requestId: 'r',
      institution: 'hci:S1234A',
    });
  });
  afterAll(async () => {
    await producer.close();
    await redis.close();
    await store.close();
  });

  it('logs one line when the queues go away and one with the count when they are back', async () => {
    await redis.stop();
    const failures = [];
    for (let i = 0; i < 5; i++) {
      failures.push(
        producer
          .enqueueForward({
            referralId: '0190a0a0-0000-7000-8000-000000000002',
            version: i + 1,
            institution: 'hci:S1234A',
            requestId: 'r',
          })
          .then(
            () => 'enqueued',
            () => 'failed',
          ),
      );
    }
    expect(await Promise.all(failures)).toEqual(Array.from({ length: 5 }, () => 'failed'));
    // Reconnect attempts go on meanwhile, each one an error on every queue.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const down = lines.filter((l) => l.msg.startsWith('queue error'));
    expect(down).toHaveLength(1);
    expect(down[0]).toMatchObject({ outage: 'redis' });

    await redis.start();
    for (let i = 0; i < 50 && !lines.some((l) => l.msg === 'the queues are reachable again'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const up = lines.filter((l) => l.msg === 'the queues are reachable again');
    expect(up).toHaveLength(1);
    expect(up[0]!.failures).toBeGreaterThan(1);
    expect(lines.filter((l) => l.msg.startsWith('queue error'))).toHaveLength(1);
  });
});
