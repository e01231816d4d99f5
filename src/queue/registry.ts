// The typed queue registry: each queue's name, the payload its jobs carry and the result a finished
// job returns. Producers, workers and the dashboard read these types, so they cannot disagree.
// Payloads carry IDs only, never patient data: BullMQ keeps job data in Redis in clear text.
import type { JobsOptions, WorkerOptions } from 'bullmq';
import { messageIdOf } from '../domain/ids.ts';

export interface QueuePayloads {
  /**
   * Forward the referral's current form to the EHR. `version` is the trigger's, for tracing.
   * `institution` is the referral's sender (`institutionKey`), whose backlog the job is ranked in
   * (forward-order.ts); jobs queued before the order carry none.
   */
  'ehr-forward': {
    readonly referralId: string;
    readonly version: number;
    readonly requestId: string;
    readonly institution?: string;
  };
  /** One firing of a referral's provider reminder schedule. */
  reminders: { readonly referralId: string };
  /**
   * Deliver one event to one webhook subscription. `institution` is the subscription's institution
   * (`institutionKey`), for the worker's share per institution; jobs added before it was carried are
   * counted by their subscription instead.
   */
  webhooks: { readonly eventId: string; readonly subscriptionId: string; readonly institution?: string };
  /** Scan one attachment's bytes, read from the database, before anyone may read them. */
  'attachment-scan': { readonly attachmentId: string; readonly referralId: string };
}

export type QueueName = keyof QueuePayloads;

/** How a forward job ended without going back to the queue (a deferred one waits for the circuit). */
export type SettledForward = 'delivered' | 'nothing-to-send' | 'withdrawn';

/** What one firing of a reminder schedule did. */
export type FireResult =
  | { readonly kind: 'sent'; readonly sequence: number; readonly remaining: number }
  /** This firing was recorded before (a retry); nothing new was sent. */
  | { readonly kind: 'already-sent'; readonly remaining: number }
  /** The referral left pending-acceptance, was deleted, or has had every reminder. */
  | { readonly kind: 'done' }
  /** No such referral in this installation's database (workers/foreign-job.ts): nothing was done. */
  | { readonly kind: 'unknown-referral' };

/** How a webhook job ended without a retry, in words the dashboard may show. */
export type SettledWebhook =
  'delivered' | 'subscription-deleted' | 'subscription-disabled' | 'event-expired' | 'not-subscribed';

/**
 * How a scan job ended: what the scan found, or why there was nothing to scan (scanned already, by a
 * job run before; or no such attachment: removed since, or another installation's).
 */
export type SettledScan = 'available' | 'rejected' | 'already-scanned' | 'gone';

/**
 * What each queue's finished job returns. BullMQ keeps it on the job, and the dashboard shows it
 * (api/admin/job-redaction.ts), so results are words and counts, never patient data.
 */
export interface QueueResults {
  'ehr-forward': SettledForward;
  reminders: FireResult;
  webhooks: SettledWebhook;
  'attachment-scan': SettledScan;
}

export const QUEUE_NAMES = [
  'ehr-forward',
  'reminders',
  'webhooks',
  'attachment-scan',
] as const satisfies readonly QueueName[];

/**
 * Deterministic: one event to one subscription, so a batch the relay enqueues twice adds it once.
 * A replay adds it again under its own suffix, and the receiver sees the same `webhook-id`.
 */
export function webhookJobId(payload: QueuePayloads['webhooks'], replay?: string): string {
  return `${payload.eventId}.${payload.subscriptionId}${replay === undefined ? '' : `.replay-${replay}`}`;
}

/** The custom backoff type the forward worker computes (Retry-After, exponential with jitter). */
export const FORWARD_BACKOFF = 'ehr';

/** What a forward job is told when it is added: its attempts (EHR_MAX_ATTEMPTS) and its backoff type. */
export function forwardJobOptions(policy: { readonly maxAttempts: number }): JobsOptions {
  return { attempts: policy.maxAttempts, backoff: { type: FORWARD_BACKOFF } };
}

