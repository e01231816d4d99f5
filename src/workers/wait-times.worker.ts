// Recomputes the offerings' wait times: each job of the wait-times queue (its nightly scheduler, or the
// run a worker process adds as it starts) computes every offering's figures from the timeline and
// replaces the stored ones in one transaction (services/wait-times.service.ts).
import type { Job, Worker } from 'bullmq';
import type { Logger } from '../logger.ts';
import type { QueueBackend } from '../queue/backend.ts';
import {
  WAIT_TIMES_QUEUE,
  WAIT_TIMES_WORKER_DEFAULTS,
  type WaitTimesPayload,
  type WaitTimesRun,
} from '../queue/wait-times.queue.ts';
import type { WaitTimes } from '../services/wait-times.service.ts';
import { logWorkerErrors } from './worker-errors.ts';

export interface WaitTimesWorkerDeps {
  readonly waitTimes: Pick<WaitTimes, 'recompute'>;
  readonly logger: Logger;
}

/** One run: computes and stores every offering's figures, and logs the counts. */
export async function computeWaitTimes(
  deps: WaitTimesWorkerDeps,
  payload: WaitTimesPayload,
): Promise<WaitTimesRun> {
  const run = await deps.waitTimes.recompute();
  deps.logger.info({ trigger: payload.trigger, ...run }, 'wait times computed');
  return run;
}

export function startWaitTimesWorker(
  deps: WaitTimesWorkerDeps,
  settings: { readonly backend: QueueBackend },
): Worker<WaitTimesPayload> {
  const worker = settings.backend.worker<WaitTimesPayload, WaitTimesRun>(
    WAIT_TIMES_QUEUE,
    (job: Job<WaitTimesPayload>) => computeWaitTimes(deps, job.data),
    WAIT_TIMES_WORKER_DEFAULTS,
  );
  logWorkerErrors(worker, settings.backend, deps.logger);
  return worker;
}
