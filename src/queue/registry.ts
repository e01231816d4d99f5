// The index of the queues. Each queue is defined in a module of its own, which holds its name, the
// payload its jobs carry, the result a finished job returns, its job options and job ID, its worker's
// settings and the functions that add its jobs:
//
//   forward.queue.ts          referrals' forms to the EHR, ordered round-robin by clinic
//   reminders.queue.ts        each pending referral's provider reminder schedule
//   webhooks.queue.ts         one delivery per (event, subscription)
//   attachment-scan.queue.ts  one malware scan per attachment
//   triage-overdue.queue.ts   the sweep of referrals whose triage passed its due time
//   wait-times.queue.ts       the offerings' wait times, recomputed on a schedule
//   incidents.queue.ts        the sweep of the conditions an operator must act on, and the ops webhooks
//   retention.queue.ts        retention: month partitions made ahead, aged months archived and dropped
//
// This file gathers them into the typed maps producers, workers and the dashboard read, so they cannot
// disagree. Payloads carry IDs only, never patient data: BullMQ keeps job data in Redis in clear text.
import {
  ATTACHMENT_SCAN_QUEUE,
  SCAN_WORKER_DEFAULTS,
  type ScanPayload,
  type SettledScan,
} from './attachment-scan.queue.ts';
import {
  FORWARD_QUEUE,
  FORWARD_WORKER_DEFAULTS,
  type ForwardPayload,
  type SettledForward,
} from './forward.queue.ts';
import type { WorkerDefaults } from './job-settings.ts';
import {
  REMINDERS_QUEUE,
  REMINDERS_WORKER_DEFAULTS,
  type FireResult,
  type ReminderPayload,
} from './reminders.queue.ts';
import {
  INCIDENTS_QUEUE,
  INCIDENTS_WORKER_DEFAULTS,
  type IncidentsPayload,
  type SweptIncidents,
} from './incidents.queue.ts';
import {
  RETENTION_QUEUE,
  RETENTION_WORKER_DEFAULTS,
  type RetentionPayload,
  type RetentionRunDone,
} from './retention.queue.ts';
import {
  TRIAGE_OVERDUE_QUEUE,
  TRIAGE_OVERDUE_WORKER_DEFAULTS,
  type SweptOverdue,
  type TriageOverduePayload,
} from './triage-overdue.queue.ts';
import {
  WEBHOOKS_FAIR_SHARE,
  WEBHOOKS_QUEUE,
  WEBHOOKS_WORKER_DEFAULTS,
  type SettledWebhook,
  type WebhookPayload,
} from './webhooks.queue.ts';
import {
  WAIT_TIMES_QUEUE,
  WAIT_TIMES_WORKER_DEFAULTS,
  type WaitTimesPayload,
  type WaitTimesRun,
} from './wait-times.queue.ts';

export {
  ATTACHMENT_SCAN_QUEUE,
  attachmentScanJobId,
  SCAN_ATTEMPTS,
  type ScanPayload,
  type SettledScan,
} from './attachment-scan.queue.ts';
export {
  FORWARD_BACKOFF,
  FORWARD_QUEUE,
  forwardJobId,
  forwardJobOptions,
  type ForwardPayload,
  type QueuedForward,
  type SettledForward,
} from './forward.queue.ts';
export { INCIDENTS_QUEUE, type IncidentsPayload, type SweptIncidents } from './incidents.queue.ts';
export { institutionKey } from './job-settings.ts';
export {
  REMINDERS_QUEUE,
  reminderSchedulerId,
  type FireResult,
  type ReminderPayload,
  type ReminderSchedule,
} from './reminders.queue.ts';
export { RETENTION_QUEUE, type RetentionPayload, type RetentionRunDone } from './retention.queue.ts';
export {
  TRIAGE_OVERDUE_QUEUE,
  type SweptOverdue,
  type TriageOverduePayload,
} from './triage-overdue.queue.ts';
export {
  WEBHOOK_BACKOFF,
  webhookJobId,
  webhookMaxAttempts,
  WEBHOOKS_QUEUE,
  type SettledWebhook,
  type WebhookPayload,
} from './webhooks.queue.ts';

