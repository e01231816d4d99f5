// `refhub forwards retry`: forwards that failed for good go to the EHR again, once the operator has
// fixed the cause. Only failed forwards are queued again; any other referral named is left as it is
// and listed, so a typo or a referral that recovered meanwhile is visible. On a terminal, a retry of
// many shows how far it is.
import { InvalidArgumentError } from 'commander';
import { v7 as uuidv7 } from 'uuid';
import { isUuid } from '../domain/ids.ts';
import type { EhrForwarding } from '../services/forwarding.service.ts';
import { plural } from './plural.ts';
import { withProgress } from './progress.ts';

export interface RetryForwardsDeps {
  readonly ehrForwarding: Pick<EhrForwarding, 'retryFailed'>;
}

export async function retryForwards(
  deps: RetryForwardsDeps,
  referralIds: readonly string[],
  options: { readonly allFailed?: boolean },
): Promise<void> {
  if ((referralIds.length === 0) === (options.allFailed !== true)) {
    throw new InvalidArgumentError('name referral IDs, or pass --all-failed (not both)');
  }
  const bad = referralIds.filter((id) => !isUuid(id));
  if (bad.length > 0) throw new InvalidArgumentError(`not referral IDs: ${bad.join(', ')}`);
  const requeued = await withProgress('Queueing failed forwards again', (report) =>
    deps.ehrForwarding.retryFailed(
      options.allFailed === true ? undefined : referralIds,
      `ops.retry.${uuidv7()}`,
      report,
    ),
  );
  const skipped = referralIds.filter((id) => !requeued.includes(id));
  process.stdout.write(
    requeued.length > 0
      ? `Queued ${plural(requeued.length, 'failed forward')} again.\n`
      : options.allFailed === true
        ? 'No failed forwards: nothing was queued again.\n'
        : 'Nothing was queued again.\n',
  );
  if (skipped.length > 0) process.stdout.write(`Not failed, so left as they are: ${skipped.join(', ')}\n`);
}
