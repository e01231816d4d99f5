// The incidents queue: one job scheduler whose firings run the incident sweep
// (services/incidents.service.ts): look at each condition an operator must act on, open and resolve
// incidents, send the ops webhooks that are due. Its name, the job a firing carries (none of its own:
// the database and the queues say what is wrong), what a firing returns, the worker's settings, and
// the function that makes sure the schedule exists at the configured interval.
import type { Queue } from 'bullmq';
import type { WorkerDefaults } from './job-settings.ts';

export const INCIDENTS_QUEUE = 'incidents';

/** A firing of the sweep: it carries nothing. */
export type IncidentsPayload = Readonly<Record<string, never>>;

/** What one sweep did: incidents opened and resolved, events sent, and one that failed (0 or 1). */
export interface SweptIncidents {
  readonly opened: number;
  readonly resolved: number;
  readonly sent: number;
  readonly failed: number;
}

/** One sweep at a time: a few reads, and the events of the incidents that changed. */
export const INCIDENTS_WORKER_DEFAULTS = { concurrency: 1 } as const satisfies WorkerDefaults;

export type IncidentsQueue = Queue<IncidentsPayload>;

/** The one schedule of the sweep. */
export const INCIDENTS_SCHEDULER = 'incidents.sweep';

/**
 * Makes sure the sweep is scheduled every `everyMs`: adds the schedule when it is missing or has
 * another interval; returns whether it did. A firing is not retried: the next one looks again, and an
 * event not delivered waits in the database for its own retry.
 */
export async function ensureIncidentsSweep(queue: IncidentsQueue, everyMs: number): Promise<boolean> {
  const current = await queue.getJobScheduler(INCIDENTS_SCHEDULER);
  if (current?.every === everyMs) return false;
  await queue.upsertJobScheduler(
    INCIDENTS_SCHEDULER,
    { every: everyMs },
    { name: 'sweep', data: {}, opts: { attempts: 1 } },
  );
  return true;
}
