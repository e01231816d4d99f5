// The forward queue: referrals' forms on their way to the EHR. Its name (the outbox topic whose rows
// it takes), the job its producer adds, the job's ID, options and backoff, the worker's settings, and
// the functions that add a forward and make sure one is live.
//
// Its order: round-robin by clinic (docs/scaling.md, "Fair delivery across
// institutions"). Each forward job is added with a BullMQ priority equal to its rank in its sending
// institution's backlog: 1 for the institution's only forward waiting, 2 for the next, and so on.
// Workers take the lowest priority first, ties in the order they were added, so the first waiting
// forward of every institution comes before the second of any: one clinic's import of thousands
// waits behind each other clinic's next forward, and while nobody else has work it gets every slot.
//
// The backlog of an institution is kept in the database (db/forwarding/backlog.ts), whichever backend
// holds the queues: an entry is added with its job and removed when a worker starts it. A job ID the
// queue did not take (coalesced into the referral's live job) is removed at once. An entry whose job
// never starts (its add failed after the rank was written and the referral went out under another
// version, or an operator removed the job) counts only until it is older than ORDER_HORIZON_MS: it
// raises its institution's ranks for an hour at most. The price is that forwards waiting longer than
// that (an EHR outage) no longer count toward their institution's next ranks. Rows hold institution
// and job IDs only.
import type { JobsOptions, Queue } from 'bullmq';
import { messageIdOf } from '../domain/ids.ts';
import { OUTBOX_TOPICS } from '../domain/lifecycle.ts';
import { LIVE_STATES, PROMPT_RECOVERY, type WorkerDefaults } from './job-settings.ts';

/** The forward queue's name: the outbox topic of a forward that is due. */
export const FORWARD_QUEUE = OUTBOX_TOPICS.forward;

/**
 * Forward the referral's current form to the EHR. `version` is the trigger's, for tracing.
 * `institution` is the referral's sender (`institutionKey`), whose backlog the job is ranked in; jobs
 * queued before the order carry none.
 */
export interface ForwardPayload {
  readonly referralId: string;
  readonly version: number;
  readonly requestId: string;
  readonly institution?: string;
}

/** A forward for the queue, with the institution (`institutionKey`) whose backlog it joins. */
export type QueuedForward = Required<ForwardPayload>;

/** How a forward job ended without going back to the queue (a deferred one waits for the circuit). */
export type SettledForward = 'delivered' | 'nothing-to-send' | 'withdrawn';

/** The custom backoff type the forward worker computes (Retry-After, exponential with jitter). */
export const FORWARD_BACKOFF = 'ehr';

/** What a forward job is told when it is added: its attempts (EHR_MAX_ATTEMPTS) and its backoff type. */
export function forwardJobOptions(policy: { readonly maxAttempts: number }): JobsOptions {
  return { attempts: policy.maxAttempts, backoff: { type: FORWARD_BACKOFF } };
}

/**
 * Deterministic: the forward due at `version`, named by its message ID, so the job, the request and
 * the ledger row of one version share one name. BullMQ forbids ':' in custom job IDs; it has none.
 */
export function forwardJobId(referralId: string, version: number): string {
  return messageIdOf(referralId, version);
}

/** The forward worker's settings. */
export const FORWARD_WORKER_DEFAULTS = {
  concurrency: 16,
  ...PROMPT_RECOVERY,
} as const satisfies WorkerDefaults;

export type ForwardQueue = Queue<ForwardPayload>;

export interface ForwardSettings {
  readonly ehrMaxAttempts: number;
}

/** How long an entry counts in its institution's backlog. */
export const ORDER_HORIZON_MS = 60 * 60 * 1000;

/** BullMQ's largest priority (2^21); ranks beyond it share it. */
export const MAX_PRIORITY = 2 ** 21;

