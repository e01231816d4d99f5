// The transactional outbox. A request that needs background work writes a row here in its own
// transaction; the relay later turns rows into queue jobs. So no work is lost when Redis is down,
// and no job exists for a change that rolled back. Rows carry IDs only, never patient data.
import type { OutboxTopic } from '../domain/lifecycle.ts';
import type { Executor } from './executor.ts';

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
}

export function outboxRepository(db: Executor) {
  return {
    async add(messages: readonly NewOutboxMessage[]): Promise<void> {
      if (messages.length === 0) return;
      await db
        .insertInto('outbox')
        .values(
          messages.map((m) => ({
            topic: m.topic,
            referral_id: m.referralId,
            version: m.version,
            request_id: m.requestId,
            created_at: m.at,
            available_at: m.at,
            last_error: null,
            processed_at: null,
          })),
        )
        .execute();
    },

    async pendingFor(referralId: string): Promise<OutboxMessage[]> {
      const rows = await db
        .selectFrom('outbox')
        .select(['id', 'topic', 'referral_id', 'version', 'request_id', 'created_at'])
        .where('referral_id', '=', referralId)
        .where('processed_at', 'is', null)
        .orderBy('id')
        .execute();
      return rows.map((r) => ({
        id: r.id,
        topic: r.topic as OutboxTopic,
        referralId: r.referral_id,
        version: r.version,
        requestId: r.request_id,
        createdAt: r.created_at,
      }));
    },
  };
}
