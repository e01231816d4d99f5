// Provider reminders (contract §4, "reminder fired"). While a referral waits in pending-acceptance,
// its provider is reminded `REMINDER_AFTER_SECONDS` after it entered that status and then every
// `REMINDER_INTERVAL_SECONDS`, at most `REMINDER_MAX` times. The database decides: `scheduleFor`
// derives the schedule from the referral's timeline and the reminders already sent, so a schedule lost
// with Redis is rebuilt the same; `fire` re-reads the referral under a lock and sends only while the
// referral still waits and reminders remain.
import type { DataKeys } from '../db/data-keys.repository.ts';
import { v7 as uuidv7 } from 'uuid';
import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { decide, REFHUB_SYSTEM } from '../domain/lifecycle.ts';
import { timeline } from '../domain/timeline.ts';
import { timelineRepository } from '../db/referrals/parts.ts';
import { createReferralStore } from '../db/referrals/referrals.store.ts';
import { reminderRepository } from '../db/reminders.repository.ts';
import type { Database } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';
import type { ReminderSchedule } from '../queue/producer.ts';
import type { FireResult } from '../queue/registry.ts';
import type { Metrics } from '../observability/metrics.ts';
import { timelineEventsOf } from './referral-mutation.ts';
import { auditEventOf, systemActor } from '../db/audit/audit.repository.ts';
import { changeLogRepository } from '../db/referrals/change.ts';

export interface ReminderPolicy {
  readonly afterSeconds: number;
  readonly intervalSeconds: number;
  readonly max: number;
}

export interface ReminderDeps {
  readonly db: Kysely<Database>;
  /** The keys patient data is sealed and opened with. */
  readonly dataKeys: DataKeys;
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
  async function progress(db: Executor, referralId: string) {
    const since = await timelineRepository(db).latestOf(referralId, PENDING_EVENT);
    if (since === undefined) return undefined;
    return { since, sent: await reminderRepository(db).countSince(referralId, since) };
  }

  return {
    /** The schedule the referral should have now, or null when it should have none. */
    async scheduleFor(referralId: string): Promise<ReminderSchedule | null> {
      const record = await createReferralStore(deps.db, deps.dataKeys).findForSystem(referralId);
      if (record?.status !== 'pending-acceptance' || policy.max === 0) return null;
      const p = await progress(deps.db, referralId);
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
      const result = await deps.db.transaction().execute(async (trx): Promise<FireResult> => {
        const record = await createReferralStore(trx, deps.dataKeys).lockForSystem(referralId);
        // A deleted referral keeps its row (and its sender); one with none is not in this database.
        if (
          record === undefined &&
          (await createReferralStore(trx, deps.dataKeys).senderOf(referralId)) === undefined
        ) {
          return { kind: 'unknown-referral' };
        }
        if (record?.status !== 'pending-acceptance' || record.offering === null) return { kind: 'done' };
        const p = await progress(trx, referralId);
        if (p === undefined || p.sent >= policy.max) return { kind: 'done' };
        const now = deps.clock.now();
        const sequence = p.sent + 1;
        const inserted = await reminderRepository(trx).insert({
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
        await changeLogRepository(trx, deps.dataKeys).record({
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
