// Triage overdue (docs/api.md, "Worklists"): a referral still waiting for acceptance past its triage
// due time gets `referral.triage-overdue` once for that due time, on its timeline, in the feed and to
// webhooks. A scheduled sweep finds them along an index; each is re-read under its lock and marked in
// the same transaction as its timeline row, so sweeps that overlap or retry say it once.
import { decide, REFHUB_SYSTEM } from '../domain/lifecycle.ts';
import type { Clock } from '../domain/clock.ts';
import type { DisplayTime } from '../domain/display-time.ts';
import { timeline } from '../domain/timeline.ts';
import { isTriageOverdue } from '../domain/worklists.ts';
import { auditEventOf, systemActor } from '../domain/audit.ts';
import type { Stores } from '../db/stores.ts';
import type { Metrics } from '../observability/metrics.ts';
import { timelineEventsOf } from './referrals/mutation.ts';

export interface TriageOverdueDeps {
  readonly stores: Pick<Stores, 'referrals' | 'transaction'>;
  readonly clock: Clock;
  /** Writes the due time in the timeline's sentence in the display zone. */
  readonly displayTime: DisplayTime;
  readonly metrics: Pick<Metrics, 'triageOverdue'>;
}

/** How many referrals one read of the sweep takes. */
const BATCH = 100;

export function createTriageOverdue(deps: TriageOverdueDeps) {
  /** Marks one referral overdue if it still is and was not marked: whether it did. */
  function markOne(referralId: string, requestId: string): Promise<boolean> {
    return deps.stores.transaction(async (tx) => {
      const record = await tx.referrals.lockForSystem(referralId);
      const now = deps.clock.now();
      if (record === undefined || record.offering === null || !isTriageOverdue(record, now)) return false;
      const dueAt = record.triageDueAt;
      if (dueAt === null || !(await tx.referrals.markTriageOverdue(referralId, dueAt, now))) return false;
      decide('triage-overdue', 'system', { status: record.status, offeringCancellable: true });
      await tx.referrals.recordChange({
        // refhub notices it: neither party's system took part.
        timeline: timelineEventsOf(
          referralId,
          REFHUB_SYSTEM,
          [timeline.triageOverdue(record.offering.institution.name, deps.displayTime.dateTime(dueAt))],
          now,
        ),
        outbox: [],
        audit: auditEventOf(systemActor(requestId), 'referral.triage-overdue', [referralId], now),
      });
      return true;
    });
  }

  return {
    /**
     * Says `referral.triage-overdue` for every referral now past its due time and not yet said, the
     * earliest due first; returns how many. A batch that marks none (each raced by a change of the
     * referral) ends the sweep, so it never goes round the same rows.
     */
    async sweep(requestId: string): Promise<{ marked: number }> {
      let marked = 0;
      for (;;) {
        const due = await deps.stores.referrals.triageOverdueDue(deps.clock.now(), BATCH);
        let batch = 0;
        for (const id of due) if (await markOne(id, requestId)) batch += 1;
        marked += batch;
        if (batch > 0) deps.metrics.triageOverdue(batch);
        if (due.length < BATCH || batch === 0) return { marked };
      }
    },
  };
}

export type TriageOverdue = ReturnType<typeof createTriageOverdue>;
