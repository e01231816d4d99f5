// Runs one operation on one referral: the tenancy check, If-Match, the role check, the lifecycle
// decision and the change it plans; the referral store writes the change (its compare-and-set on
// `version`, the referral's other rows, the timeline events, the outbox rows, the audit row, the links
// the answer hands out and the keyed write's stored response) in one statement, all or nothing.
//
// Concurrency: the decision is made on the version read; the statement's UPDATE succeeds only if the
// row is still at that version, and otherwise the whole statement rolls back and the operation is
// read and decided again on the new state (so a second cancel correctly becomes 409
// invalid_transition). A caller that sent If-Match gets 412 instead of a retry. The referral's other
// rows change only through such a compare-and-set, so those the read saw are those the statement
// changes.
//
// The answer is the referral the read saw with the change applied, by the same columns the statement
// sets (the store's `change(…).after`): it is what a read after the statement returns, and it is
// stored with the key in the statement itself, so it never needs a second read.
import { v7 as uuidv7 } from 'uuid';
import { actingParty } from '../../domain/access.ts';
import type { Clock } from '../../domain/clock.ts';
import {
  OUTBOX_TOPICS,
  outboxTopics,
  type Decision,
  type Operation,
  type OutboxTopic,
} from '../../domain/lifecycle.ts';
import type { TimelineEventView } from '../../domain/referral-view.ts';
import type { Party } from '../../domain/statuses.ts';
import type { TimelineEntry } from '../../domain/timeline.ts';
import { ConcurrentModificationError, ReferralNotFoundError, VersionMismatchError } from '../../errors.ts';
import { auditEventOf } from '../../domain/audit.ts';
import type { OfferingRecord } from '../../db/catalog.repository.ts';
import type { NewOutboxMessage } from '../../db/outbox.repository.ts';
import type { CarriedAttachment } from '../../db/attachments.repository.ts';
import type { Answer, PartChange, SuccessorChange } from '../../db/referrals/change.ts';
import type { NewTimelineEvent, ReferralParts } from '../../db/referrals/parts.ts';
import type { ReferralStore } from '../../db/referrals/referrals.store.ts';
import type {
  NewReferral,
  ReferralPatch,
  ReferralRecord,
  ReferralSnapshot,
  ReferralWithParts,
} from '../../db/referrals/rows.ts';
import type { Caller } from '../caller.ts';

export interface MutationDeps {
  readonly referrals: Pick<ReferralStore, 'findVisibleWithParts' | 'change'>;
  readonly clock: Clock;
}

/** Changes to the referral's other rows (appointments, notes, the outcome, files), and the parts they leave. */
export interface ChildChanges {
  readonly changes: readonly PartChange[];
  readonly parts: (before: ReferralParts) => ReferralParts;
}

/**
 * A referral a redirect hands this one on to, written in the same statement (db/referrals/change.ts):
 * a new referral, submitted, at `offering`, that opens with this one's steps and then its own.
 */
export interface SuccessorPlan {
  readonly referral: NewReferral & { readonly redirectedFrom: string };
  readonly offering: OfferingRecord;
  readonly senderName: string;
  /** This referral's steps as read, copied to the successor's timeline, marked as taken on it. */
  readonly history: readonly TimelineEventView[];
  /** Its own steps, by the caller's system, after them. */
  readonly events: readonly TimelineEntry[];
  readonly attachments: readonly CarriedAttachment[];
  /** Its outbox topics, for its first version. */
  readonly outbox: readonly OutboxTopic[];
}

export interface Plan {
  readonly decision: Decision;
  /** Content changes; status, version and updatedAt are set by the runner. */
  readonly patch?: ReferralPatch;
  /** The offering `patch` names, as the catalog has it (the answer shows it). */
  readonly offering?: OfferingRecord | null;
  readonly events: readonly TimelineEntry[];
  /** Changes to other rows, written only with the compare-and-set. */
  readonly children?: ChildChanges;
  /** Nothing would change: skip the write and answer with the current state. */
  readonly unchanged?: boolean;
  /** A redirect's successor (the referral's patch names it in `redirectedTo`). */
  readonly successor?: SuccessorPlan;
}

export interface PlanContext {
  readonly record: ReferralRecord;
  readonly parts: ReferralParts;
  readonly party: Party;
  readonly now: Date;
}

/** The referral the answer is made from: as read, and as the change leaves it. */
export interface Change {
  readonly before: ReferralSnapshot;
  readonly after: ReferralWithParts;
}

export type { Answer };

const MAX_ATTEMPTS = 5;

/** Timeline rows for `events`, produced now by `system` (the caller's system or refhub). */
export function timelineEventsOf(
  referralId: string,
  system: string,
  events: readonly TimelineEntry[],
  now: Date,
): NewTimelineEvent[] {
  return events.map((e) => ({
    id: uuidv7(),
    referralId,
    type: e.type,
    system,
    description: e.description,
    eventDescription: e.eventDescription,
    producedAt: now,
    reason: e.reason,
  }));
}

