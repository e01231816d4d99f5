// Searching the ledgers (the capability `ledger-search`, domain/ledger-search.ts): the forwards'
// ledger (`ehr_submissions`) and the webhook deliveries (`webhook_attempts`), a page at a time in
// (attempted_at, id) order, after a keyset cursor, never by OFFSET. Every query is bounded by the
// filter's time range, which the indexes of migration 0029 lead with, so a page is read from the index
// and, where the tables are partitioned by that time, only the partitions in range are read. Also the
// state a replay decides on (each forward's referral, each delivery's subscription and whether the
// receiver already took it), the replay of forwards under the referral's lock, and the record of a
// replay. IDs, versions, codes and hashes only: no patient data is read here.
import { sql, type Expression, type SqlBool } from 'kysely';
import type { InstitutionRef } from '../domain/access.ts';
import type {
  ForwardLedgerRow,
  Ledger,
  LedgerCursor,
  LedgerFilter,
  WebhookLedgerRow,
} from '../domain/ledger-search.ts';
import type { Executor } from './executor.ts';

// The cursor's time to the microsecond, as the row holds it: a millisecond Date would skip or repeat
// rows that share their millisecond.
const cursorAt = (column: string) =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const after = (cursor: LedgerCursor, at: string, id: string): Expression<SqlBool> =>
  sql<SqlBool>`(${sql.ref(at)}, ${sql.ref(id)}) > (${cursor.at}::timestamptz, ${cursor.id}::uuid)`;

const ofInstitution = (idType: string, id: string, institution: InstitutionRef): Expression<SqlBool> =>
  sql<SqlBool>`(${sql.ref(idType)} = ${institution.idType} and ${sql.ref(id)} = ${institution.id})`;

/** The query of a page of forwards (exported for the plan test, which EXPLAINs it). */
export function forwardsPageQuery(
  db: Executor,
  filter: LedgerFilter,
  cursor: LedgerCursor | undefined,
  limit: number,
) {
  const { offering, institution } = filter;
  return db
    .selectFrom('ehr_submissions as s')
    .select([
      's.id',
      's.attempted_at',
      's.referral_id',
      's.message_id',
      's.version',
      's.attempt',
      's.outcome',
      's.http_status',
      's.error_code',
      's.sha256',
      's.ehr_reference',
      's.duration_ms',
      's.replay_of',
      cursorAt('s.attempted_at').as('cursor_at'),
    ])
    .where('s.attempted_at', '>=', filter.from)
    .where('s.attempted_at', '<', filter.to)
    .$if(filter.outcome !== undefined, (q) => q.where('s.outcome', '=', filter.outcome ?? 'failed'))
    .$if(filter.httpStatus !== undefined, (q) => q.where('s.http_status', '=', filter.httpStatus ?? 0))
    .$if(filter.errorCode !== undefined, (q) => q.where('s.error_code', '=', filter.errorCode ?? ''))
    .$if(filter.referralId !== undefined, (q) => q.where('s.referral_id', '=', filter.referralId ?? ''))
    .$if(offering !== undefined || institution !== undefined, (q) =>
      q.where((eb) =>
        eb.exists(
          eb
            .selectFrom('referrals as r')
            .select('r.id')
            .whereRef('r.id', '=', 's.referral_id')
            .$if(offering !== undefined, (r) => r.where('r.offering_id', '=', offering ?? ''))
            .$if(institution !== undefined, (r) =>
              r.where((eb) =>
                eb.or([
                  ofInstitution('r.sender_id_type', 'r.sender_id', institution as InstitutionRef),
                  ofInstitution('r.provider_id_type', 'r.provider_id', institution as InstitutionRef),
                ]),
              ),
            ),
        ),
      ),
    )
    .$if(cursor !== undefined, (q) => q.where(after(cursor as LedgerCursor, 's.attempted_at', 's.id')))
    .orderBy('s.attempted_at')
    .orderBy('s.id')
    .limit(limit);
}

