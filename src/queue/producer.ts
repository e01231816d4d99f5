// The producer side of the queues: the only code that adds jobs and job schedulers. It is used by the
// outbox relay and the reconciler, never by a request (requests write outbox rows instead). Its Redis
// connection fails fast, so a Redis outage surfaces as an error the relay can retry later.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { createOutageLog, type Logger } from '../logger.ts';
import { checkRedis, closeRedis, connectRedis, connected, settled, type RedisHealth } from './connections.ts';
import {
  ATTACHMENT_SCAN_QUEUE,
  enqueueScans,
  ensureScan,
  type ScanPayload,
} from './attachment-scan.queue.ts';
import { enqueueForwards, ensureForward, FORWARD_QUEUE, type QueuedForward } from './forward.queue.ts';
import { claimQueuePrefix, releaseQueuePrefix } from './prefix-claim.ts';
import { QUEUE_NAMES, type QueueName, type QueuePayloads } from './registry.ts';
import {
  hasReminderSchedule,
  REMINDERS_QUEUE,
  removeReminders,
  scheduleReminders,
  type ReminderSchedule,
} from './reminders.queue.ts';
import { enqueueWebhooks, WEBHOOKS_QUEUE, type WebhookPayload } from './webhooks.queue.ts';

export type { ReminderSchedule } from './reminders.queue.ts';

export interface QueueSettings {
  readonly redisUrl: string;
  readonly queuePrefix: string;
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
  readonly redis: Redis;
  /**
   * Adds the forward job for `forward.version`, ranked in its institution's backlog (forward.queue.ts).
   * Jobs for one referral coalesce (deduplication keyed by the referral): while one waits, a new
   * trigger adds nothing, because the waiting job sends the latest state when it runs; while one
   * runs, one more is kept to run after it.
   */
  enqueueForward(forward: QueuedForward): Promise<void>;
  /** `enqueueForward` for many, in order: the ranks in one round trip to Redis, the jobs in another. */
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
  health(): Promise<RedisHealth>;
  /**
   * Claims the queue prefix for the installation (prefix-claim.ts); throws QueuePrefixTakenError when
   * another installation holds it, and an error coded QUEUE_UNAVAILABLE when Redis cannot be reached.
   */
  claim(installationId: string, leaseMs: number): Promise<void>;
  /** Gives the claim back if the installation holds it (prefix-claim.ts). */
  release(installationId: string): Promise<void>;
  close(): Promise<void>;
}

export function createQueueProducer(settings: QueueSettings, logger: Logger): QueueProducer {
  const redis = connectRedis(settings.redisUrl, 'producer', logger);
  // Every failed call of every queue emits `error`: during an outage, one line when it starts and
  // one with the count when it ends.
  const outage = createOutageLog(logger, {
    dependency: 'redis',
    down: 'queue error: the queues cannot be reached; work waits in the outbox',
    up: 'the queues are reachable again',
  });
  redis.on('ready', () => {
    outage.recovered();
  });
  const make = <N extends QueueName>(name: N) => {
    const queue = new Queue<QueuePayloads[N]>(name, { connection: redis, prefix: settings.queuePrefix });
    queue.on('error', (error: Error) => {
      outage.failed({ queue: name, err: { message: error.message } });
    });
    return queue;
  };
  const queues = Object.fromEntries(QUEUE_NAMES.map((name) => [name, make(name)])) as unknown as Queues;

  return {
    queues,
    redis,

    async enqueueForward(forward) {
      await connected(redis);
      await enqueueForwards(queues[FORWARD_QUEUE], redis, settings, [forward]);
    },

    async enqueueForwards(forwards) {
      if (forwards.length === 0) return;
      await connected(redis);
      await enqueueForwards(queues[FORWARD_QUEUE], redis, settings, forwards);
    },

    async ensureForward(forward) {
      await connected(redis);
      return ensureForward(queues[FORWARD_QUEUE], redis, settings, forward);
    },

    async jobCounts(name) {
      const raw = await queues[name].getJobCounts(...JOB_STATES, 'prioritized');
      const counts = Object.fromEntries(JOB_STATES.map((state) => [state, raw[state] ?? 0]));
      return { ...counts, waiting: (raw.waiting ?? 0) + (raw.prioritized ?? 0) } as Record<JobState, number>;
    },

    async hasReminderSchedule(referralId) {
      await connected(redis);
      return hasReminderSchedule(queues[REMINDERS_QUEUE], referralId);
    },

    async scheduleReminders(referralId, schedule) {
      await connected(redis);
      await scheduleReminders(queues[REMINDERS_QUEUE], referralId, schedule);
    },

    async removeReminders(referralId) {
      await connected(redis);
      await removeReminders(queues[REMINDERS_QUEUE], referralId);
    },

    async enqueueWebhooks(payloads, replay) {
      if (payloads.length === 0) return;
      await connected(redis);
      await enqueueWebhooks(queues[WEBHOOKS_QUEUE], settings, payloads, replay);
    },

    async enqueueScans(payloads) {
      if (payloads.length === 0) return;
      await connected(redis);
      await enqueueScans(queues[ATTACHMENT_SCAN_QUEUE], payloads);
    },

    async ensureScan(payload) {
      await connected(redis);
      return ensureScan(queues[ATTACHMENT_SCAN_QUEUE], payload);
    },

    health: () => checkRedis(redis, `${settings.queuePrefix}:readiness-probe`),

    async claim(installationId, leaseMs) {
      await connected(redis);
      await claimQueuePrefix(redis, settings.queuePrefix, installationId, leaseMs);
    },

    async release(installationId) {
      await connected(redis);
      await releaseQueuePrefix(redis, settings.queuePrefix, installationId);
    },

    async close() {
      // The queues begin to connect when they are built, and each then reads the server's version.
      // Closing in the middle of that would fail it and log a connection error after a command that
      // went well, so the connection and the queues are let finish starting first (connections.ts).
      await settled(redis);
      if (redis.status === 'ready') {
        await Promise.allSettled(QUEUE_NAMES.map((name) => queues[name].waitUntilReady()));
      }
      await Promise.allSettled(QUEUE_NAMES.map((name) => queues[name].close()));
      await closeRedis(redis);
    },
  };
}
