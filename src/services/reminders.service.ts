// Provider reminders (contract §4, "reminder fired"). While a referral waits in pending-acceptance,
// its provider is reminded `REMINDER_AFTER_SECONDS` after it entered that status and then every
// `REMINDER_INTERVAL_SECONDS`, at most `REMINDER_MAX` times. The database decides: `scheduleFor`
// derives the schedule from the referral's timeline and the reminders already sent, so a schedule lost
// with Redis is rebuilt the same; `fire` re-reads the referral under a lock and sends only while the
// referral still waits and reminders remain.
import { v7 as uuidv7 } from 'uuid';
import type { Clock } from '../domain/clock.ts';
import { decide, REFHUB_SYSTEM } from '../domain/lifecycle.ts';
import { timeline } from '../domain/timeline.ts';
import type { CapabilityStores, Stores } from '../db/stores.ts';
import type { ReminderSchedule } from '../queue/producer.ts';
import type { FireResult } from '../queue/registry.ts';
import type { Metrics } from '../observability/metrics.ts';
import { timelineEventsOf } from './referrals/mutation.ts';
import { auditEventOf, systemActor } from '../domain/audit.ts';

export interface ReminderPolicy {
  readonly afterSeconds: number;
  readonly intervalSeconds: number;
  readonly max: number;
}

export interface ReminderDeps {
  readonly stores: Pick<Stores, 'referrals' | 'reminders' | 'transaction'>;
  readonly clock: Clock;
  readonly policy: ReminderPolicy;
  readonly metrics: Pick<Metrics, 'reminderSent'>;
}

/** What one firing did (the reminder queue's job result). */

const KIND = 'provider-patient-create';
const PENDING_EVENT = 'referral.pending-acceptance';

export function createReminders(deps: ReminderDeps) {
  const { policy } = deps;

  /** When the current wait began and how many reminders it has had. */
  async function progress(stores: Pick<CapabilityStores, 'referrals' | 'reminders'>, referralId: string) {
    const since = await stores.referrals.timeline.latestOf(referralId, PENDING_EVENT);
    if (since === undefined) return undefined;
    return { since, sent: await stores.reminders.countSince(referralId, since) };
  }

  return {
    /** The schedule the referral should have now, or null when it should have none. */
    async scheduleFor(referralId: string): Promise<ReminderSchedule | null> {
      const record = await deps.stores.referrals.findForSystem(referralId);
      if (record?.status !== 'pending-acceptance' || policy.max === 0) return null;
      const p = await progress(deps.stores, referralId);
      if (p === undefined || p.sent >= policy.max) return null;
      const everyMs = policy.intervalSeconds * 1000;
      return {
        startAt: new Date(p.since.getTime() + policy.afterSeconds * 1000 + p.sent * everyMs),
        everyMs,
        limit: policy.max - p.sent,
      };
    },

    /** One firing; `firingKey` identifies it (the queue job), so running it twice sends once. */
    async fire(referralId: string, firingKey: string, requestId: string): Promise<FireResult> {
      const result = await deps.stores.transaction(async (tx): Promise<FireResult> => {
        const record = await tx.referrals.lockForSystem(referralId);
        // A deleted referral keeps its row (and its sender); one with none is not in this database.
        if (record === undefined && (await tx.referrals.senderOf(referralId)) === undefined) {
          return { kind: 'unknown-referral' };
        }
        if (record?.status !== 'pending-acceptance' || record.offering === null) return { kind: 'done' };
        const p = await progress(tx, referralId);
        if (p === undefined || p.sent >= policy.max) return { kind: 'done' };
        const now = deps.clock.now();
        const sequence = p.sent + 1;
        const inserted = await tx.reminders.insert({
          id: uuidv7(),
          referralId,
          kind: KIND,
          recipient: record.offering.institution,
          pendingSince: p.since,
          sequence,
          firingKey,
          sentAt: now,
        });
        if (!inserted) return { kind: 'already-sent', remaining: policy.max - p.sent };
        decide('reminder-sent', 'system', { status: record.status, offeringCancellable: true });
        await tx.referrals.recordChange({
          // refhub sends the reminder: the provider's system took no part in it.
          timeline: timelineEventsOf(
            referralId,
            REFHUB_SYSTEM,
            [timeline.reminderSent(record.offering.institution.name)],
            now,
          ),
          outbox: [],
          audit: auditEventOf(systemActor(requestId), 'referral.reminder-sent', [referralId], now),
        });
        return { kind: 'sent', sequence, remaining: policy.max - sequence };
      });
      if (result.kind === 'sent') deps.metrics.reminderSent();
      return result;
    },
  };
}

export type Reminders = ReturnType<typeof createReminders>;
