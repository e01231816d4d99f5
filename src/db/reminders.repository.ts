// Reminders sent to providers: one row per notification, keyed by the queue firing that sent it, so
// a firing that runs twice notifies once.
import { sql } from 'kysely';
import type { InstitutionRef } from '../domain/access.ts';
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

    /** Pending-acceptance referrals, for the reconciler to check their schedules. */
    async pendingAcceptance(afterId: string | null, limit: number): Promise<string[]> {
      let query = db
        .selectFrom('referrals')
        .select('id')
        .where('status', '=', 'pending-acceptance')
        .where('deleted_at', 'is', null);
      if (afterId !== null) query = query.where('id', '>', afterId);
      const rows = await query.orderBy('id').limit(limit).execute();
      return rows.map((r) => r.id);
    },
  };
}
