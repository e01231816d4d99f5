// Runs retention (services/retention/retention.service.ts) at each firing of its schedule.
import type { Job, Worker } from 'bullmq';
import type { Logger } from '../logger.ts';
import type { QueueBackend } from '../queue/backend.ts';
import {
  RETENTION_QUEUE,
  RETENTION_WORKER_DEFAULTS,
  type RetentionPayload,
  type RetentionRunDone,
} from '../queue/retention.queue.ts';
import type { Retention } from '../services/retention/retention.service.ts';
import { logWorkerErrors } from './worker-errors.ts';

export interface RetentionWorkerDeps {
  readonly retention: Pick<Retention, 'run'>;
  readonly logger: Logger;
}

export function startRetentionWorker(
  deps: RetentionWorkerDeps,
  settings: { readonly backend: QueueBackend },
): Worker<RetentionPayload> {
  const worker = settings.backend.worker<RetentionPayload, RetentionRunDone>(
    RETENTION_QUEUE,
    async (job: Job<RetentionPayload>) => {
      const firing = job.id ?? `${job.name}.${job.timestamp}`;
      const run = await deps.retention.run(`retention.${firing}`);
      const done = {
        partitionsMade: run.partitionsMade,
        partitionsDropped: run.archived.length,
        partitionsWaiting: run.waiting.length,
      };
      if (done.partitionsMade + done.partitionsDropped + done.partitionsWaiting > 0)
        deps.logger.info(
          {
            jobId: firing,
            ...done,
            dropped: run.archived.map((a) => `${a.table} ${a.month}`),
            waiting: run.waiting.map((w) => `${w.table} ${w.month}: ${w.reason}`),
          },
          'retention ran',
        );
      return done;
    },
    RETENTION_WORKER_DEFAULTS,
  );
  logWorkerErrors(worker, settings.backend, deps.logger);
  return worker;
}
