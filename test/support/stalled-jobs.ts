// How long the jobs of a killed worker take to come back, and what a test can read of it in Redis. A
// job that a dead worker left active returns to the queue through BullMQ's stalled check once its lock
// has expired, so a test that kills a worker waits as long as those settings say, never a fixed time.
// The forward worker's settings are the queue registry's (WORKER_DEFAULTS), and `jobLockTimings`
// reads what a running worker set in Redis, so that a test can check that the worker runs with the
// settings its bound assumes.
import { Redis } from 'ioredis';
import { WORKER_DEFAULTS } from '../../src/queue/registry.ts';

export interface JobLockSettings {
  /** How long a job's lock lives after each renewal (BullMQ's `lockDuration`). */
  readonly lockDurationMs: number;
  /** How often a stalled check may run, across all workers of the queue (BullMQ's `stalledInterval`). */
  readonly stalledIntervalMs: number;
}

/** The `ehr-forward` worker's settings, as the queue registry gives them. */
export const FORWARD_JOB_LOCKS: JobLockSettings = {
  lockDurationMs: WORKER_DEFAULTS['ehr-forward'].lockDuration,
  stalledIntervalMs: WORKER_DEFAULTS['ehr-forward'].stalledInterval,
};

/**
 * The longest from a worker's death until every job it held is back in the queue. Its locks outlive
 * it by at most a lock duration (each was renewed at most that long before). A job comes back at the
 * first stalled check that finds its lock gone after an earlier check marked it; checks run once per
 * interval, and one comes to nothing when a worker's timer fires just before the previous check's
 * marker expires: hence two intervals.
 */
export function stalledJobsBackWithinMs(settings: JobLockSettings): number {
  return settings.lockDurationMs + 2 * settings.stalledIntervalMs;
}

export interface JobLockTimings {
  /** The time left on the lock of each active job of the queue, in milliseconds. */
  readonly locksMs: readonly number[];
  /** The time left before the next stalled check may run, if a check has run lately. */
  readonly stalledCheckMs: number | undefined;
}

/**
 * What is left of the locks on `queue`'s active jobs and of its last stalled check's marker, read
 * from Redis. A lock just taken or renewed has a lock duration left, and a marker just set a stalled
 * interval, so neither can exceed the settings the worker runs with.
 */
export async function jobLockTimings(
  redisUrl: string,
  queuePrefix: string,
  queue: string,
): Promise<JobLockTimings> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const base = `{${queuePrefix}}:${queue}`;
    const lockKeys: string[] = [];
    let cursor = '0';
    do {
      const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${base}:*:lock`, 'COUNT', 1000);
      lockKeys.push(...keys);
      cursor = nextCursor;
    } while (cursor !== '0');
    const locksMs = (await Promise.all(lockKeys.map((key) => redis.pttl(key)))).filter((ms) => ms >= 0);
    const stalledCheck = await redis.pttl(`${base}:stalled-check`);
    return { locksMs, stalledCheckMs: stalledCheck >= 0 ? stalledCheck : undefined };
  } finally {
    redis.disconnect();
  }
}
