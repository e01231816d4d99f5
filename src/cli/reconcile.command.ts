// `refhub reconcile`: one pass of the reconciler, on demand (a running worker also makes one every
// RECONCILE_INTERVAL_SECONDS), and what it repaired.
import type { Reconciler } from '../queue/reconciler.ts';

export interface ReconcileDeps {
  readonly reconciler: Pick<Reconciler, 'reconcileOnce'>;
}

export async function reconcile(deps: ReconcileDeps): Promise<void> {
  const repairs = await deps.reconciler.reconcileOnce();
  process.stdout.write(
    `Re-enqueued ${repairs.forwardsRequeued} forwards and rebuilt ${repairs.schedulersRebuilt} reminder schedules.\n`,
  );
}
