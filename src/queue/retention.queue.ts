// The retention queue: one job scheduler whose firings run retention (services/retention/): the month
// partitions made ahead, and every month past its setting archived, verified and dropped. Its name,
// the job a firing carries (none of its own: the database and the settings say what is due), what a
// run returns, the worker's settings, and the function that makes sure the schedule exists at the
// configured interval (RETENTION_SWEEP_SECONDS).
import type { Queue } from 'bullmq';
import type { WorkerDefaults } from './job-settings.ts';

export const RETENTION_QUEUE = 'retention';

/** A firing of the run: it carries nothing. */
export type RetentionPayload = Readonly<Record<string, never>>;

/** What one run did, in counts (the dashboard shows it): no paths, no patient data. */
export interface RetentionRunDone {
  readonly partitionsMade: number;
  readonly referralsArchived: number;
  readonly partitionsDropped: number;
  readonly partitionsWaiting: number;
}

/** One run at a time: a run writes archives and drops partitions, which two at once would race for. */
export const RETENTION_WORKER_DEFAULTS = { concurrency: 1 } as const satisfies WorkerDefaults;

export type RetentionQueue = Queue<RetentionPayload>;

/** The one schedule of the run. */
export const RETENTION_SCHEDULER = 'retention.run';

/**
 * Makes sure the run is scheduled every `everyMs`: adds the schedule when it is missing (a fresh queue
 * store, or one that lost its data) or has another interval; returns whether it did.
 */
export async function ensureRetentionSchedule(queue: RetentionQueue, everyMs: number): Promise<boolean> {
  const current = await queue.getJobScheduler(RETENTION_SCHEDULER);
  if (current?.every === everyMs) return false;
  await queue.upsertJobScheduler(
    RETENTION_SCHEDULER,
    { every: everyMs },
    { name: 'run', data: {}, opts: { attempts: 3, backoff: { type: 'exponential', delay: 60_000 } } },
  );
  return true;
}
