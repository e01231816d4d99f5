// What every change leaves behind besides itself: its timeline events, the background work it makes
// due (outbox rows) and its audit row. They are written in one statement (data-modifying common
// table expressions), so a change costs one round trip for all three rather than one for each; inside
// the change's transaction they commit or roll back with it.
import type { AuditEvent } from './audit.repository.ts';
import { auditRow } from './audit.repository.ts';
import type { Executor } from './executor.ts';
import { outboxRows, type NewOutboxMessage } from './outbox.repository.ts';
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
          : db.with('timeline', (q) => q.insertInto('timeline_events').values(timelineRows(change.timeline)));
      const withOutbox =
        change.outbox.length === 0
          ? withTimeline
          : withTimeline.with('outbox_rows', (q) => q.insertInto('outbox').values(outboxRows(change.outbox)));
      await withOutbox.insertInto('audit_events').values(auditRow(change.audit)).execute();
    },
  };
}
