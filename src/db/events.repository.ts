// The event feed (`referral_events`, written with the timeline by db/referrals/change.ts):
// pages of it in its one total order, for an institution's feed and for the webhook relay.
//
// The order is (xid, position), and a reader takes only rows whose transaction is older than every
// transaction of this database still running (see `settled`). A transaction that is still running
// has an xid at least that horizon, and one that has not yet written gets a larger xid when it does,
// so every row that may still appear sorts after every row already handed out: a cursor never steps
// over a row that commits later.
import { sql, type Selectable } from 'kysely';
import type { InstitutionRef } from '../domain/access.ts';
import type { FeedPosition } from '../domain/events.ts';
import type { ReasonView } from '../domain/reasons.ts';
import type { Executor } from './executor.ts';
import type { ReferralEventsTable } from './schema.ts';

export type { FeedPosition } from '../domain/events.ts';

export interface ReferralEvent {
  readonly id: string;
  readonly at: FeedPosition;
  readonly referralId: string;
  readonly referralVersion: number;
  readonly type: string;
  readonly system: string;
  readonly description: string;
  readonly occurredAt: Date;
  readonly sender: InstitutionRef;
  readonly provider: InstitutionRef | null;
  /** The coded reason the step was given for, when it had one. */
  readonly reason: ReasonView | undefined;
}

/** The columns a writer gives an event; `xid` and `position` come from the table's defaults. */
export const EVENT_COLUMNS = [
  'id',
  'referral_id',
  'referral_version',
  'type',
  'system',
  'description',
  'occurred_at',
  'sender_id_type',
  'sender_id',
  'provider_id_type',
  'provider_id',
  'reason_code',
  'reason_display',
] as const;

// Read as text (JavaScript numbers cannot hold every xid8). Queries therefore order by the table's
// own columns, `referral_events.xid`: a bare `xid` in ORDER BY names this text, in which transaction
// 10 sorts before transaction 9.
const COLUMNS = [
  sql<string>`xid::text`.as('xid'),
  sql<string>`position::text`.as('position'),
  ...EVENT_COLUMNS,
];

type Row = Omit<Selectable<ReferralEventsTable>, 'xid' | 'position'> & { xid: string; position: string };

function toEvent(r: Row): ReferralEvent {
  return {
    id: r.id,
    at: { xid: r.xid, position: r.position },
    referralId: r.referral_id,
    referralVersion: r.referral_version,
    type: r.type,
    system: r.system,
    description: r.description,
    occurredAt: new Date(r.occurred_at),
    sender: { idType: r.sender_id_type, id: r.sender_id },
    provider:
      r.provider_id_type === null || r.provider_id === null
        ? null
        : { idType: r.provider_id_type, id: r.provider_id },
    reason:
      r.reason_code === null || r.reason_display === null
        ? undefined
        : { code: r.reason_code, display: r.reason_display },
  };
}

const after = (p: FeedPosition) => sql<boolean>`(xid, position) > (${p.xid}::xid8, ${p.position}::bigint)`;
/**
 * Rows of transactions that have all ended: older than the oldest transaction this statement's
 * snapshot still sees running. The snapshot's running list spans the whole cluster, so a long
 * transaction in another database (a report, a dump) would hold the feed back; those are left out
 * when pg_stat_activity shows them in another database (it does for a superuser or a role with
 * pg_read_all_stats). A transaction that has ended by the time pg_stat_activity is read, or that it
 * does not show, still counts: the horizon can only err towards waiting, never towards skipping.
 */
const settled = sql<boolean>`xid < coalesce(
  (select min(x) from pg_snapshot_xip(pg_current_snapshot()) x
    where not exists (select 1 from pg_stat_activity a
                      where a.backend_xid = x::xid and a.datname <> current_database())),
  pg_snapshot_xmax(pg_current_snapshot()))`;

