// Runs the incident sweep (services/incidents.service.ts) at each firing of its schedule.
import type { Job, Worker } from 'bullmq';
import type { Logger } from '../logger.ts';
import type { QueueBackend } from '../queue/backend.ts';
import {
  INCIDENTS_QUEUE,
  INCIDENTS_WORKER_DEFAULTS,
  type IncidentsPayload,
  type SweptIncidents,
} from '../queue/incidents.queue.ts';
import type { Incidents } from '../services/incidents.service.ts';
import { logWorkerErrors } from './worker-errors.ts';

export interface IncidentsWorkerDeps {
  readonly incidents: Incidents;
  readonly logger: Logger;
}

export function startIncidentsWorker(
  deps: IncidentsWorkerDeps,
  settings: { readonly backend: QueueBackend },
): Worker<IncidentsPayload> {
  const worker = settings.backend.worker<IncidentsPayload, SweptIncidents>(
    INCIDENTS_QUEUE,
    (_job: Job<IncidentsPayload>) => deps.incidents.sweep(),
    INCIDENTS_WORKER_DEFAULTS,
  );
  logWorkerErrors(worker, settings.backend, deps.logger);
  return worker;
}
