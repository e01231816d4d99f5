// The webhooks queue: one job per (event, subscription), added by the webhook relay and by an
// operator's replay. Its name, the job's payload and ID, what a delivery returns, its attempts and
// backoff, the worker's settings and fair share, and the function that adds deliveries.
import type { Queue } from 'bullmq';
import { PROMPT_RECOVERY, type WorkerDefaults } from './job-settings.ts';

/** The webhooks queue's name (webhook deliveries have no outbox topic: the event feed is theirs). */
export const WEBHOOKS_QUEUE = 'webhooks';

/**
 * Deliver one event to one webhook subscription. `institution` is the subscription's institution
 * (`institutionKey`), for the worker's share per institution; jobs added before it was carried are
 * counted by their subscription instead.
 */
export interface WebhookPayload {
  readonly eventId: string;
  readonly subscriptionId: string;
  readonly institution?: string;
  /**
   * For a delivery an operator's ledger replay queued: the attempt it repeats (a UUID), which the
   * delivery's attempts name as `replay_of`.
   */
  readonly replayOf?: string;
}

/** How a webhook job ended without a retry, in words the dashboard may show. */
export type SettledWebhook =
  'delivered' | 'subscription-deleted' | 'subscription-disabled' | 'event-expired' | 'not-subscribed';

/**
 * Deterministic: one event to one subscription, so a batch the relay enqueues twice adds it once.
 * A replay adds it again under its own suffix, and the receiver sees the same `webhook-id`.
 */
export function webhookJobId(payload: WebhookPayload, replay?: string): string {
  return `${payload.eventId}.${payload.subscriptionId}${replay === undefined ? '' : `.replay-${replay}`}`;
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

// Deliveries wait on receivers, not on this process: many at once.
export const WEBHOOKS_WORKER_DEFAULTS = {
  concurrency: 32,
  ...PROMPT_RECOVERY,
} as const satisfies WorkerDefaults;

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
 * ordered round-robin by clinic (forward.queue.ts).
 */
export const WEBHOOKS_FAIR_SHARE = {
  // 4 of the 32 slots per institution: eight institutions with dead receivers before a ninth waits.
  perInstitution: 4,
  deferral: { baseMs: 250, maxMs: 30_000 },
} as const;

export type WebhooksQueue = Queue<WebhookPayload>;

/**
 * Adds one delivery job per (event, subscription), in one round trip. `replay` names an operator's
 * replay: the jobs are added again even when the first ones still exist.
 */
export async function enqueueWebhooks(
  queue: WebhooksQueue,
  settings: { readonly webhookRetryScheduleMs: readonly number[] },
  payloads: readonly WebhookPayload[],
  replay?: string,
): Promise<void> {
  await queue.addBulk(
    payloads.map((payload) => ({
      name: 'deliver',
      data: payload,
      opts: {
        jobId: webhookJobId(payload, replay),
        attempts: webhookMaxAttempts(settings.webhookRetryScheduleMs),
        backoff: { type: WEBHOOK_BACKOFF },
      },
    })),
  );
}