export {
  WAIT_TIMES_QUEUE,
  WAIT_TIMES_SCHEDULER_ID,
  type WaitTimesPayload,
  type WaitTimesRun,
  type WaitTimesSchedule,
} from './wait-times.queue.ts';

/** Each queue's job payload, by the queue's name. */
export interface QueuePayloads {
  [FORWARD_QUEUE]: ForwardPayload;
  [REMINDERS_QUEUE]: ReminderPayload;
  [WEBHOOKS_QUEUE]: WebhookPayload;
  [ATTACHMENT_SCAN_QUEUE]: ScanPayload;
  [TRIAGE_OVERDUE_QUEUE]: TriageOverduePayload;
  [WAIT_TIMES_QUEUE]: WaitTimesPayload;
  [INCIDENTS_QUEUE]: IncidentsPayload;
  [RETENTION_QUEUE]: RetentionPayload;
}

export type QueueName = keyof QueuePayloads;

/**
 * What each queue's finished job returns. BullMQ keeps it on the job, and the dashboard shows it
 * (api/admin/job-redaction.ts), so results are words and counts, never patient data.
 */
export interface QueueResults {
  [FORWARD_QUEUE]: SettledForward;
  [REMINDERS_QUEUE]: FireResult;
  [WEBHOOKS_QUEUE]: SettledWebhook;
  [ATTACHMENT_SCAN_QUEUE]: SettledScan;
  [TRIAGE_OVERDUE_QUEUE]: SweptOverdue;
  [WAIT_TIMES_QUEUE]: WaitTimesRun;
  [INCIDENTS_QUEUE]: SweptIncidents;
  [RETENTION_QUEUE]: RetentionRunDone;
}

export const QUEUE_NAMES = [
  FORWARD_QUEUE,
  REMINDERS_QUEUE,
  WEBHOOKS_QUEUE,
  ATTACHMENT_SCAN_QUEUE,
  TRIAGE_OVERDUE_QUEUE,
  WAIT_TIMES_QUEUE,
  INCIDENTS_QUEUE,
  RETENTION_QUEUE,
] as const satisfies readonly QueueName[];

/** Each queue's worker settings, from its definition: the workers read them from here. */
export const WORKER_DEFAULTS = {
  [FORWARD_QUEUE]: FORWARD_WORKER_DEFAULTS,
  [REMINDERS_QUEUE]: REMINDERS_WORKER_DEFAULTS,
  [WEBHOOKS_QUEUE]: WEBHOOKS_WORKER_DEFAULTS,
  [ATTACHMENT_SCAN_QUEUE]: SCAN_WORKER_DEFAULTS,
  [TRIAGE_OVERDUE_QUEUE]: TRIAGE_OVERDUE_WORKER_DEFAULTS,
  [WAIT_TIMES_QUEUE]: WAIT_TIMES_WORKER_DEFAULTS,
  [INCIDENTS_QUEUE]: INCIDENTS_WORKER_DEFAULTS,
  [RETENTION_QUEUE]: RETENTION_WORKER_DEFAULTS,
} as const satisfies Record<QueueName, WorkerDefaults>;

/**
 * Fair delivery across institutions, per queue that caps it (webhooks.queue.ts says why only the
 * webhook deliveries are capped), and how long a job set aside waits.
 */
export const FAIR_SHARE = {
  [WEBHOOKS_QUEUE]: { perInstitution: WEBHOOKS_FAIR_SHARE.perInstitution },
  deferral: WEBHOOKS_FAIR_SHARE.deferral,
} as const satisfies Partial<Record<QueueName, { perInstitution: number }>> & {
  deferral: { baseMs: number; maxMs: number };
};
