// The producer side of the queues: the only code that adds jobs and job schedulers. It is used by the
// outbox relay and the reconciler, never by a request (requests write outbox rows instead). Each call
// waits only briefly for the queues (backend.ts, `ready`), so an outage surfaces as an error the relay
// can retry later.
import type { Queue } from 'bullmq';
import { createOutageLog, type Logger } from '../logger.ts';
import { outageName, type QueueBackend, type QueueHealth } from './backend.ts';
import {
  ATTACHMENT_SCAN_QUEUE,
  enqueueScans,
  ensureScan,
  type ScanPayload,
} from './attachment-scan.queue.ts';
import {
  enqueueForwards,
  ensureForward,
  FORWARD_QUEUE,
  type ForwardBacklog,
  type QueuedForward,
} from './forward.queue.ts';
import { ensureIncidentsSweep, INCIDENTS_QUEUE } from './incidents.queue.ts';
import { QUEUE_NAMES, type QueueName, type QueuePayloads } from './registry.ts';
import {
  hasReminderSchedule,
  REMINDERS_QUEUE,
  removeReminders,
  scheduleReminders,
  type ReminderSchedule,
} from './reminders.queue.ts';
import { ensureRetentionSchedule, RETENTION_QUEUE } from './retention.queue.ts';
import { ensureTriageOverdueSweep, TRIAGE_OVERDUE_QUEUE } from './triage-overdue.queue.ts';
import {
  computeWaitTimesSoon,
  hasWaitTimesSchedule,
  scheduleWaitTimes,
  WAIT_TIMES_QUEUE,
  type WaitTimesSchedule,
} from './wait-times.queue.ts';
import { enqueueWebhooks, WEBHOOKS_QUEUE, type WebhookPayload } from './webhooks.queue.ts';

export type { ReminderSchedule } from './reminders.queue.ts';

export interface QueueSettings {
  readonly ehrMaxAttempts: number;
  /** The waits before each webhook retry; the attempts they give are `webhookMaxAttempts`. */
  readonly webhookRetryScheduleMs: readonly number[];
}

/** The states `jobCounts` reports. */
export const JOB_STATES = ['waiting', 'active', 'delayed', 'failed', 'completed'] as const;
export type JobState = (typeof JOB_STATES)[number];

export type Queues = { readonly [N in QueueName]: Queue<QueuePayloads[N]> };

