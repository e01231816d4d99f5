// `refhub reconcile`: one pass of the reconciler, on demand (a running worker also makes one every
// RECONCILE_INTERVAL_SECONDS), and what it repaired.
import type { Reconciler } from '../queue/reconciler.ts';
import { plural } from './plural.ts';

export interface ReconcileDeps {
  readonly reconciler: Pick<Reconciler, 'reconcileOnce'>;
}

export async function reconcile(deps: ReconcileDeps): Promise<void> {
  const repairs = await deps.reconciler.reconcileOnce();
  process.stdout.write(
    repairs.forwardsRequeued === 0 && repairs.schedulersRebuilt === 0
      ? 'Nothing to repair: every due forward has a live job and every reminder schedule exists.\n'
      : `Re-enqueued ${plural(repairs.forwardsRequeued, 'forward')} and rebuilt ${plural(repairs.schedulersRebuilt, 'reminder schedule')}.\n`,
  );
}
