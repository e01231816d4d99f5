// Reminders sent to providers: one row per notification, keyed by the queue firing that sent it, so
// a firing that runs twice notifies once.
import { sql } from 'kysely';
import type { InstitutionRef } from '../domain/access.ts';
import { OUTBOX_TOPICS } from '../domain/lifecycle.ts';
import type { Executor } from './executor.ts';

export interface NewReminderNotification {
  readonly id: string;
  readonly referralId: string;
  readonly kind: string;
  readonly recipient: InstitutionRef;
  readonly pendingSince: Date;
  readonly sequence: number;
  readonly firingKey: string;
  readonly sentAt: Date;
}

/** Pending-acceptance referrals with no outbox row of the reminders' topic left to dispatch. */
function awaitingScheduleQuery(db: Executor) {
  return db
    .selectFrom('referrals as r')
    .select('r.id')
    .where('r.status', '=', 'pending-acceptance')
    .where('r.deleted_at', 'is', null)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('outbox as o')
            .select('o.id')
            .whereRef('o.referral_id', '=', 'r.id')
            .where('o.topic', '=', OUTBOX_TOPICS.reminders)
            .where('o.processed_at', 'is', null),
        ),
      ),
    );
}

export function reminderRepository(db: Executor) {
  return {
    /** Reminders sent since the referral entered pending-acceptance at `pendingSince`. */
    async countSince(referralId: string, pendingSince: Date): Promise<number> {
      const row = await db
        .selectFrom('reminder_notifications')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('referral_id', '=', referralId)
        .where('pending_since', '=', pendingSince)
        .executeTakeFirstOrThrow();
      return row.n;
    },

    /** False when this firing was recorded before (the row is left as it was). */
    async insert(n: NewReminderNotification): Promise<boolean> {
      const result = await db
        .insertInto('reminder_notifications')
        .values({
          id: n.id,
          referral_id: n.referralId,
          kind: n.kind,
          recipient_id_type: n.recipient.idType,
          recipient_id: n.recipient.id,
          pending_since: n.pendingSince,
          sequence: n.sequence,
          firing_key: n.firingKey,
          sent_at: n.sentAt,
        })
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .executeTakeFirst();
      return result !== undefined;
    },

    /**
     * Pending-acceptance referrals that should have their reminder schedule in Redis by now, for the
     * reconciler to check, a page at a time by ID: those with a reminders' outbox row still to
     * dispatch are left out, since the relay sets (or is setting) their schedule.
     */
    async pendingAcceptance(afterId: string | null, limit: number): Promise<string[]> {
      let query = awaitingScheduleQuery(db);
      if (afterId !== null) query = query.where('r.id', '>', afterId);
      const rows = await query.orderBy('r.id').limit(limit).execute();
      return rows.map((r) => r.id);
    },

    /**
     * `pendingAcceptance` for one referral, read again: the reconciler asks it after finding no
     * schedule in Redis, so a schedule the relay is setting, or a referral that left pending-acceptance
     * since the page was read, is not counted as lost.
     */
    async awaitsSchedule(referralId: string): Promise<boolean> {
      const row = await awaitingScheduleQuery(db).where('r.id', '=', referralId).executeTakeFirst();
      return row !== undefined;
    },
  };
}
