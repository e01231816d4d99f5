// The BullMQ shell of the EHR forward: it runs `forwardReferral` (forward-referral.ts) for each job,
// with the forward policy's backoff, and puts a job the EHR's open circuit deferred back on the queue
// without counting an attempt. Everything the forward decides lives beside it in this folder.
import { DelayedError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  forwardReferral,
  type EhrForwardDeps,
  type EhrForwardPayload,
  type SettledForward,
} from './forward-referral.ts';
import { forwardBackoff, RetryableForwardError } from './forward-policy.ts';
import { FORWARD_BACKOFF, WORKER_DEFAULTS } from '../../queue/registry.ts';
import { logWorkerErrors } from '../worker-errors.ts';

export interface WorkerSettings {
  /** A worker connection (see queue/connections.ts); BullMQ adds its own blocking one from it. */
  readonly connection: Redis;
  readonly queuePrefix: string;
  readonly backoffBaseMs: number;
  readonly concurrency?: number;
}

export function startEhrForwardWorker(
  deps: EhrForwardDeps,
  settings: WorkerSettings,
): Worker<EhrForwardPayload, SettledForward> {
  const worker = new Worker<EhrForwardPayload, SettledForward>(
    'ehr-forward',
    async (job: Job<EhrForwardPayload>, token?: string) => {
      // Every line the job logs carries its job ID.
      const result = await forwardReferral(
        { ...deps, logger: deps.logger.child({ jobId: job.id }) },
        job.data,
        job.attemptsMade + 1,
      );
      if (typeof result === 'string') return result;
      // Back to the queue until the circuit's next probe; a deferral is not an attempt.
      await job.moveToDelayed(result.deferredUntil.getTime(), token);
      throw new DelayedError();
    },
    {
      connection: settings.connection,
      prefix: settings.queuePrefix,
      // Concurrency, locks and the stalled check that gives a dead worker's jobs back: the registry's.
      ...WORKER_DEFAULTS['ehr-forward'],
      concurrency: settings.concurrency ?? WORKER_DEFAULTS['ehr-forward'].concurrency,
      settings: {
        backoffStrategy: (attemptsMade, type, error) =>
          type === FORWARD_BACKOFF
            ? forwardBackoff(settings.backoffBaseMs)(attemptsMade, type, error)
            : 1_000,
      },
    },
  );
  logWorkerErrors(worker, settings.connection, deps.logger);
  worker.on('failed', (job, error) => {
    // Messages of unexpected errors are not logged: a driver's message may quote a value.
    if (job !== undefined && !(error instanceof RetryableForwardError)) {
      deps.logger.warn(
        { referralId: job.data.referralId, jobId: job.id, attemptsMade: job.attemptsMade, error: error.name },
        'ehr forward job failed',
      );
    }
  });
  return worker;
}
