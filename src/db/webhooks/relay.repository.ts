// How far the webhook relay has turned events into delivery jobs: one place in the event feed's
// order. It moves forward by compare-and-set, so relays in several processes never move it back; two
// that read the same batch both enqueue it, under the same job IDs.
import { sql } from 'kysely';
import type { Executor } from '../executor.ts';
import type { FeedPosition } from '../events.repository.ts';

const NAME = 'events';

export function webhookRelayRepository(db: Executor) {
  return {
    async read(): Promise<FeedPosition> {
      const row = await db
        .selectFrom('webhook_relay')
        .select([sql<string>`xid::text`.as('xid'), sql<string>`position::text`.as('position')])
        .where('name', '=', NAME)
        .executeTakeFirstOrThrow();
      return row;
    },

    /** Moves the place from `from` to `to`; false when another relay moved it first. */
    async advance(from: FeedPosition, to: FeedPosition, now: Date): Promise<boolean> {
      const result = await db
        .updateTable('webhook_relay')
        .set({ xid: sql`${to.xid}::xid8`, position: sql`${to.position}::bigint`, updated_at: now })
        .where('name', '=', NAME)
        .where(sql<boolean>`(xid, position) = (${from.xid}::xid8, ${from.position}::bigint)`)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
  };
}
