// The wait-times queue: one job scheduler that recomputes every offering's wait times on the
// installation's schedule (WAIT_TIMES_AT, in DISPLAY_TIME_ZONE), and a one-off job as a worker
// process starts, so that a fresh installation answers without waiting for the night. Its name, the
// job a run carries, what a run returns, the worker's settings, and the functions that set the
// schedule and ask for a run. A run computes everything from the database, so running twice does no
// harm: the scheduler is upserted under one ID, and the start's jobs are deduplicated while one waits.
import type { Queue } from 'bullmq';
import type { WorkerDefaults } from './job-settings.ts';

/** The wait-times queue's name. */
export const WAIT_TIMES_QUEUE = 'wait-times';

/** One run: what asked for it. No IDs, no patient data: a run computes every offering. */
export interface WaitTimesPayload {
  readonly trigger: 'schedule' | 'start';
}

/** What one run did: counts, never patient data (the dashboard shows it). */
export interface WaitTimesRun {
  readonly offerings: number;
  /** Offerings with enough referrals for their submit → accepted figure. */
  readonly withFigures: number;
}

/** When the scheduler runs: a daily time (`HH:MM`) in an IANA time zone. */
export interface WaitTimesSchedule {
  readonly at: string;
  readonly timeZone: string;
}

// One run at a time in a process: a run is one statement over the window, and two at once gain nothing.
export const WAIT_TIMES_WORKER_DEFAULTS = { concurrency: 1 } as const satisfies WorkerDefaults;

export type WaitTimesQueue = Queue<WaitTimesPayload>;

/** The installation's one wait-times scheduler. */
export const WAIT_TIMES_SCHEDULER_ID = 'wait-times';

const RUN_OPTIONS = { attempts: 3, backoff: { type: 'exponential', delay: 60_000 } } as const;

/** The cron pattern of a daily time: `02:30` runs at minute 30 of hour 2. */
export function dailyPattern(at: string): string {
  const [hours, minutes] = at.split(':').map(Number);
  return `${minutes ?? 0} ${hours ?? 0} * * *`;
}

/** Creates or replaces the scheduler (the same ID each time, so several processes make one). */
export async function scheduleWaitTimes(queue: WaitTimesQueue, schedule: WaitTimesSchedule): Promise<void> {
  await queue.upsertJobScheduler(
    WAIT_TIMES_SCHEDULER_ID,
    { pattern: dailyPattern(schedule.at), tz: schedule.timeZone },
    { name: 'wait-times', data: { trigger: 'schedule' }, opts: RUN_OPTIONS },
  );
}

/** Whether the installation's wait-times scheduler is in the queue. */
export async function hasWaitTimesSchedule(queue: WaitTimesQueue): Promise<boolean> {
  return (await queue.getJobScheduler(WAIT_TIMES_SCHEDULER_ID)) !== undefined;
}

/** Adds a run now, unless one added this way still waits or runs (several processes starting). */
export async function computeWaitTimesSoon(queue: WaitTimesQueue): Promise<void> {
  await queue.add(
    'wait-times',
    { trigger: 'start' },
    { ...RUN_OPTIONS, deduplication: { id: `${WAIT_TIMES_SCHEDULER_ID}.start` } },
  );
}
