// The BullMQ shell of the EHR forward: it runs `forwardReferral` (forward-referral.ts) for each job,
// with the forward policy's backoff, and puts a job the EHR's open circuit deferred back on the queue
// without counting an attempt. The queue hands out forwards round-robin by clinic (queue/
// forward.queue.ts); a job leaves its clinic's backlog when it starts here, named by the institution
// the job carries. Everything the forward decides lives beside it in this folder.
import { DelayedError, type Job, type Worker } from 'bullmq';
import type { QueueBackend } from '../../queue/backend.ts';
import { forwardReferral, type EhrForwardDeps, type EhrForwardPayload } from './forward-referral.ts';
import { forwardBackoff, RetryableForwardError } from './forward-policy.ts';
import { createFormBudget, FORMS_IN_FLIGHT_BYTES } from './form-budget.ts';
import {
  FORWARD_BACKOFF,
  FORWARD_QUEUE,
  FORWARD_WORKER_DEFAULTS,
  type ForwardBacklog,
  type SettledForward,
} from '../../queue/forward.queue.ts';
import { logWorkerErrors } from '../worker-errors.ts';
import { foreignJob, UNKNOWN_REFERRAL, type ForeignJobDeps } from '../foreign-job.ts';

export interface WorkerSettings {
  /** Where the queues are (queue/backend.ts). */
  readonly backend: QueueBackend;
  /** Each institution's backlog, which a started forward leaves (the forwarding store's). */
  readonly backlog: ForwardBacklog;
  readonly backoffBaseMs: number;
  readonly concurrency?: number;
  /** Bytes of forms this process's jobs hold at once (form-budget.ts; FORMS_IN_FLIGHT_BYTES by default). */
  readonly formBytes?: number;
}

export function startEhrForwardWorker(
  deps: Omit<EhrForwardDeps, 'formBudget'> & Pick<ForeignJobDeps, 'metrics'>,
  settings: WorkerSettings,
): Worker<EhrForwardPayload, SettledForward> {
  const formBudget = createFormBudget(settings.formBytes ?? FORMS_IN_FLIGHT_BYTES);
  const worker = settings.backend.worker<EhrForwardPayload, SettledForward>(
    FORWARD_QUEUE,
    async (job: Job<EhrForwardPayload>, token?: string) => {
      // Started: no longer waiting in its clinic's backlog (jobs queued before the order carry no
      // institution and are in none).
      if (job.data.institution !== undefined && job.id !== undefined) {
        await settings.backlog.forget([{ institution: job.data.institution, jobId: job.id }]);
      }
      // Every line the job logs carries its job ID.
      const logger = deps.logger.child({ jobId: job.id });
      const result = await forwardReferral({ ...deps, formBudget, logger }, job.data, job.attemptsMade + 1);
      if (result === 'unknown-referral') throw foreignJob({ ...deps, logger }, FORWARD_QUEUE);
      if (typeof result === 'string') return result;
      // Back to the queue until the circuit's next probe; a deferral is not an attempt.
      await job.moveToDelayed(result.deferredUntil.getTime(), token);
      throw new DelayedError();
    },
    {
      // Concurrency, locks and the stalled check that gives a dead worker's jobs back: the queue's.
      ...FORWARD_WORKER_DEFAULTS,
      concurrency: settings.concurrency ?? FORWARD_WORKER_DEFAULTS.concurrency,
      settings: {
        backoffStrategy: (attemptsMade, type, error) =>
          type === FORWARD_BACKOFF
            ? forwardBackoff(settings.backoffBaseMs)(attemptsMade, type, error)
            : 1_000,
      },
    },
  );
  logWorkerErrors(worker, settings.backend, deps.logger);
  worker.on('failed', (job, error) => {
    // Messages of unexpected errors are not logged: a driver's message may quote a value. A foreign
    // job was logged already.
    if (
      job !== undefined &&
      !(error instanceof RetryableForwardError) &&
      error.message !== UNKNOWN_REFERRAL
    ) {
      deps.logger.warn(
        { referralId: job.data.referralId, jobId: job.id, attemptsMade: job.attemptsMade, error: error.name },
        'ehr forward job failed',
      );
    }
  });
  return worker;
}
