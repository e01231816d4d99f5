// The transactional outbox. A request that needs background work writes a row here in its own
// transaction; the relay later turns rows into queue jobs and deletes them. So no work is lost when
// Redis is down, no job exists for a change that rolled back, and the table holds only work still to
// do: what the relay and the reconciler read does not grow with the work done (migration
// `0011-outbox-pending-work`). Rows carry IDs only, never patient data.
import type { InstitutionRef } from '../domain/access.ts';
import type { OutboxTopic } from '../domain/lifecycle.ts';
import { sql, type Insertable, type Selectable } from 'kysely';
import type { Executor } from './executor.ts';
import { referralEventRepository } from './events.repository.ts';
import type { OutboxTable } from './schema.ts';
import { webhookRelayRepository } from './webhooks/relay.repository.ts';

export interface NewOutboxMessage {
  readonly topic: OutboxTopic;
  readonly referralId: string;
  readonly version: number;
  readonly requestId: string;
  readonly at: Date;
}

export interface OutboxMessage {
  readonly id: string;
  readonly topic: OutboxTopic;
  readonly referralId: string;
  readonly version: number;
  readonly requestId: string;
  readonly createdAt: Date;
  /** The referral's sending institution, whose backlog a forward joins (queue/forward.queue.ts). */
  readonly sender: InstitutionRef;
}

export function outboxRows(messages: readonly NewOutboxMessage[]): Insertable<OutboxTable>[] {
  return messages.map((m) => ({
    topic: m.topic,
    referral_id: m.referralId,
    version: m.version,
    request_id: m.requestId,
    created_at: m.at,
    available_at: m.at,
    last_error: null,
    processed_at: null,
  }));
}

export function outboxRepository(db: Executor) {
  return {
    async add(messages: readonly NewOutboxMessage[]): Promise<void> {
      if (messages.length === 0) return;
      await db.insertInto('outbox').values(outboxRows(messages)).execute();
    },

    /**
     * Claims up to `limit` rows that are due, oldest first, by pushing their `available_at` past the
     * lease: another relay skips them (SKIP LOCKED while this runs, the lease after), and if this
     * process dies they become due again when the lease ends. No transaction stays open while the
     * rows are dispatched. The claim is `refhub_claim_outbox` (migration `0011-outbox-pending-work`):
     * it walks the pending rows in ID order and stops at `limit`, so rows not yet due, and entries of
     * rows already deleted, are all it passes on the way, whatever the planner knows of the table.
     * Each row comes with its referral's sender, read by key in the same statement.
     */
    async claim(
      limit: number,
      now: Date,
      leaseUntil: Date,
    ): Promise<(OutboxMessage & { attempts: number })[]> {
      const { rows } = await sql<
        Pick<
          Selectable<OutboxTable>,
          'id' | 'topic' | 'referral_id' | 'version' | 'request_id' | 'created_at' | 'attempts'
        > & { sender_id_type: string; sender_id: string }
      >`select o.id, o.topic, o.referral_id, o.version, o.request_id, o.created_at, o.attempts,
          r.sender_id_type, r.sender_id
        from refhub_claim_outbox(${limit}, ${now}, ${leaseUntil}) o
        join referrals r on r.id = o.referral_id`.execute(db);
      return rows
        .map((r) => ({
          id: r.id,
          topic: r.topic as OutboxTopic,
          referralId: r.referral_id,
          version: r.version,
          requestId: r.request_id,
          createdAt: r.created_at,
          attempts: r.attempts,
          sender: { idType: r.sender_id_type, id: r.sender_id },
        }))
        .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    },

    /** Rows dispatched: their work is in the queues now, so they leave the outbox. */
    async removeDispatched(ids: readonly string[]): Promise<void> {
      if (ids.length === 0) return;
      await db
        .deleteFrom('outbox')
        .where('id', 'in', [...ids])
        .execute();
    },

    /** Leaves the row for a later try; `error` is a code, never a message that could quote data. */
    async markFailed(id: string, error: string, retryAt: Date): Promise<void> {
      await db
        .updateTable('outbox')
        .set({ last_error: error, available_at: retryAt })
        .where('id', '=', id)
        .execute();
    },

    /** How much is waiting: for /admin and metrics. */
    async backlog(now: Date): Promise<{ count: number; oldestAgeSeconds: number | null }> {
      const row = await db
        .selectFrom('outbox')
        .select([sql<number>`count(*)::int`.as('count'), sql<Date | null>`min(created_at)`.as('oldest')])
        .where('processed_at', 'is', null)
        .executeTakeFirstOrThrow();
      return {
        count: row.count,
        oldestAgeSeconds:
          row.oldest === null ? null : Math.max(0, (now.getTime() - new Date(row.oldest).getTime()) / 1000),
      };
    },

    /**
     * The backlog with the events the webhook relay has not yet turned into jobs: the event feed is
     * the webhooks' outbox, so its lag is the outbox's too.
     */
    async backlogWithEvents(now: Date): Promise<{ count: number; oldestAgeSeconds: number | null }> {
      const [rows, events] = await Promise.all([
        this.backlog(now),
        webhookRelayRepository(db)
          .read()
          .then((place) => referralEventRepository(db).backlogAfter(place, now)),
      ]);
      const ages = [rows.oldestAgeSeconds, events.oldestAgeSeconds].filter((a) => a !== null);
      return {
        count: rows.count + events.count,
        oldestAgeSeconds: ages.length === 0 ? null : Math.max(...ages),
      };
    },
  };
}