/** The backoff type of webhook jobs; the worker computes each wait from WEBHOOK_RETRY_SCHEDULE. */
export const WEBHOOK_BACKOFF = 'webhook';

/**
 * How many times a webhook job runs: once, then once after each wait of WEBHOOK_RETRY_SCHEDULE. The
 * producer gives the job that many attempts and the worker tells a delivery which one is its last.
 */
export function webhookMaxAttempts(retryScheduleMs: readonly number[]): number {
  return retryScheduleMs.length + 1;
}

type WorkerDefaults = Pick<WorkerOptions, 'lockDuration' | 'stalledInterval' | 'maxStalledCount'> & {
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
const PROMPT_RECOVERY = { lockDuration: 30_000, stalledInterval: 10_000, maxStalledCount: 1 } as const;

/** Each queue's worker settings, beside its queue: the workers read them from here. */
export const WORKER_DEFAULTS = {
  'ehr-forward': { concurrency: 16, ...PROMPT_RECOVERY },
  // Reminders keep BullMQ's own lock and stall settings.
  reminders: { concurrency: 8 },
  // Deliveries wait on receivers, not on this process: many at once.
  webhooks: { concurrency: 32, ...PROMPT_RECOVERY },
  // Each scan holds one piece of a file and waits on the scanner, which does the work.
  'attachment-scan': { concurrency: 4, ...PROMPT_RECOVERY },
} as const satisfies Record<QueueName, WorkerDefaults>;

/**
 * Fair delivery of webhooks across institutions (docs/scaling.md, "Fair delivery across
 * institutions"). Each worker process runs at most `perInstitution` webhook jobs of one institution
 * at once; a job whose institution already has that many in flight goes back to the queue (delayed,
 * without spending an attempt), so `concurrency - perInstitution` slots of every process stay free
 * for the others. One institution's backlog or dead receivers then delay another's job only by the
 * time the worker takes to set aside the jobs queued ahead of it (a few milliseconds each), never by
 * a delivery deadline. A job set aside again waits longer each time (`deferral`: base, doubled, at
 * most max, with jitter), so a backlog of thousands is looked at about once per `maxMs`, not in a
 * spin. Forwards need no cap: they all go to one receiver, the EHR, and the forward queue itself is
 * ordered round-robin by clinic (forward-order.ts).
 */
export const FAIR_SHARE = {
  // 4 of the 32 slots per institution: eight institutions with dead receivers before a ninth waits.
  webhooks: { perInstitution: 4 },
  deferral: { baseMs: 250, maxMs: 30_000 },
} as const satisfies Partial<Record<QueueName, { perInstitution: number }>> & {
  deferral: { baseMs: number; maxMs: number };
};

/**
 * The institution a job is counted against (FAIR_SHARE, the forward backlogs): `<idType>:<id>` (IDs,
 * not patient data).
 */
export function institutionKey(institution: { readonly idType: string; readonly id: string }): string {
  return `${institution.idType}:${institution.id}`;
}

/**
 * Deterministic: the forward due at `version`, named by its message ID, so the job, the request and
 * the ledger row of one version share one name. BullMQ forbids ':' in custom job IDs; it has none.
 */
export function forwardJobId(referralId: string, version: number): string {
  return messageIdOf(referralId, version);
}

/** One scan per attachment: an attachment queued twice (by its upload and the reconciler) is scanned once. */
export function attachmentScanJobId(attachmentId: string): string {
  return `scan.${attachmentId}`;
}

/** A scan's attempts while the scanner is unreachable or fails: about an hour of exponential waits. */
export const SCAN_ATTEMPTS = { attempts: 13, backoff: { type: 'exponential', delay: 1_000 } } as const;

/** One reminder schedule per referral. */
export function reminderSchedulerId(referralId: string): string {
  return `reminder.${referralId}`;
}

/** How long finished jobs are kept in Redis, for the dashboard; the ledger in the database is the record. */
export const RETENTION = {
  completed: { age: 7 * 24 * 3600, count: 10_000 },
  failed: { age: 30 * 24 * 3600, count: 50_000 },
} as const;
