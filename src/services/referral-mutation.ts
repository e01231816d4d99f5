// Runs one operation on one referral: the tenancy check, If-Match, the role check, the lifecycle
// decision, the compare-and-set on `version`, the referral's other rows, the timeline events, the
// outbox rows, the audit row, the links the answer hands out and the keyed write's stored response.
// Either all of them are written or none: after one read, they are one statement (keyed-write.ts).
//
// Concurrency: the decision is made on the version read; the statement's UPDATE succeeds only if the
// row is still at that version, and otherwise the whole statement rolls back and the operation is
// read and decided again on the new state (so a second cancel correctly becomes 409
// invalid_transition). A caller that sent If-Match gets 412 instead of a retry. The referral's other
// rows change only through such a compare-and-set, so those the read saw are those the statement
// changes.
//
// The answer is the referral the read saw with the change applied, by the same columns the statement
// sets (db/referral.repository.ts `referralWrites`): it is what a read after the statement returns,
// and it is stored with the key in the statement itself, so it never needs a second read.
import type { DataKeys } from '../db/data-keys.repository.ts';
import type { FieldCipher } from '../domain/data-keys.ts';
import { v7 as uuidv7 } from 'uuid';
import type { Compilable, Kysely, Transaction } from 'kysely';
import { actingParty } from '../domain/access.ts';
import type { Clock } from '../domain/clock.ts';
import { outboxTopics, type Decision, type Operation } from '../domain/lifecycle.ts';
import type { TimelineEventView } from '../domain/referral-view.ts';
import type { Party } from '../domain/statuses.ts';
import type { TimelineEntry } from '../domain/timeline.ts';
import { ConcurrentModificationError, ReferralNotFoundError, VersionMismatchError } from '../errors.ts';
import { auditEventOf, auditRepository } from '../db/audit/audit.repository.ts';
import { REFERRAL_WRITE_RETURNING } from '../db/referrals/change.ts';
import type { OfferingRecord } from '../db/catalog.repository.ts';
import type { Executor } from '../db/executor.ts';
import type { NewOutboxMessage } from '../db/outbox.repository.ts';
import type { NewTimelineEvent, ReferralParts } from '../db/referrals/parts.ts';
import {
  type ReferralPatch,
  type ReferralRecord,
  type ReferralSnapshot,
  type ReferralWithParts,
} from '../db/referrals/rows.ts';
import { createReferralStore } from '../db/referrals/referrals.store.ts';
import { referralWrites } from '../db/referrals/writes.ts';
import type { Database } from '../db/schema.ts';
import type { Caller } from './caller.ts';
import { runWrite, type Answer } from './keyed-write.ts';

export interface MutationDeps {
  readonly db: Kysely<Database>;
  /** The keys patient data is sealed and opened with. */
  readonly dataKeys: DataKeys;
  readonly clock: Clock;
}

/** Writes to the referral's other tables (appointments, notes), and the parts they leave. */
export interface ChildWrites {
  readonly writes: (db: Executor, cipher: FieldCipher) => Compilable[];
  readonly parts: (before: ReferralParts) => ReferralParts;
}

export interface Plan {
  readonly decision: Decision;
  /** Content changes; status, version and updatedAt are set by the runner. */
  readonly patch?: ReferralPatch;
  /** The offering `patch` names, as the catalog has it (the answer shows it). */
  readonly offering?: OfferingRecord | null;
  readonly events: readonly TimelineEntry[];
  /** Writes to other tables, made only with the compare-and-set. */
  readonly children?: ChildWrites;
  /** Nothing would change: skip the write and answer with the current state. */
  readonly unchanged?: boolean;
}

export interface PlanContext {
  /** For what a plan must look up besides the referral (the catalog): not a transaction. */
  readonly db: Executor;
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

const MAX_ATTEMPTS = 5;

/** Audits a successful action in the current transaction. */
export async function audit(
  trx: Transaction<Database>,
  caller: Caller,
  action: string,
  referralIds: readonly string[],
  now: Date,
): Promise<void> {
  await auditRepository(trx).record(auditEventOf(caller, action, referralIds, now));
}

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
  }));
}

export interface MutationOptions {
  /** The audit row's action; `referral.<operation>` unless said. */
  readonly auditAction?: string;
}

export function createMutationRunner(deps: MutationDeps) {
  async function read(caller: Caller, referralId: string): Promise<ReferralSnapshot> {
    const found = await createReferralStore(deps.db, deps.dataKeys).findVisibleWithParts(
      referralId,
      caller.institution,
    );
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
      const cipher = await deps.dataKeys.cipher(deps.db);
      const planned = await plan({ db: deps.db, record, parts: before.parts, party, now });
      const audit = auditEventOf(caller, options.auditAction ?? `referral.${operation}`, [record.id], now);
      if (planned.unchanged === true) {
        const answer = respond({ before, after: before });
        await runWrite(deps.db, caller, { timeline: [], outbox: [], audit }, answer, cipher);
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
      const changed =
        decision.next === undefined
          ? {
              query: referralWrites.softDelete(deps.db, before, now, REFERRAL_WRITE_RETURNING),
              after: before.record,
            }
          : referralWrites.compareAndSet(
              deps.db,
              cipher,
              before,
              {
                ...planned.patch,
                status: decision.next,
                // The forward that is now due: the worker sends this version or a later one.
                ...(topics.includes('ehr-forward') ? { ehrDue: version } : {}),
              },
              now,
              REFERRAL_WRITE_RETURNING,
              planned.offering,
            );
      const parts = planned.children?.parts(before.parts) ?? before.parts;
      const after: ReferralWithParts = {
        record: changed.after,
        parts: { ...parts, timelineEvents: [...parts.timelineEvents, ...timelineViewsOf(timeline)] },
      };
      const answer = respond({ before, after });
      const won = await runWrite(
        deps.db,
        caller,
        {
          referral: changed.query,
          children: planned.children?.writes(deps.db, cipher) ?? [],
          timeline,
          outbox,
          audit,
        },
        answer,
        cipher,
      );
      if (won) return answer.result;
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
