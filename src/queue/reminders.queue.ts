// The reminders queue: each referral waiting for acceptance has a job scheduler here that fires its
// provider's reminders. Its name (the outbox topic whose rows set or remove a schedule), the job a
// firing carries, what a firing returns, the worker's settings, and the functions that set, remove
// and look for a referral's schedule.
import type { Queue } from 'bullmq';
import { OUTBOX_TOPICS } from '../domain/lifecycle.ts';
import type { WorkerDefaults } from './job-settings.ts';

/** The reminders queue's name: the outbox topic that sets or removes a referral's schedule. */
export const REMINDERS_QUEUE = OUTBOX_TOPICS.reminders;

/** One firing of a referral's provider reminder schedule. */
export interface ReminderPayload {
  readonly referralId: string;
}

/** What one firing of a reminder schedule did. */
export type FireResult =
  | { readonly kind: 'sent'; readonly sequence: number; readonly remaining: number }
  /** This firing was recorded before (a retry); nothing new was sent. */
  | { readonly kind: 'already-sent'; readonly remaining: number }
  /** The referral left pending-acceptance, was deleted, or has had every reminder. */
  | { readonly kind: 'done' }
  /** No such referral in this installation's database (workers/foreign-job.ts): nothing was done. */
  | { readonly kind: 'unknown-referral' };

export interface ReminderSchedule {
  /** The first firing. */
  readonly startAt: Date;
  readonly everyMs: number;
  /** How many firings are left. */
  readonly limit: number;
}

// Reminders keep BullMQ's own lock and stall settings.
export const REMINDERS_WORKER_DEFAULTS = { concurrency: 8 } as const satisfies WorkerDefaults;

export type RemindersQueue = Queue<ReminderPayload>;

/** One reminder schedule per referral. */
export function reminderSchedulerId(referralId: string): string {
  return `reminder.${referralId}`;
}

export async function hasReminderSchedule(queue: RemindersQueue, referralId: string): Promise<boolean> {
  return (await queue.getJobScheduler(reminderSchedulerId(referralId))) !== undefined;
}

/** Creates or replaces the referral's reminder schedule. */
export async function scheduleReminders(
  queue: RemindersQueue,
  referralId: string,
  schedule: ReminderSchedule,
): Promise<void> {
  await queue.upsertJobScheduler(
    reminderSchedulerId(referralId),
    { every: schedule.everyMs, startDate: schedule.startAt, limit: schedule.limit },
    {
      name: 'reminder',
      data: { referralId },
      opts: {
        attempts: 5,
        backoff: { type: 'exponential', delay: 5_000 },
      },
    },
  );
}

export async function removeReminders(queue: RemindersQueue, referralId: string): Promise<void> {
  await queue.removeJobScheduler(reminderSchedulerId(referralId));
}
