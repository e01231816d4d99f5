// Runs the triage-overdue sweep (services/triage-overdue.service.ts) at each firing of its schedule.
import type { Job, Worker } from 'bullmq';
import type { Logger } from '../logger.ts';
import type { QueueBackend } from '../queue/backend.ts';
import {
  TRIAGE_OVERDUE_QUEUE,
  TRIAGE_OVERDUE_WORKER_DEFAULTS,
  type SweptOverdue,
  type TriageOverduePayload,
} from '../queue/triage-overdue.queue.ts';
import type { TriageOverdue } from '../services/triage-overdue.service.ts';
import { logWorkerErrors } from './worker-errors.ts';

export interface TriageOverdueWorkerDeps {
  readonly triageOverdue: TriageOverdue;
  readonly logger: Logger;
}

export function startTriageOverdueWorker(
  deps: TriageOverdueWorkerDeps,
  settings: { readonly backend: QueueBackend },
): Worker<TriageOverduePayload> {
  const worker = settings.backend.worker<TriageOverduePayload, SweptOverdue>(
    TRIAGE_OVERDUE_QUEUE,
    async (job: Job<TriageOverduePayload>) => {
      const firing = job.id ?? `${job.name}.${job.timestamp}`;
      const result = await deps.triageOverdue.sweep(`triage-overdue.${firing}`);
      if (result.marked > 0)
        deps.logger.info({ jobId: firing, marked: result.marked }, 'triage overdue recorded');
      return result;
    },
    TRIAGE_OVERDUE_WORKER_DEFAULTS,
  );
  logWorkerErrors(worker, settings.backend, deps.logger);
  return worker;
}