/** The query of a page of webhook deliveries (exported for the plan test, which EXPLAINs it). */
export function webhooksPageQuery(
  db: Executor,
  filter: LedgerFilter,
  cursor: LedgerCursor | undefined,
  limit: number,
) {
  const { offering, institution } = filter;
  return db
    .selectFrom('webhook_attempts as a')
    .leftJoin('referral_events as e', 'e.id', 'a.event_id')
    .select([
      'a.id',
      'a.attempted_at',
      'a.subscription_id',
      'a.event_id',
      'a.event_type',
      'e.referral_id',
      'e.referral_version',
      'a.attempt',
      'a.outcome',
      'a.http_status',
      'a.error_code',
      'a.duration_ms',
      'a.replay_of',
      cursorAt('a.attempted_at').as('cursor_at'),
    ])
    .where('a.attempted_at', '>=', filter.from)
    .where('a.attempted_at', '<', filter.to)
    .$if(filter.outcome !== undefined, (q) => q.where('a.outcome', '=', filter.outcome ?? 'failed'))
    .$if(filter.httpStatus !== undefined, (q) => q.where('a.http_status', '=', filter.httpStatus ?? 0))
    .$if(filter.errorCode !== undefined, (q) => q.where('a.error_code', '=', filter.errorCode ?? ''))
    .$if(filter.referralId !== undefined, (q) => q.where('e.referral_id', '=', filter.referralId ?? ''))
    .$if(institution !== undefined, (q) =>
      q.where((eb) =>
        eb.exists(
          eb
            .selectFrom('webhook_subscriptions as w')
            .select('w.id')
            .whereRef('w.id', '=', 'a.subscription_id')
            .where(ofInstitution('w.institution_id_type', 'w.institution_id', institution as InstitutionRef)),
        ),
      ),
    )
    .$if(offering !== undefined, (q) =>
      q.where((eb) =>
        eb.exists(
          eb
            .selectFrom('referrals as r')
            .select('r.id')
            .whereRef('r.id', '=', 'e.referral_id')
            .where('r.offering_id', '=', offering ?? ''),
        ),
      ),
    )
    .$if(cursor !== undefined, (q) => q.where(after(cursor as LedgerCursor, 'a.attempted_at', 'a.id')))
    .orderBy('a.attempted_at')
    .orderBy('a.id')
    .limit(limit);
}

/** A forward's state as a replay decides on it. */
export interface ForwardState {
  readonly referralId: string;
  readonly state: string;
  readonly forwardedVersion: number | null;
  readonly deleted: boolean;
}

/** A webhook delivery's state as a replay decides on it. */
export interface DeliveryState {
  readonly eventId: string;
  readonly subscriptionId: string;
  /** The subscription exists and is enabled. */
  readonly enabled: boolean;
  /** An attempt of this event to this subscription was delivered (at any time). */
  readonly acknowledged: boolean;
  /** The subscription's institution (`queue/registry.ts` `institutionKey`), for the fair share. */
  readonly institution: InstitutionRef | null;
}

/** A forward a replay queues again: the referral, the attempt it repeats and that attempt's version. */
export interface ForwardReplay {
  readonly referralId: string;
  readonly attemptId: string;
  readonly version: number;
}

/** The record of one replay an operator ran (migration 0029's `ledger_replays`). */
export interface LedgerReplayRecord {
  readonly id: string;
  readonly requestId: string;
  readonly ledger: Ledger;
  readonly requestedAt: Date;
  readonly apiKeyId: string | null;
  readonly requester: string | null;
  readonly filter: Readonly<Record<string, string>>;
  readonly matched: number;
  readonly replayed: number;
  readonly skipped: Readonly<Record<string, number>>;
}

