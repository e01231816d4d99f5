// `refhub reconcile`: one pass of the reconciler, on demand (a running worker also makes one every
// RECONCILE_INTERVAL_SECONDS), and what it repaired. Lost attachment scans are looked for only where
// ATTACHMENT_SCANNER is set in the command's environment, as it is in the workers that scan them, and
// the line names scans only then.
import type { Reconciler, Repairs } from '../queue/reconciler.ts';
import { plural } from './plural.ts';

export interface ReconcileDeps {
  readonly reconciler: Pick<Reconciler, 'reconcileOnce'>;
  /** Whether the reconciler looks for lost attachment scans (ATTACHMENT_SCANNER is set). */
  readonly scansAttachments: boolean;
}

/** The line `refhub reconcile` prints for one pass's repairs. */
export function repairsLine(repairs: Repairs, scansAttachments: boolean): string {
  const { forwardsRequeued: forwards, scansRequeued: scans, schedulersRebuilt: schedules } = repairs;
  if (forwards + scans + schedules === 0) {
    return scansAttachments
      ? 'Nothing to repair: every due forward and every attachment waiting for its scan has a live job, ' +
          'and every reminder schedule exists.'
      : 'Nothing to repair: every due forward has a live job and every reminder schedule exists.';
  }
  const requeued = scansAttachments
    ? `${plural(forwards, 'forward')} and ${plural(scans, 'attachment scan')},`
    : plural(forwards, 'forward');
  return `Re-enqueued ${requeued} and rebuilt ${plural(schedules, 'reminder schedule')}.`;
}

export async function reconcile(deps: ReconcileDeps): Promise<void> {
  const repairs = await deps.reconciler.reconcileOnce();
  process.stdout.write(`${repairsLine(repairs, deps.scansAttachments)}\n`);
}