/** Each institution's backlog of forwards (the forwarding store's `backlog`). */
export interface ForwardBacklog {
  rank(entries: readonly BacklogEntry[], now: Date, since: Date): Promise<number[]>;
  forget(entries: readonly BacklogEntry[]): Promise<void>;
}

/** A forward in its institution's backlog. */
export interface BacklogEntry {
  readonly institution: string;
  readonly jobId: string;
}

/**
 * Adds each forward to its institution's backlog, in order, and returns each one's rank in it once
 * added (db/forwarding/backlog.ts).
 */
export function rankForwards(
  backlog: ForwardBacklog,
  forwards: readonly QueuedForward[],
  now: number,
): Promise<number[]> {
  return backlog.rank(
    forwards.map((f) => ({ institution: f.institution, jobId: forwardJobId(f.referralId, f.version) })),
    new Date(now),
    new Date(now - ORDER_HORIZON_MS),
  );
}

/** The BullMQ priority of a forward of rank `rank`. */
export function forwardPriority(rank: number): number {
  return Math.min(Math.max(1, rank), MAX_PRIORITY);
}

/** A forward job's options: its ID, its coalescing by referral, its rank, attempts and backoff. */
function forwardOptions(settings: ForwardSettings, payload: ForwardPayload, rank: number): JobsOptions {
  return {
    jobId: forwardJobId(payload.referralId, payload.version),
    deduplication: { id: payload.referralId, keepLastIfActive: true },
    priority: forwardPriority(rank),
    ...forwardJobOptions({ maxAttempts: settings.ehrMaxAttempts }),
  };
}

/**
 * Ranks the forwards in their institutions' backlogs and adds their jobs. A job the queue coalesced
 * into the referral's live one (its ID comes back as the live job's) leaves the backlog again.
 */
export async function enqueueForwards(
  queue: ForwardQueue,
  backlog: ForwardBacklog,
  settings: ForwardSettings,
  forwards: readonly QueuedForward[],
): Promise<void> {
  const ranks = await rankForwards(backlog, forwards, Date.now());
  const jobs = await queue.addBulk(
    forwards.map((forward, i) => ({
      name: 'forward',
      data: forward,
      opts: forwardOptions(settings, forward, ranks[i] ?? 1),
    })),
  );
  const coalesced = forwards.flatMap((forward, i) => {
    const jobId = forwardJobId(forward.referralId, forward.version);
    return jobs[i]?.id === jobId ? [] : [{ institution: forward.institution, jobId }];
  });
  await backlog.forget(coalesced);
}

/** Whether a job for the referral's forward waits, is delayed or runs; it only reads. */
export async function forwardIsLive(
  queue: ForwardQueue,
  referralId: string,
  version: number,
): Promise<boolean> {
  const current = await queue.getDeduplicationJobId(referralId);
  if (current !== null && LIVE_STATES.has(await queue.getJobState(current))) return true;
  const job = await queue.getJob(forwardJobId(referralId, version));
  return job !== undefined && LIVE_STATES.has(await job.getState());
}

/**
 * Makes sure a forward job is live for the referral: does nothing when one is waiting, delayed or
 * running; otherwise clears what is left of an earlier one (a finished job under the same ID, a
 * deduplication key whose job is gone) and adds it. Returns whether it added one.
 */
export async function ensureForward(
  queue: ForwardQueue,
  backlog: ForwardBacklog,
  settings: ForwardSettings,
  forward: QueuedForward,
): Promise<boolean> {
  const current = await queue.getDeduplicationJobId(forward.referralId);
  if (current !== null) {
    if (LIVE_STATES.has(await queue.getJobState(current))) return false;
    await queue.removeDeduplicationKey(forward.referralId);
  }
  const leftover = await queue.getJob(forwardJobId(forward.referralId, forward.version));
  if (leftover !== undefined) {
    if (LIVE_STATES.has(await leftover.getState())) return false;
    await leftover.remove();
  }
  await enqueueForwards(queue, backlog, settings, [forward]);
  return true;
}
