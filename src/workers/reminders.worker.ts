// Fires provider reminders. Each firing of a referral's job scheduler re-reads the referral: while it
// still waits in pending-acceptance and reminders remain, the firing appends
// `referral.provider-patient-create-reminder-sent` and records the notification; otherwise, or after
// the last one, it removes the scheduler.
import type { Job, Worker } from 'bullmq';
import type { QueueBackend } from '../queue/backend.ts';
import { logWorkerErrors } from './worker-errors.ts';
import { foreignJob, type ForeignJobDeps } from './foreign-job.ts';
import {
  REMINDERS_QUEUE,
  REMINDERS_WORKER_DEFAULTS,
  type FireResult,
  type ReminderPayload,
} from '../queue/reminders.queue.ts';
import type { Reminders } from '../services/reminders.service.ts';

export type { ReminderPayload } from '../queue/reminders.queue.ts';

export interface ReminderWorkerDeps extends ForeignJobDeps {
  readonly reminders: Reminders;
  /** Removes the referral's schedule (the producer's). */
  readonly removeSchedule: (referralId: string) => Promise<void>;
}

/**
 * One firing; `firingKey` is the job's ID, unique per firing of the schedule. A firing for a referral
 * this installation does not have leaves the schedule alone (it is another installation's) and fails.
 */
export async function fireReminder(
  deps: ReminderWorkerDeps,
  payload: ReminderPayload,
  firingKey: string,
): Promise<FireResult> {
  const result = await deps.reminders.fire(payload.referralId, firingKey, `reminder.${firingKey}`);
  if (result.kind === 'unknown-referral') throw foreignJob(deps, REMINDERS_QUEUE);
  if (result.kind === 'done' || result.remaining === 0) await deps.removeSchedule(payload.referralId);
  if (result.kind === 'sent') {
    deps.logger.info(
      { referralId: payload.referralId, sequence: result.sequence, remaining: result.remaining },
      'provider reminder sent',
    );
  }
  return result;
}

export function startReminderWorker(
  deps: ReminderWorkerDeps,
  settings: { readonly backend: QueueBackend },
): Worker<ReminderPayload> {
  const worker = settings.backend.worker<ReminderPayload, FireResult>(
    REMINDERS_QUEUE,
    (job: Job<ReminderPayload>) => {
      const firingKey = job.id ?? `${job.name}.${job.timestamp}`;
      return fireReminder({ ...deps, logger: deps.logger.child({ jobId: firingKey }) }, job.data, firingKey);
    },
    REMINDERS_WORKER_DEFAULTS,
  );
  logWorkerErrors(worker, settings.backend, deps.logger);
  return worker;
}
