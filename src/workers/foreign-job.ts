// A job for a referral this installation's database does not have. Referrals are never removed (a
// deleted draft keeps its row), and work is queued only after its referral committed, so such a job
// was queued by another installation that uses the same queue prefix on the same Redis. The prefix
// claim (queue/prefix-claim.ts) refuses that at start; this is the last line. The job is not acted
// on, as if its referral were withdrawn (that would complete another installation's forward, or remove
// its reminder schedule): it fails for good with the code `unknown_referral`, which the dashboard
// shows, is counted, and is logged as a warning with its job ID and queue, nothing more.
import { UnrecoverableError } from 'bullmq';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { QueueName } from '../queue/registry.ts';

export const UNKNOWN_REFERRAL = 'unknown_referral';

export interface ForeignJobDeps {
  readonly logger: Logger;
  readonly metrics: Pick<Metrics, 'foreignJob'>;
}

/** Logs and counts the job; returns the error that fails it for good. `logger` carries the job ID. */
export function foreignJob(deps: ForeignJobDeps, queue: QueueName): Error {
  deps.metrics.foreignJob(queue);
  deps.logger.warn(
    { queue },
    "a job for a referral this installation's database does not have: another installation uses " +
      'this queue prefix on this Redis; the job is failed, not acted on (give each installation its ' +
      'own QUEUE_PREFIX)',
  );
  return new UnrecoverableError(UNKNOWN_REFERRAL);
}