/** The timeline rows as a read presents them. */
export function timelineViewsOf(events: readonly NewTimelineEvent[]): TimelineEventView[] {
  return events.map((e) => ({
    id: e.id,
    type: e.type,
    system: e.system,
    description: e.description,
    producedAt: e.producedAt.toISOString(),
    ...(e.reason === undefined ? {} : { reason: e.reason }),
    ...(e.fromReferralId === undefined ? {} : { fromReferralId: e.fromReferralId }),
  }));
}

/** The successor `plan` describes, as the change of its predecessor `from` writes it. */
function successorChange(
  plan: SuccessorPlan,
  from: ReferralRecord,
  caller: Caller,
  now: Date,
): SuccessorChange {
  const id = plan.referral.id;
  return {
    referral: plan.referral,
    names: { sender: plan.senderName, offering: plan.offering },
    attachments: plan.attachments,
    // Copied as they were: their system, time, sentence and reason; their own IDs; each marked with
    // the referral it was taken on (a step copied into `from` keeps the one it came from).
    history: plan.history.map((step) => ({
      id: uuidv7(),
      referralId: id,
      type: step.type,
      system: step.system,
      description: step.description,
      eventDescription: step.description,
      producedAt: new Date(step.producedAt),
      reason: step.reason,
      fromReferralId: step.fromReferralId ?? from.id,
    })),
    timeline: timelineEventsOf(id, caller.system, plan.events, now),
    outbox: plan.outbox.map((topic) => ({
      topic,
      referralId: id,
      version: 1,
      requestId: caller.requestId,
      at: now,
    })),
  };
}

export interface MutationOptions {
  /** The audit row's action; `referral.<operation>` unless said. */
  readonly auditAction?: string;
}

export function createMutationRunner(deps: MutationDeps) {
  async function read(caller: Caller, referralId: string): Promise<ReferralSnapshot> {
    const found = await deps.referrals.findVisibleWithParts(referralId, caller.institution);
    if (!found) throw new ReferralNotFoundError(referralId);
    return found;
  }

  return async function mutate<T>(
    caller: Caller,
    referralId: string,
    operation: Operation,
    ifMatch: number | undefined,
    plan: (ctx: PlanContext) => Promise<Plan>,
    respond: (change: Change) => Answer<T>,
    options: MutationOptions = {},
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const before = await read(caller, referralId);
      const { record } = before;
      if (ifMatch !== undefined && ifMatch !== record.version) {
        throw new VersionMismatchError(ifMatch, record.version);
      }
      const party = actingParty(operation, caller.role, record, caller.institution);
      const now = deps.clock.now();
      const planned = await plan({ record, parts: before.parts, party, now });
      const audit = auditEventOf(
        caller,
        options.auditAction ?? `referral.${operation}`,
        planned.successor === undefined ? [record.id] : [record.id, planned.successor.referral.id],
        now,
      );
      if (planned.unchanged === true) {
        const answer = respond({ before, after: before });
        await deps.referrals.change({ timeline: [], outbox: [], audit }).write(answer, caller.idempotency);
        return answer.result;
      }
      const { decision } = planned;
      const topics = outboxTopics(decision, record.status);
      const version = record.version + 1;
      const timeline = timelineEventsOf(record.id, caller.system, planned.events, now);
      const outbox: NewOutboxMessage[] = topics.map((topic) => ({
        topic,
        referralId: record.id,
        version,
        requestId: caller.requestId,
        at: now,
      }));
      const change = deps.referrals.change({
        referral:
          decision.next === undefined
            ? { kind: 'delete', before, now }
            : {
                kind: 'update',
                before,
                patch: {
                  ...planned.patch,
                  status: decision.next,
                  // The forward that is now due: the worker sends this version or a later one.
                  ...(topics.includes(OUTBOX_TOPICS.forward) ? { ehrDue: version } : {}),
                },
                ...(planned.offering === undefined ? {} : { offering: planned.offering }),
                now,
              },
        parts: planned.children?.changes ?? [],
        timeline,
        outbox,
        audit,
        ...(planned.successor === undefined
          ? {}
          : { successor: successorChange(planned.successor, record, caller, now) }),
      });
      const parts = planned.children?.parts(before.parts) ?? before.parts;
      const after: ReferralWithParts = {
        record: change.after ?? before.record,
        parts: { ...parts, timelineEvents: [...parts.timelineEvents, ...timelineViewsOf(timeline)] },
      };
      const answer = respond({ before, after });
      if (await change.write(answer, caller.idempotency)) return answer.result;
      // Another write changed the referral since it was read. If it was this request's own retry that
      // stored the key first, this one answers with its response.
      await caller.idempotency?.replayIfTaken();
      if (ifMatch !== undefined) {
        const current = await read(caller, referralId);
        throw new VersionMismatchError(ifMatch, current.record.version);
      }
      if (attempt >= MAX_ATTEMPTS) throw new ConcurrentModificationError(referralId);
    }
  };
}

export type MutationRunner = ReturnType<typeof createMutationRunner>;
