// What every change leaves behind besides itself: its timeline events (each also in the event feed,
// `referral_events`), the background work it makes due (outbox rows) and its audit row. They are
// written in one statement (data-modifying common table expressions), so a change costs one round
// trip for all of them rather than one for each; inside the change's transaction they commit or roll
// back with it.
import { sql } from 'kysely';
import type { AuditEvent } from './audit.repository.ts';
import { auditRow } from './audit.repository.ts';
import type { Executor } from './executor.ts';
import { outboxRows, type NewOutboxMessage } from './outbox.repository.ts';
import { EVENT_COLUMNS } from './events.repository.ts';
import { timelineRows, type NewTimelineEvent } from './referral-children.repository.ts';

export interface ChangeRecord {
  readonly timeline: readonly NewTimelineEvent[];
  readonly outbox: readonly NewOutboxMessage[];
  readonly audit: AuditEvent;
}

export function changeLogRepository(db: Executor) {
  return {
    async record(change: ChangeRecord): Promise<void> {
      // An INSERT needs at least one row, so a part with none is left out of the statement.
      const withTimeline =
        change.timeline.length === 0
          ? db
          : db
              .with('timeline', (q) =>
                q
                  .insertInto('timeline_events')
                  .values(timelineRows(change.timeline))
                  .returning(['seq', 'id', 'referral_id', 'type', 'system', 'description', 'produced_at']),
              )
              // The feed row takes the referral's version and parties as they stand in this
              // transaction, after the change (written by an earlier statement): the provider sees
              // the event only while the referral is not a draft (domain/access.ts).
              .with('feed', (q) =>
                q
                  .insertInto('referral_events')
                  .columns([...EVENT_COLUMNS])
                  .expression((eb) =>
                    eb
                      .selectFrom('timeline as t')
                      .innerJoin('referrals as r', 'r.id', 't.referral_id')
                      .select([
                        't.id',
                        't.referral_id',
                        'r.version',
                        't.type',
                        't.system',
                        't.description',
                        't.produced_at',
                        'r.sender_id_type',
                        'r.sender_id',
                        sql<string | null>`case when r.status <> 'draft' then r.provider_id_type end`.as(
                          'pt',
                        ),
                        sql<string | null>`case when r.status <> 'draft' then r.provider_id end`.as('pi'),
                      ])
                      .orderBy('t.seq'),
                  ),
              );
      const withOutbox =
        change.outbox.length === 0
          ? withTimeline
          : withTimeline.with('outbox_rows', (q) => q.insertInto('outbox').values(outboxRows(change.outbox)));
      await withOutbox.insertInto('audit_events').values(auditRow(change.audit)).execute();
    },
  };
}
