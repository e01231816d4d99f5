// The typed queue registry: each queue's name and the payload its jobs carry. Producers and workers
// both read these types, so they cannot disagree. Payloads carry IDs only, never patient data:
// BullMQ keeps job data in Redis in clear text.

export interface QueuePayloads {
  /** Forward the referral's current form to the EHR. `version` is the trigger's, for tracing. */
  'ehr-forward': { readonly referralId: string; readonly version: number; readonly requestId: string };
  /** One firing of a referral's provider reminder schedule. */
  reminders: { readonly referralId: string };
  /** Deliver one event to one webhook subscription. */
  webhooks: { readonly eventId: string; readonly subscriptionId: string };
}

export type QueueName = keyof QueuePayloads;

export const QUEUE_NAMES = ['ehr-forward', 'reminders', 'webhooks'] as const satisfies readonly QueueName[];

/**
 * Deterministic: one event to one subscription, so a batch the relay enqueues twice adds it once.
 * A replay adds it again under its own suffix, and the receiver sees the same `webhook-id`.
 */
export function webhookJobId(payload: QueuePayloads['webhooks'], replay?: string): string {
  return `${payload.eventId}.${payload.subscriptionId}${replay === undefined ? '' : `.replay-${replay}`}`;
}

/** The backoff type of webhook jobs; the worker computes each wait from WEBHOOK_RETRY_SCHEDULE. */
export const WEBHOOK_BACKOFF = 'webhook';

/** Deterministic: the forward due at `version`. BullMQ forbids ':' in custom job IDs. */
export function forwardJobId(referralId: string, version: number): string {
  return `${referralId}.v${version}`;
}

/** One reminder schedule per referral. */
export function reminderSchedulerId(referralId: string): string {
  return `reminder.${referralId}`;
}

/** How long finished jobs are kept in Redis, for the dashboard; the ledger in the database is the record. */
export const RETENTION = {
  completed: { age: 7 * 24 * 3600, count: 10_000 },
  failed: { age: 30 * 24 * 3600, count: 50_000 },
} as const;
