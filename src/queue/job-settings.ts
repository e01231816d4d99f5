// What every queue's definition (the *.queue.ts files) shares: how long finished jobs are kept, how
// soon a dead worker's jobs come back, which job states count as live, and the institution key jobs
// are counted against.
import type { JobsOptions, WorkerOptions } from 'bullmq';

/** A queue's worker settings, beside its queue: the workers read them from its definition. */
export type WorkerDefaults = Pick<WorkerOptions, 'lockDuration' | 'stalledInterval' | 'maxStalledCount'> & {
  /** Jobs one worker process runs at once, unless its settings say otherwise. */
  readonly concurrency: number;
};

// A worker that dies (a crash, a SIGKILL, a lost machine) leaves its active jobs behind. BullMQ gives
// them back through its stalled check: a job still active whose lock has expired (lockDuration,
// renewed every half of it while the job runs) returns to wait. The check needs two passes and runs
// at most once per stalledInterval across all workers, so with BullMQ's default of 30 s a job waited
// up to about 90 s after its worker died; at 10 s it waits about lockDuration + 20 s. Checking more
// often costs one short script run; a job counts as stalled only once its lock is gone, so no job is
// taken from a worker that is alive. A job that stalls a second time fails ("job stalled more than
// allowable limit"); a forward's referral is still queued in the database, so the reconciler enqueues
// it afresh.
export const PROMPT_RECOVERY = { lockDuration: 30_000, stalledInterval: 10_000, maxStalledCount: 1 } as const;

/**
 * How long finished jobs stay in their queue, for the dashboard and `forwards retry`; the ledger in the
 * database is the record of what was sent. Each backend sets them as its queues' default job options
 * (backend.ts), so that no queue's definition repeats them.
 *
 * In Redis a finished job is trimmed from a sorted set, cheaply, so the last 10,000 completed jobs
 * (at most a week) and the last 50,000 failed ones (at most 30 days) are kept. BullMQ's PostgreSQL
 * backend trims with statements that read every finished job of the queue (a count is a scan of the
 * kept jobs; an age, a plan that cannot use the partial index on finished jobs), once for each job that
 * finishes: at 10,000 kept, that scan was most of the database's time per forward, and it grows with
 * what is kept. There a completed job leaves its queue as it completes, one indexed delete; a failed
 * job, which an operator may retry, is kept 30 days, trimmed by age when another fails.
 */
export const RETENTION = {
  redis: {
    removeOnComplete: { age: 7 * 24 * 3600, count: 10_000 },
    removeOnFail: { age: 30 * 24 * 3600, count: 50_000 },
  },
  postgres: {
    removeOnComplete: true,
    removeOnFail: { age: 30 * 24 * 3600 },
  },
} as const satisfies Record<string, Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'>>;

/** The job states in which a job is still to run or running. */
export const LIVE_STATES: ReadonlySet<string> = new Set([
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
]);

/**
 * The institution a job is counted against (the webhook worker's fair share, the forward backlogs):
 * `<idType>:<id>` (IDs, not patient data).
 */
export function institutionKey(institution: { readonly idType: string; readonly id: string }): string {
  return `${institution.idType}:${institution.id}`;
}
