// The log of webhook delivery attempts: when, the receiver's status, how long, and an error code when
// no answer came. The subscription's institution reads it; it holds IDs and codes only.
import type { Insertable } from 'kysely';
import type { Executor } from '../executor.ts';
import type { WebhookAttemptsTable } from '../schema.ts';

export type AttemptOutcome = 'delivered' | 'retrying' | 'failed';

export interface WebhookAttempt {
  readonly id: string;
  readonly subscriptionId: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly attempt: number;
  readonly attemptedAt: Date;
  readonly outcome: AttemptOutcome;
  readonly httpStatus: number | null;
  readonly durationMs: number;
  readonly errorCode: string | null;
  /** The attempt an operator's replay repeated (ledger-search); null or absent for any other. */
  readonly replayOf?: string | null;
}

/** The row of an attempt, for an insert here or in another statement's CTE. */
export function attemptRow(a: WebhookAttempt): Insertable<WebhookAttemptsTable> {
  return {
    id: a.id,
    subscription_id: a.subscriptionId,
    event_id: a.eventId,
    event_type: a.eventType,
    attempt: a.attempt,
    attempted_at: a.attemptedAt,
    outcome: a.outcome,
    http_status: a.httpStatus,
    duration_ms: a.durationMs,
    error_code: a.errorCode,
    replay_of: a.replayOf ?? null,
  };
}

export function webhookAttemptRepository(db: Executor) {
  return {
    async insert(a: WebhookAttempt): Promise<void> {
      await db.insertInto('webhook_attempts').values(attemptRow(a)).execute();
    },

    /** The subscription's latest attempts, newest first, of one event when `eventId` is given. */
    async latest(subscriptionId: string, limit: number, eventId?: string): Promise<WebhookAttempt[]> {
      const rows = await db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('subscription_id', '=', subscriptionId)
        .$if(eventId !== undefined, (q) => q.where('event_id', '=', eventId ?? ''))
        .orderBy('attempted_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      return rows.map((r) => ({
        id: r.id,
        subscriptionId: r.subscription_id,
        eventId: r.event_id,
        eventType: r.event_type,
        attempt: r.attempt,
        attemptedAt: r.attempted_at,
        outcome: r.outcome,
        httpStatus: r.http_status,
        durationMs: r.duration_ms,
        errorCode: r.error_code,
        replayOf: r.replay_of,
      }));
    },
  };
}