export function ledgerSearchRepository(db: Executor) {
  return {
    /** Up to `limit` forwards matching `filter`, after `cursor`, oldest first. */
    async forwards(
      filter: LedgerFilter,
      cursor: LedgerCursor | undefined,
      limit: number,
    ): Promise<ForwardLedgerRow[]> {
      const rows = await forwardsPageQuery(db, filter, cursor, limit).execute();
      return rows.map((r) => ({
        id: r.id,
        attemptedAt: r.attempted_at,
        referralId: r.referral_id,
        messageId: r.message_id,
        version: r.version,
        attempt: r.attempt,
        outcome: r.outcome,
        httpStatus: r.http_status,
        errorCode: r.error_code,
        sha256: r.sha256,
        ehrReference: r.ehr_reference,
        durationMs: r.duration_ms,
        replayOf: r.replay_of,
        cursor: { at: r.cursor_at, id: r.id },
      }));
    },

    /** Up to `limit` webhook deliveries matching `filter`, after `cursor`, oldest first. */
    async webhooks(
      filter: LedgerFilter,
      cursor: LedgerCursor | undefined,
      limit: number,
    ): Promise<(WebhookLedgerRow & { readonly referralVersion: number | null })[]> {
      const rows = await webhooksPageQuery(db, filter, cursor, limit).execute();
      return rows.map((r) => ({
        id: r.id,
        attemptedAt: r.attempted_at,
        subscriptionId: r.subscription_id,
        eventId: r.event_id,
        eventType: r.event_type,
        referralId: r.referral_id,
        referralVersion: r.referral_version,
        attempt: r.attempt,
        outcome: r.outcome,
        httpStatus: r.http_status,
        errorCode: r.error_code,
        durationMs: r.duration_ms,
        replayOf: r.replay_of,
        cursor: { at: r.cursor_at, id: r.id },
      }));
    },

    /** The forwarding state of each referral named. */
    async forwardStates(referralIds: readonly string[]): Promise<ForwardState[]> {
      if (referralIds.length === 0) return [];
      const rows = await db
        .selectFrom('referrals')
        .select(['id', 'ehr_state', 'ehr_forwarded_version', 'deleted_at'])
        .where('id', 'in', [...new Set(referralIds)])
        .execute();
      return rows.map((r) => ({
        referralId: r.id,
        state: r.ehr_state,
        forwardedVersion: r.ehr_forwarded_version,
        deleted: r.deleted_at !== null,
      }));
    },

    /**
     * The state of each (event, subscription) named: whether the subscription is there and enabled,
     * and whether any attempt of that event to it was delivered. The acknowledgement is looked up at
     * any time, not only in the search's range: a receiver that took the event once has it.
     */
    async deliveryStates(
      pairs: readonly { readonly eventId: string; readonly subscriptionId: string }[],
    ): Promise<DeliveryState[]> {
      if (pairs.length === 0) return [];
      const eventIds = [...new Set(pairs.map((p) => p.eventId))];
      const subscriptionIds = [...new Set(pairs.map((p) => p.subscriptionId))];
      const [subscriptions, delivered] = await Promise.all([
        db
          .selectFrom('webhook_subscriptions')
          .select(['id', 'disabled_at', 'institution_id_type', 'institution_id'])
          .where('id', 'in', subscriptionIds)
          .execute(),
        db
          .selectFrom('webhook_attempts')
          .select(['event_id', 'subscription_id'])
          .distinct()
          .where('event_id', 'in', eventIds)
          .where('subscription_id', 'in', subscriptionIds)
          .where('outcome', '=', 'delivered')
          .execute(),
      ]);
      const byId = new Map(subscriptions.map((s) => [s.id, s]));
      const acknowledged = new Set(delivered.map((d) => `${d.event_id}.${d.subscription_id}`));
      return pairs.map((p) => {
        const s = byId.get(p.subscriptionId);
        return {
          eventId: p.eventId,
          subscriptionId: p.subscriptionId,
          enabled: s !== undefined && s.disabled_at === null,
          acknowledged: acknowledged.has(`${p.eventId}.${p.subscriptionId}`),
          institution: s === undefined ? null : { idType: s.institution_id_type, id: s.institution_id },
        };
      });
    },

    /**
     * Queues each forward again at its referral's current version, naming the attempt it repeats
     * (`ehr_replay_of`, which the next attempts carry as `replay_of` until one settles the forward):
     * only while the forward is failed, the referral not deleted, and the EHR has not acknowledged the
     * repeated attempt's version or a later one. Read and written in one statement under the rows'
     * locks, so a forward that recovered meanwhile is left alone. Returns the referrals queued again.
     */
    async requeueReplayed(replays: readonly ForwardReplay[]): Promise<{ id: string; version: number }[]> {
      if (replays.length === 0) return [];
      const { rows } = await sql<{ id: string; version: number }>`
        update referrals as r set
          ehr_state = 'queued',
          ehr_due_version = r.version,
          ehr_attempts = 0,
          ehr_replay_of = v.attempt_id
        from (
          select * from unnest(
            ${replays.map((p) => p.referralId)}::uuid[],
            ${replays.map((p) => p.attemptId)}::uuid[],
            ${replays.map((p) => p.version)}::int[]
          ) as v(referral_id, attempt_id, version)
        ) as v
        where r.id = v.referral_id
          and r.ehr_state = 'failed'
          and r.deleted_at is null
          and coalesce(r.ehr_forwarded_version, 0) < v.version
        returning r.id, r.version
      `.execute(db);
      return rows;
    },

    /** Records a replay an operator ran. */
    async recordReplay(r: LedgerReplayRecord): Promise<void> {
      await db
        .insertInto('ledger_replays')
        .values({
          id: r.id,
          request_id: r.requestId,
          ledger: r.ledger,
          requested_at: r.requestedAt,
          api_key_id: r.apiKeyId,
          requester_identifier: r.requester,
          filter: JSON.stringify(r.filter),
          matched: r.matched,
          replayed: r.replayed,
          skipped: JSON.stringify(r.skipped),
        })
        .execute();
    },
  };
}

export type LedgerSearchRepository = ReturnType<typeof ledgerSearchRepository>;