export function referralEventRepository(db: Executor) {
  return {
    /**
     * Up to `limit` events the institution may see, after `from`, in feed order: those it sent, and
     * those sent to it once they left draft. Two index range scans, merged.
     */
    async pageFor(institution: InstitutionRef, from: FeedPosition, limit: number): Promise<ReferralEvent[]> {
      const side = (type: 'sender_id_type' | 'provider_id_type', id: 'sender_id' | 'provider_id') =>
        db
          .selectFrom('referral_events')
          .select(COLUMNS)
          .where(type, '=', institution.idType)
          .where(id, '=', institution.id)
          .where(after(from))
          .where(settled)
          .orderBy('referral_events.xid')
          .orderBy('referral_events.position')
          .limit(limit);
      const { rows } = await sql<Row>`
        select * from ((${side('sender_id_type', 'sender_id')})
                 union (${side('provider_id_type', 'provider_id')})) e
        order by e.xid::xid8, e.position::bigint
        limit ${limit}`.execute(db);
      return rows.map(toEvent);
    },

    /**
     * The position of the last event the institution may see at or before `at`, or undefined when
     * there is none: the one real position an empty page after `at` can hand back.
     */
    async lastFor(institution: InstitutionRef, at: FeedPosition): Promise<FeedPosition | undefined> {
      const side = (type: 'sender_id_type' | 'provider_id_type', id: 'sender_id' | 'provider_id') =>
        db
          .selectFrom('referral_events')
          .select([sql<string>`xid::text`.as('xid'), sql<string>`position::text`.as('position')])
          .where(type, '=', institution.idType)
          .where(id, '=', institution.id)
          .where(sql<boolean>`(xid, position) <= (${at.xid}::xid8, ${at.position}::bigint)`)
          .where(settled)
          .orderBy('referral_events.xid', 'desc')
          .orderBy('referral_events.position', 'desc')
          .limit(1);
      const { rows } = await sql<FeedPosition>`
        select * from ((${side('sender_id_type', 'sender_id')})
                 union all (${side('provider_id_type', 'provider_id')})) e
        order by e.xid::xid8 desc, e.position::bigint desc
        limit 1`.execute(db);
      const row = rows[0];
      return row === undefined ? undefined : { xid: row.xid, position: row.position };
    },

    /** Up to `limit` events of every institution after `from`, in feed order: the relay's next batch. */
    async pageAll(from: FeedPosition, limit: number): Promise<ReferralEvent[]> {
      const rows = await db
        .selectFrom('referral_events')
        .select(COLUMNS)
        .where(after(from))
        .where(settled)
        .orderBy('referral_events.xid')
        .orderBy('referral_events.position')
        .limit(limit)
        .execute();
      return rows.map(toEvent);
    },

    async byId(id: string): Promise<ReferralEvent | undefined> {
      const row = await db
        .selectFrom('referral_events')
        .select(COLUMNS)
        .where('id', '=', id)
        .executeTakeFirst();
      return row === undefined ? undefined : toEvent(row);
    },

    /** Events that occurred at or after `since`, in feed order, `limit` at a time after `from`. */
    async occurredSince(since: Date, from: FeedPosition, limit: number): Promise<ReferralEvent[]> {
      const rows = await db
        .selectFrom('referral_events')
        .select(COLUMNS)
        .where('occurred_at', '>=', since)
        .where(after(from))
        .where(settled)
        .orderBy('referral_events.xid')
        .orderBy('referral_events.position')
        .limit(limit)
        .execute();
      return rows.map(toEvent);
    },

    /** How many events occurred at or after `since`: the work of a replay, before it starts. */
    async countOccurredSince(since: Date): Promise<number> {
      const row = await db
        .selectFrom('referral_events')
        .select(sql<number>`count(*)::int`.as('count'))
        .where('occurred_at', '>=', since)
        .where(settled)
        .executeTakeFirstOrThrow();
      return row.count;
    },

    /** How many events lie after `from`, and how old the oldest of them is (the relay's lag). */
    async backlogAfter(
      from: FeedPosition,
      now: Date,
    ): Promise<{ count: number; oldestAgeSeconds: number | null }> {
      const row = await db
        .selectFrom('referral_events')
        .select([sql<number>`count(*)::int`.as('count'), sql<Date | null>`min(occurred_at)`.as('oldest')])
        .where(after(from))
        .executeTakeFirstOrThrow();
      return {
        count: row.count,
        oldestAgeSeconds:
          row.oldest === null ? null : Math.max(0, (now.getTime() - new Date(row.oldest).getTime()) / 1000),
      };
    },

    /**
     * Deletes expired events among the `limit` oldest (by position); returns how many. Old events
     * come first in position order, so this reads no further than the batch, expired or not.
     */
    async purgeBefore(cutoff: Date, limit: number): Promise<number> {
      const result = await db
        .deleteFrom('referral_events')
        .where(
          'position',
          'in',
          db
            .selectFrom((q) =>
              q
                .selectFrom('referral_events')
                .select(['position', 'occurred_at'])
                .orderBy('position')
                .limit(limit)
                .as('oldest'),
            )
            .select('oldest.position')
            .where('oldest.occurred_at', '<', cutoff),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}
