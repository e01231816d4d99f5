// The triage-overdue queue: one job scheduler whose firings sweep the referrals whose triage has
// passed its due time (services/triage-overdue.service.ts). Its name, the job a firing carries (none of
// its own: the database says what is due), what a firing returns, the worker's settings, and the
// function that makes sure the schedule exists at the configured interval.
import type { Queue } from 'bullmq';
import type { WorkerDefaults } from './job-settings.ts';

export const TRIAGE_OVERDUE_QUEUE = 'triage-overdue-sweep';

/** A firing of the sweep: it carries nothing, and reads what is due from the database. */
export type TriageOverduePayload = Readonly<Record<string, never>>;

/** What one sweep did: how many referrals it said were overdue. */
export interface SweptOverdue {
  readonly marked: number;
}

/** One sweep at a time is enough: each is a few indexed reads and a write per overdue referral. */
export const TRIAGE_OVERDUE_WORKER_DEFAULTS = { concurrency: 1 } as const satisfies WorkerDefaults;

export type TriageOverdueQueue = Queue<TriageOverduePayload>;

/** The one schedule of the sweep. */
export const TRIAGE_OVERDUE_SCHEDULER = 'triage-overdue.sweep';

/**
 * Makes sure the sweep is scheduled every `everyMs`: adds the schedule when it is missing (a fresh
 * queue store, or one that lost its data) or has another interval; returns whether it did.
 */
export async function ensureTriageOverdueSweep(queue: TriageOverdueQueue, everyMs: number): Promise<boolean> {
  const current = await queue.getJobScheduler(TRIAGE_OVERDUE_SCHEDULER);
  if (current?.every === everyMs) return false;
  await queue.upsertJobScheduler(
    TRIAGE_OVERDUE_SCHEDULER,
    { every: everyMs },
    { name: 'sweep', data: {}, opts: { attempts: 3, backoff: { type: 'exponential', delay: 5_000 } } },
  );
  return true;
}
