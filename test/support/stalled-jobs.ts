// How long the jobs of a killed worker take to come back, and what a test can read of it where the
// queues are (Redis, or BullMQ's tables in PostgreSQL). A
// job that a dead worker left active returns to the queue through BullMQ's stalled check once its lock
// has expired, so a test that kills a worker waits as long as those settings say, never a fixed time.
// The forward worker's settings are the queue registry's (WORKER_DEFAULTS), and `jobLockTimings`
// reads what a running worker set, so that a test can check that the worker runs with the
// settings its bound assumes.
import { Redis } from 'ioredis';
import pg from 'pg';
import { queueKeyPrefix } from '../../src/queue/prefix-claim.ts';
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

/** Where a test reads the queues: Redis under a prefix, or the `bullmq` schema of a PostgreSQL database. */
export type QueuePlace =
  { readonly redisUrl: string; readonly queuePrefix: string } | { readonly databaseUrl: string };

/**
 * What is left of the locks on `queue`'s active jobs and of its last stalled check's marker. A lock
 * just taken or renewed has a lock duration left, and a marker just set a stalled interval, so neither
 * can exceed the settings the worker runs with. In PostgreSQL, BullMQ keeps each lock's expiry on its
 * job row and the last stalled check's time in its `meta` table; the worker reckons both from its own
 * clock, which is this machine's.
 */
export async function jobLockTimings(
  place: QueuePlace,
  queue: string,
  stalledIntervalMs: number,
): Promise<JobLockTimings> {
  return 'databaseUrl' in place
    ? databaseLockTimings(place.databaseUrl, queue, stalledIntervalMs)
    : redisLockTimings(place.redisUrl, place.queuePrefix, queue);
}

async function databaseLockTimings(
  databaseUrl: string,
  queue: string,
  stalledIntervalMs: number,
): Promise<JobLockTimings> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const locks = await client.query<{ locked_until_ms: string }>(
      `SELECT locked_until_ms FROM bullmq.job
        WHERE queue = $1 AND state = 'active' AND locked_until_ms IS NOT NULL`,
      [queue],
    );
    const check = await client.query<{ value: string }>(
      `SELECT value FROM bullmq.meta WHERE queue = $1 AND field = 'stalled-check'`,
      [queue],
    );
    const now = Date.now();
    const locksMs = locks.rows.map((r) => Number(r.locked_until_ms) - now).filter((ms) => ms >= 0);
    const nextCheck =
      check.rows[0] === undefined ? undefined : Number(check.rows[0].value) + stalledIntervalMs - now;
    return { locksMs, stalledCheckMs: nextCheck !== undefined && nextCheck >= 0 ? nextCheck : undefined };
  } finally {
    await client.end();
  }
}

async function redisLockTimings(
  redisUrl: string,
  queuePrefix: string,
  queue: string,
): Promise<JobLockTimings> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const base = `${queueKeyPrefix(queuePrefix, queue)}:${queue}`;
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
