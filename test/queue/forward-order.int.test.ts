// The forward queue's order (queue/forward.queue.ts): each forward is ranked in its institution's
// backlog, a started or coalesced one leaves it, old entries stop counting, and the producer adds
// each job with its rank as its priority, counted as waiting.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import {
  forgetForwards,
  ORDER_HORIZON_MS,
  rankForwards,
  type QueuedForward,
} from '../../src/queue/forward.queue.ts';
import { createQueueProducer, type QueueProducer } from '../../src/queue/producer.ts';
import { forwardJobId, QUEUE_NAMES } from '../../src/queue/registry.ts';
import { testRedisUrl } from '../support/bridge.ts';

const A = 'hci:S1234A';
const B = 'hci:S2345B';

function forward(institution: string, version = 1): QueuedForward {
  return { referralId: randomUUID(), version, requestId: 'order-test', institution };
}

describe('the forward queue’s order', () => {
  let redis: Redis;
  let producer: QueueProducer;
  const prefix = `{test-order-${randomUUID()}}`;

  beforeAll(() => {
    redis = new Redis(testRedisUrl());
    producer = createQueueProducer(
      { redisUrl: testRedisUrl(), queuePrefix: prefix, ehrMaxAttempts: 3, webhookRetryScheduleMs: [] },
      createLogger({ logLevel: 'silent', env: 'test' }),
    );
  });
  afterAll(async () => {
    await Promise.all(QUEUE_NAMES.map((name) => producer.queues[name].obliterate({ force: true })));
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await producer.close();
    redis.disconnect();
  });

  it('ranks each forward in its own institution’s backlog, and a started one leaves it', async () => {
    const p = `{rank-${randomUUID()}}`;
    const first = [forward(A), forward(A), forward(B), forward(A)];
    expect(await rankForwards(redis, p, first, Date.now())).toEqual([1, 2, 1, 3]);
    const [a1] = first;
    await forgetForwards(redis, p, [{ institution: A, jobId: forwardJobId(a1!.referralId, a1!.version) }]);
    expect(await rankForwards(redis, p, [forward(A), forward(B)], Date.now())).toEqual([3, 2]);
    // Ranked again under the same job ID, a forward still waiting keeps its one entry.
    const again = first[1]!;
    expect(await rankForwards(redis, p, [again], Date.now())).toEqual([3]);
    await redis.del(`${p}:forward-backlog:${A}`, `${p}:forward-backlog:${B}`);
  });

  it('stops counting an entry once it is older than the horizon, and the key expires', async () => {
    const p = `{horizon-${randomUUID()}}`;
    const now = Date.now();
    expect(await rankForwards(redis, p, [forward(A), forward(A)], now - ORDER_HORIZON_MS - 1)).toEqual([
      1, 2,
    ]);
    expect(await rankForwards(redis, p, [forward(A)], now)).toEqual([1]);
    const ttl = await redis.pttl(`${p}:forward-backlog:${A}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(ORDER_HORIZON_MS);
    await redis.del(`${p}:forward-backlog:${A}`);
  });

  it('adds each job with its rank as its priority, counted as waiting', async () => {
    const b = [forward(B), forward(B), forward(B)];
    const a = forward(A);
    await producer.enqueueForwards(b);
    await producer.enqueueForward(a);
    const queue = producer.queues['ehr-forward'];
    const priority = async (f: QueuedForward) =>
      (await queue.getJob(forwardJobId(f.referralId, f.version)))?.opts.priority;
    expect(await Promise.all([...b, a].map(priority))).toEqual([1, 2, 3, 1]);
    // BullMQ keeps them apart from its plain waiting list; the counts show them as waiting.
    expect(await queue.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 0, prioritized: 4 });
    expect(await producer.jobCounts('ehr-forward')).toMatchObject({ waiting: 4, active: 0 });
  });

  it('takes a forward coalesced into its referral’s waiting job out of the backlog', async () => {
    const first = forward(A);
    await producer.enqueueForward(first);
    const rankBefore = await redis.zcard(`${prefix}:forward-backlog:${A}`);
    // The referral changed again while its job waits: the waiting job sends the latest, nothing is added.
    await producer.enqueueForward({ ...first, version: 2 });
    expect(await producer.queues['ehr-forward'].getJob(forwardJobId(first.referralId, 2))).toBeUndefined();
    expect(await redis.zcard(`${prefix}:forward-backlog:${A}`)).toBe(rankBefore);
  });
});
