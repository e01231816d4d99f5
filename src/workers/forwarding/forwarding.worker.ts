// The BullMQ shell of the EHR forward: it runs `forwardReferral` (src/forwarding) for each job, with
// the forward policy's backoff, and puts a job the EHR's open circuit deferred back on the queue
// without counting an attempt. Everything the forward decides lives in src/forwarding.
import { DelayedError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  forwardReferral,
  type EhrForwardDeps,
  type EhrForwardPayload,
  type SettledForward,
} from './forward-referral.ts';
import { FORWARD_BACKOFF, forwardBackoff, RetryableForwardError } from './forward-policy.ts';
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
      concurrency: settings.concurrency ?? 16,
      // A worker that dies (a crash, a SIGKILL, a lost machine) leaves its active jobs behind. BullMQ
      // gives them back through its stalled check: a job still active whose lock has expired
      // (lockDuration, renewed every half of it while the job runs) returns to wait. The check needs
      // two passes and runs at most once per stalledInterval across all workers, so with BullMQ's
      // default of 30 s a forward waited up to about 90 s after its worker died; at 10 s it waits
      // about lockDuration + 20 s. Checking more often costs one short script run; a job counts as
      // stalled only once its lock is gone, so no job is taken from a worker that is alive.
      lockDuration: 30_000,
      stalledInterval: 10_000,
      // A job that stalls a second time fails ("job stalled more than allowable limit"). Its referral
      // is still queued in the database, so the reconciler enqueues it afresh.
      maxStalledCount: 1,
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