export interface QueueProducer {
  readonly queues: Queues;
  /** Where the queues are (QUEUE_BACKEND). */
  readonly backend: QueueBackend;
  /**
   * Adds the forward job for `forward.version`, ranked in its institution's backlog (forward.queue.ts).
   * Jobs for one referral coalesce (deduplication keyed by the referral): while one waits, a new
   * trigger adds nothing, because the waiting job sends the latest state when it runs; while one
   * runs, one more is kept to run after it.
   */
  enqueueForward(forward: QueuedForward): Promise<void>;
  /** `enqueueForward` for many, in order: the ranks in one statement, the jobs in one round trip. */
  enqueueForwards(forwards: readonly QueuedForward[]): Promise<void>;
  /**
   * Makes sure a forward job is live for the referral: does nothing when one is waiting, delayed or
   * running; otherwise clears what is left of an earlier one (a finished job under the same ID, a
   * deduplication key whose job is gone) and adds it. Returns whether it added one.
   */
  ensureForward(forward: QueuedForward): Promise<boolean>;
  /**
   * The queue's jobs by state. `waiting` counts every job waiting for a worker, in whichever of
   * BullMQ's lists it waits: forwards wait in the ordered one (`prioritized`, forward.queue.ts).
   */
  jobCounts(name: QueueName): Promise<Record<JobState, number>>;
  hasReminderSchedule(referralId: string): Promise<boolean>;
  /** Creates or replaces the referral's reminder schedule. */
  scheduleReminders(referralId: string, schedule: ReminderSchedule): Promise<void>;
  removeReminders(referralId: string): Promise<void>;
  /** Makes sure the triage-overdue sweep is scheduled every `everyMs`; returns whether it added it. */
  ensureTriageOverdueSweep(everyMs: number): Promise<boolean>;
  /** Makes sure the incident sweep is scheduled every `everyMs`; returns whether it added it. */
  ensureIncidentsSweep(everyMs: number): Promise<boolean>;
  /** Makes sure the retention run is scheduled every `everyMs`; returns whether it added it. */
  ensureRetentionSchedule(everyMs: number): Promise<boolean>;
  /**
   * Adds one delivery job per (event, subscription), in one round trip. `replay` names an operator's
   * replay: the jobs are added again even when the first ones still exist.
   */
  enqueueWebhooks(payloads: readonly WebhookPayload[], replay?: string): Promise<void>;
  /**
   * Adds a scan job per attachment, in one round trip; an attachment whose scan job is still in the
   * queue (waiting, running, finished or failed) is not added again.
   */
  enqueueScans(payloads: readonly ScanPayload[]): Promise<void>;
  /**
   * Makes sure a scan job is live for the attachment: does nothing when one is waiting, delayed or
   * running; otherwise removes what is left of an earlier one (a job that failed for good, or
   * finished) and adds it under the same ID. Returns whether it added one.
   */
  ensureScan(payload: ScanPayload): Promise<boolean>;
  /**
   * Sets the wait-times scheduler (one per installation, upserted by ID) and adds a run now, so that
   * the figures are computed soon after a start and then on the schedule.
   */
  scheduleWaitTimes(schedule: WaitTimesSchedule): Promise<void>;
  /**
   * Sets the wait-times scheduler again if the queues lost it (Redis's data lost); returns whether it
   * did. The figures stay in the database meanwhile, so no run is added.
   */
  ensureWaitTimesSchedule(schedule: WaitTimesSchedule): Promise<boolean>;
  health(): Promise<QueueHealth>;
  /**
   * Claims the queues for the installation (backend.ts); throws QueuePrefixTakenError when another
   * installation holds them, and an error coded QUEUE_UNAVAILABLE when they cannot be reached.
   */
  claim(installationId: string, leaseMs: number): Promise<void>;
  /** Gives the claim back if the installation holds it (prefix-claim.ts). */
  release(installationId: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The producer over `backend` (which it closes with itself), ranking forwards in `backlog`.
 */
export function createQueueProducer(
  settings: QueueSettings,
  backend: QueueBackend,
  backlog: ForwardBacklog,
  logger: Logger,
): QueueProducer {
  // Every failed call of every queue emits `error`: during an outage, one line when it starts and
  // one with the count when it ends.
  const outage = createOutageLog(logger, {
    dependency: outageName(backend),
    down: 'queue error: the queues cannot be reached; work waits in the outbox',
    up: 'the queues are reachable again',
  });
  backend.onRestored(() => {
    outage.recovered();
  });
  const make = <N extends QueueName>(name: N) => {
    const queue = backend.queue<QueuePayloads[N]>(name);
    queue.on('error', (error: Error) => {
      outage.failed({ queue: name, err: { message: error.message } });
    });
    return queue;
  };
  const queues = Object.fromEntries(QUEUE_NAMES.map((name) => [name, make(name)])) as unknown as Queues;
  const ready = () => backend.ready();

  return {
    queues,
    backend,

    async enqueueForward(forward) {
      await ready();
      await enqueueForwards(queues[FORWARD_QUEUE], backlog, settings, [forward]);
    },

    async enqueueForwards(forwards) {
      if (forwards.length === 0) return;
      await ready();
      await enqueueForwards(queues[FORWARD_QUEUE], backlog, settings, forwards);
    },

    async ensureForward(forward) {
      await ready();
      return ensureForward(queues[FORWARD_QUEUE], backlog, settings, forward);
    },

    async jobCounts(name) {
      const raw = await queues[name].getJobCounts(...JOB_STATES, 'prioritized');
      const counts = Object.fromEntries(JOB_STATES.map((state) => [state, raw[state] ?? 0]));
      return { ...counts, waiting: (raw.waiting ?? 0) + (raw.prioritized ?? 0) } as Record<JobState, number>;
    },

    async hasReminderSchedule(referralId) {
      await ready();
      return hasReminderSchedule(queues[REMINDERS_QUEUE], referralId);
    },

    async scheduleReminders(referralId, schedule) {
      await ready();
      await scheduleReminders(queues[REMINDERS_QUEUE], referralId, schedule);
    },

    async removeReminders(referralId) {
      await ready();
      await removeReminders(queues[REMINDERS_QUEUE], referralId);
    },

    async ensureTriageOverdueSweep(everyMs) {
      await ready();
      return ensureTriageOverdueSweep(queues[TRIAGE_OVERDUE_QUEUE], everyMs);
    },

    async ensureIncidentsSweep(everyMs) {
      await ready();
      return ensureIncidentsSweep(queues[INCIDENTS_QUEUE], everyMs);
    },

    async ensureRetentionSchedule(everyMs) {
      await ready();
      return ensureRetentionSchedule(queues[RETENTION_QUEUE], everyMs);
    },

    async enqueueWebhooks(payloads, replay) {
      if (payloads.length === 0) return;
      await ready();
      await enqueueWebhooks(queues[WEBHOOKS_QUEUE], settings, payloads, replay);
    },

    async enqueueScans(payloads) {
      if (payloads.length === 0) return;
      await ready();
      await enqueueScans(queues[ATTACHMENT_SCAN_QUEUE], payloads);
    },

    async ensureScan(payload) {
      await ready();
      return ensureScan(queues[ATTACHMENT_SCAN_QUEUE], payload);
    },

    async scheduleWaitTimes(schedule) {
      await ready();
      await scheduleWaitTimes(queues[WAIT_TIMES_QUEUE], schedule);
      await computeWaitTimesSoon(queues[WAIT_TIMES_QUEUE]);
    },

    async ensureWaitTimesSchedule(schedule) {
      await ready();
      if (await hasWaitTimesSchedule(queues[WAIT_TIMES_QUEUE])) return false;
      await scheduleWaitTimes(queues[WAIT_TIMES_QUEUE], schedule);
      return true;
    },

    health: () => backend.health(),
    claim: (installationId, leaseMs) => backend.claim(installationId, leaseMs),
    release: (installationId) => backend.release(installationId),

    close: () => backend.close(),
  };
}
