// The typed queue registry: each queue's name and the payload its jobs carry. Producers and workers
// both read these types, so they cannot disagree. Payloads carry IDs only, never patient data:
// BullMQ keeps job data in Redis in clear text.

export interface QueuePayloads {
  /** Forward the referral's current form to the EHR. `version` is the trigger's, for tracing. */
  'ehr-forward': { readonly referralId: string; readonly version: number; readonly requestId: string };
  /** One firing of a referral's provider reminder schedule. */
  reminders: { readonly referralId: string };
}

export type QueueName = keyof QueuePayloads;

export const QUEUE_NAMES = ['ehr-forward', 'reminders'] as const satisfies readonly QueueName[];

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
