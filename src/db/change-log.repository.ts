// What every change leaves behind besides itself: its timeline events (each also in the event feed,
// `referral_events`), the background work it makes due (outbox rows) and its audit row. They are
// written in one statement (data-modifying common table expressions), so a change costs one round
// trip for all of them rather than one for each; inside the change's transaction they commit or roll
// back with it.
//
// A change that must write its timeline rows its own way (an EHR forward attempt writes its event only
// from the statuses the lifecycle allows, in the statement that locks the referral) composes the same
// parts into its statement through `changeLogCtes`: the feed, the outbox and the audit row are written
// here and nowhere else.
import { sql, type RawBuilder } from 'kysely';
import { auditInsert, type AuditEvent } from './audit.repository.ts';
import type { Executor } from './executor.ts';
import { outboxRows, type NewOutboxMessage } from './outbox.repository.ts';
import { EVENT_COLUMNS } from './events.repository.ts';
import { providerSees } from './provider-visibility.ts';
import { timelineRows, type NewTimelineEvent } from './referral-children.repository.ts';

export interface ChangeRecord {
  readonly timeline: readonly NewTimelineEvent[];
  readonly outbox: readonly NewOutboxMessage[];
  readonly audit: AuditEvent;
}

/** What the CTE `timeline` of a change's statement returns: what the feed copies from each row. */
export const TIMELINE_RETURNING = [
  'seq',
  'id',
  'referral_id',
  'type',
  'system',
  'description',
  'produced_at',
] as const;

/** What a change leaves behind besides its timeline rows, as `changeLogCtes` writes it. */
export interface LeftBehind {
  /**
   * Where the feed reads each referral's version and parties: `referrals`, as the change's transaction
   * sees it after the change, or a CTE of the same statement that holds the referral's locked row.
   * Undefined when the statement writes no timeline rows (it has no CTE `timeline`).
   */
  readonly feedFrom: string | undefined;
  readonly outbox: readonly NewOutboxMessage[];
  readonly audit: AuditEvent;
  /** A CTE of the statement that must have a row for the audit row to be written (see `auditInsert`). */
  readonly auditOnlyWith?: string;
}

/**
 * The feed rows of the timeline rows the statement writes in its CTE `timeline`. Each takes the
 * referral's version and parties as `referral` holds them: the provider only while the referral is
 * not a draft, so a provider never reads an event of a referral it may not see.
 */
function feedInsert(referral: string): RawBuilder<unknown> {
  const columns = sql.join(EVENT_COLUMNS.map((column) => sql.ref(column)));
  return sql`insert into referral_events (${columns})
    select t.id, t.referral_id, r.version, t.type, t.system, t.description, t.produced_at,
      r.sender_id_type, r.sender_id,
      case when ${providerSees('r')} then r.provider_id_type end,
      case when ${providerSees('r')} then r.provider_id end
    from timeline t join ${sql.table(referral)} r on r.id = t.referral_id
    order by t.seq`;
}

/**
 * What a change leaves behind besides its timeline rows, as common table expressions of one statement
 * (`with …, <these> select …`): the feed rows of the statement's CTE `timeline` (which returns
 * TIMELINE_RETURNING), the outbox rows and the audit row.
 */
export function changeLogCtes(db: Executor, change: LeftBehind): RawBuilder<unknown>[] {
  const ctes: RawBuilder<unknown>[] = [];
  if (change.feedFrom !== undefined) ctes.push(sql`feed as (${feedInsert(change.feedFrom)})`);
  // An INSERT needs at least one row, so a part with none is left out of the statement.
  if (change.outbox.length > 0) {
    ctes.push(sql`outbox_rows as (${db.insertInto('outbox').values(outboxRows(change.outbox))})`);
  }
  ctes.push(sql`audit as (${auditInsert(change.audit, change.auditOnlyWith)})`);
  return ctes;
}

export function changeLogRepository(db: Executor) {
  return {
    async record(change: ChangeRecord): Promise<void> {
      const timeline =
        change.timeline.length === 0
          ? []
          : [
              sql`timeline as (${db
                .insertInto('timeline_events')
                .values(timelineRows(change.timeline))
                .returning([...TIMELINE_RETURNING])})`,
            ];
      // The feed reads `referrals` as this transaction sees it: after the change, which an earlier
      // statement wrote.
      const leftBehind = changeLogCtes(db, {
        feedFrom: timeline.length === 0 ? undefined : 'referrals',
        outbox: change.outbox,
        audit: change.audit,
      });
      await sql`with ${sql.join([...timeline, ...leftBehind])} select 1`.execute(db);
    },
  };
}
