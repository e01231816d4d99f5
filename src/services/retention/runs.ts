// Retention runs one at a time (`retention_runs`, migration 0033; retention.service.ts holds it): how
// often a run says it is alive, how long one not heard from keeps retention, and what a run that did
// not get it, or lost it, is told. Words and times only.
import type { RunningRetention } from '../../db/retention.repository.ts';

/** How often a run says it is alive, and how long one not heard from keeps retention. */
export const RETENTION_HEARTBEAT_MS = 30_000;
export const RETENTION_RUN_STALE_MS = 5 * 60_000;

/** Another run holds retention: this one did nothing. */
export class RetentionBusyError extends Error {
  override readonly name = 'RetentionBusyError';
  readonly running: RunningRetention;
  constructor(running: RunningRetention) {
    super(
      `another retention run is in progress (${running.startedBy}, started at ${running.startedAt.toISOString()}, ` +
        `last heard from at ${running.heartbeatAt.toISOString()}); nothing was done`,
    );
    this.running = running;
  }
}

/** This run stopped holding retention (it was not heard from long enough that another took over). */
export class RetentionLostError extends Error {
  override readonly name = 'RetentionLostError';
  constructor() {
    super('this retention run was not heard from for too long and another took over; it stopped');
  }
}
