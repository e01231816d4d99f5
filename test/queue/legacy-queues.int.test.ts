// An upgrade from the release that kept every queue under the installation's one hash tag: the work
// queued there is moved to each queue's own tag (queue/legacy-queues.ts), none of it abandoned. Jobs
// to run move under their IDs and options (a delayed one with the delay it has left, a forward
// deduplicated by its referral against one already queued the new way); job schedulers are removed
// for the reconciler to rebuild from the database; a job a process still holds is left until it lets
// go; an old queue with nothing left to run is removed.
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { redisQueueBackend, type QueueBackend } from '../../src/queue/backend.ts';
import { queueKeyPrefix } from '../../src/queue/prefix-claim.ts';
import {
  FORWARD_QUEUE,
  QUEUE_NAMES,
  REMINDERS_QUEUE,
  WEBHOOKS_QUEUE,
  forwardJobOptions,
} from '../../src/queue/registry.ts';
import { testRedisUrl } from '../support/bridge.ts';

const logger = createLogger({ logLevel: 'silent', env: 'test' });

describe('moving the queues of an earlier release', () => {
  const bare = `legacy-${randomUUID()}`;
  const prefix = `{${bare}}`;
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  let backend: QueueBackend;
  const legacy = (name: string) => new Queue(name, { connection: redis, prefix });

  beforeAll(() => {
    backend = redisQueueBackend({ redisUrl: testRedisUrl(), queuePrefix: prefix }, 'producer', logger);
  });
  afterAll(async () => {
    await backend.close();
    const keys = await redis.keys(`{${bare}[}:]*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('moves what is to run, leaves what a process holds, and removes the old queues once empty', async () => {
    const options = forwardJobOptions({ maxAttempts: 3 });
    const forwards = legacy(FORWARD_QUEUE);
    await forwards.add(
      'forward',
      { referralId: 'a', version: 1, requestId: 'r-a' },
      {
        ...options,
        jobId: 'a.v1',
        deduplication: { id: 'a' },
      },
    );
    await forwards.add(
      'forward',
      { referralId: 'b', version: 1, requestId: 'r-b' },
      {
        ...options,
        jobId: 'b.v1',
        priority: 5,
      },
    );
    await forwards.add(
      'forward',
      { referralId: 'c', version: 1, requestId: 'r-c' },
      {
        ...options,
        jobId: 'c.v1',
        delay: 3_600_000,
      },
    );
    // Referral a was queued the new way already (the reconciler, say): its old job adds nothing.
    const current = backend.queue(FORWARD_QUEUE);
    await current.add(
      'forward',
      { referralId: 'a', version: 2, requestId: 'r-a2' },
      {
        ...options,
        jobId: 'a.v2',
        deduplication: { id: 'a' },
      },
    );
    const reminders = legacy(REMINDERS_QUEUE);
    await reminders.upsertJobScheduler('reminder.x', { every: 3_600_000 }, { name: 'reminder', data: {} });
    // A webhook delivery a process of the earlier release is running: it holds the job's lock.
    const webhooks = legacy(WEBHOOKS_QUEUE);
    await webhooks.add('deliver', { eventId: 'e', subscriptionId: 's' }, { jobId: 'e.s' });
    const running = new Worker(WEBHOOKS_QUEUE, null, { connection: redis, prefix, autorun: false });
    const held = await running.getNextJob('old-release');
    expect(held.id).toBe('e.s');

    // Three forwards and the reminder the scheduler had already made due (its first, at once).
    expect(await backend.moveLegacy(QUEUE_NAMES)).toEqual({ moved: 4, schedulersRemoved: 1, left: 1 });

    expect(await current.getJobState('a.v2')).toBe('waiting');
    expect(await current.getJob('a.v1')).toBeUndefined();
    const b = await current.getJob('b.v1');
    expect(await b?.getState()).toBe('prioritized');
    expect(b?.opts.priority).toBe(5);
    expect(b?.data).toEqual({ referralId: 'b', version: 1, requestId: 'r-b' });
    expect(b?.opts.attempts).toBe(options.attempts);
    const c = await current.getJob('c.v1');
    expect(await c?.getState()).toBe('delayed');
    expect(c?.delay).toBeGreaterThan(0);
    expect(c?.delay).toBeLessThanOrEqual(3_600_000);
    // The old forward queue had nothing left to run, so it is gone; the reminder scheduler too.
    expect(
      await redis.exists(
        ...['meta', 'wait', 'delayed', 'prioritized'].map((k) => `${prefix}:${FORWARD_QUEUE}:${k}`),
      ),
    ).toBe(0);
    expect(await reminders.getJobSchedulersCount()).toBe(0);
    // The reminder already due runs the new way; its schedule is the reconciler's to rebuild.
    const currentReminders = backend.queue(REMINDERS_QUEUE);
    expect(await currentReminders.getJobCounts('waiting', 'delayed')).toEqual({ waiting: 1, delayed: 0 });
    expect(await currentReminders.getJobSchedulersCount()).toBe(0);
    // The held delivery stays where its process runs it.
    expect(await webhooks.getJobState('e.s')).toBe('active');

    // That process is gone (its lock lapsed): the next move takes the job, and then the old queue.
    await running.close(true);
    await redis.del(`${prefix}:${WEBHOOKS_QUEUE}:e.s:lock`);
    expect(await backend.moveLegacy(QUEUE_NAMES)).toEqual({ moved: 1, schedulersRemoved: 0, left: 0 });
    expect(await backend.queue(WEBHOOKS_QUEUE).getJobState('e.s')).toBe('waiting');
    // Nothing is left under the old tag but the claim's key (none here): a move is then a no-op.
    expect(await redis.keys(`${prefix}:*`)).toEqual([]);
    expect(await backend.moveLegacy(QUEUE_NAMES)).toEqual({ moved: 0, schedulersRemoved: 0, left: 0 });
    // Every queue's keys are under its own tag.
    const moved = await redis.keys(`${queueKeyPrefix(prefix, WEBHOOKS_QUEUE)}:*`);
    expect(moved.length).toBeGreaterThan(0);

    await Promise.all([forwards.close(), reminders.close(), webhooks.close()]);
  });
});
