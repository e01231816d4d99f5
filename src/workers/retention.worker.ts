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
import type { Retention, RetentionRun } from '../services/retention/retention.service.ts';
import { RetentionBusyError } from '../services/retention/runs.ts';
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
      let run: RetentionRun;
      try {
        run = await deps.retention.run(`retention.${firing}`);
      } catch (error) {
        // An operator's run holds retention and does this firing's work: nothing is left to do.
        if (!(error instanceof RetentionBusyError)) throw error;
        deps.logger.info(
          {
            jobId: firing,
            heldBy: error.running.startedBy,
            heldSince: error.running.startedAt.toISOString(),
          },
          'retention skipped: another run holds it',
        );
        return { partitionsMade: 0, referralsArchived: 0, partitionsDropped: 0, partitionsWaiting: 0 };
      }
      const done = {
        partitionsMade: run.partitionsMade,
        referralsArchived: run.referralsArchived,
        partitionsDropped: run.archived.length,
        partitionsWaiting: run.waiting.length,
      };
      if (Object.values(done).some((count) => count > 0))
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
