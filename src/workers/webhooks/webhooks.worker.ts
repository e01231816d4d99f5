// The BullMQ shell of webhook delivery: it runs `deliverEvent` (deliver-event.ts) for each job. A failed
// delivery is retried on WEBHOOK_RETRY_SCHEDULE (with ±10% jitter, so retries of a burst spread out);
// 410 Gone stops the job for good. What it throws is a code (`HTTP_503`, `WEBHOOK_ATTEMPT_TIMEOUT`),
// never a message, because BullMQ keeps it in Redis and the dashboard shows it.
import { UnrecoverableError, type Job, type Worker } from 'bullmq';
import type { QueueBackend } from '../../queue/backend.ts';
import {
  WEBHOOK_BACKOFF,
  webhookMaxAttempts,
  WEBHOOKS_FAIR_SHARE,
  WEBHOOKS_QUEUE,
  WEBHOOKS_WORKER_DEFAULTS,
  type SettledWebhook,
  type WebhookPayload,
} from '../../queue/webhooks.queue.ts';
import { deliverEvent, type DeliverEventDeps } from './deliver-event.ts';
import { logWorkerErrors } from '../worker-errors.ts';
import { createFairShare, fairShareDelayMs, setAside } from '../fair-share.ts';

export interface WebhookWorkerSettings {
  readonly backend: QueueBackend;
  readonly retryScheduleMs: readonly number[];
  readonly concurrency?: number;
  /** Jobs of one institution this process runs at once (WEBHOOKS_FAIR_SHARE by default). */
  readonly perInstitution?: number;
}

/** A delivery that failed and may be retried; its message is the code alone. */
export class WebhookDeliveryError extends Error {
  override readonly name = 'WebhookDeliveryError';
}

/** The wait before retry `attemptsMade` (1 after the first failure), with ±10% jitter. */
export function webhookBackoff(
  scheduleMs: readonly number[],
  attemptsMade: number,
  random = Math.random,
): number {
  const base = scheduleMs[Math.min(attemptsMade, scheduleMs.length) - 1] ?? 0;
  return Math.round(base * (0.9 + 0.2 * random()));
}

export function startWebhookWorker(
  deps: DeliverEventDeps,
  settings: WebhookWorkerSettings,
): Worker<WebhookPayload, SettledWebhook> {
  const maxAttempts = webhookMaxAttempts(settings.retryScheduleMs);
  const share = createFairShare(settings.perInstitution ?? WEBHOOKS_FAIR_SHARE.perInstitution);
  const worker = settings.backend.worker<WebhookPayload, SettledWebhook>(
    WEBHOOKS_QUEUE,
    async (job: Job<WebhookPayload>, token?: string) => {
      // Counted before anything is read: a job set aside costs one Redis call, not a delivery.
      const giveBack = share.take(job.data.institution ?? `subscription:${job.data.subscriptionId}`);
      if (giveBack === undefined) {
        deps.metrics.jobSetAside(WEBHOOKS_QUEUE);
        return setAside(job, token, fairShareDelayMs(job));
      }
      let result;
      try {
        result = await deliverEvent(
          { ...deps, logger: deps.logger.child({ jobId: job.id }) },
          job.data,
          job.attemptsMade + 1,
          maxAttempts,
        );
      } finally {
        giveBack();
      }
      switch (result.kind) {
        case 'settled':
          return result.result;
        case 'gone':
          throw new UnrecoverableError('HTTP_410');
        case 'retry':
          throw new WebhookDeliveryError(result.code);
      }
    },
    {
      // Concurrency, locks and the stalled check that gives a dead worker's jobs back: the registry's.
      ...WEBHOOKS_WORKER_DEFAULTS,
      concurrency: settings.concurrency ?? WEBHOOKS_WORKER_DEFAULTS.concurrency,
      settings: {
        backoffStrategy: (attemptsMade, type) =>
          type === WEBHOOK_BACKOFF ? webhookBackoff(settings.retryScheduleMs, attemptsMade) : 1_000,
      },
    },
  );
  logWorkerErrors(worker, settings.backend, deps.logger);
  return worker;
}
