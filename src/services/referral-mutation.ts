// Runs one operation on one referral, in one transaction: the tenancy check, If-Match, the role
// check, the lifecycle decision, the compare-and-set on `version`, the timeline events, the outbox
// rows and the audit row. Either all of them are written or none.
//
// Concurrency: the decision is made on the version read at the start; the UPDATE succeeds only if
// the row is still at that version. When another transaction won the race, the whole transaction
// rolls back and the operation is decided again on the new state (so a second cancel correctly
// becomes 409 invalid_transition). A caller that sent If-Match gets 412 instead of a retry.
import { v7 as uuidv7 } from 'uuid';
import type { Kysely, Transaction } from 'kysely';
import { actingParty } from '../domain/access.ts';
import type { Clock } from '../domain/clock.ts';
import { outboxTopics, type Decision, type Operation } from '../domain/lifecycle.ts';
import type { Party } from '../domain/statuses.ts';
import type { TimelineEntry } from '../domain/timeline.ts';
import { ConcurrentModificationError, VersionMismatchError } from '../errors.ts';
import { auditEventOf, auditRepository } from '../db/audit.repository.ts';
import { changeLogRepository } from '../db/change-log.repository.ts';
import type { NewOutboxMessage } from '../db/outbox.repository.ts';
import type { NewTimelineEvent } from '../db/referral-children.repository.ts';
import { referralRepository, type ReferralPatch, type ReferralRecord } from '../db/referral.repository.ts';
import type { Database } from '../db/schema.ts';
import type { Caller } from './caller.ts';
import { writeTransaction } from './write-transaction.ts';

export interface MutationDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
}

export interface Plan {
  readonly decision: Decision;
  /** Content changes; status, version and updatedAt are set by the runner. */
  readonly patch?: ReferralPatch;
  readonly events: readonly TimelineEntry[];
  /** Writes to other tables (appointments, notes), run after the compare-and-set succeeded. */
  readonly writeChildren?: (trx: Transaction<Database>, now: Date) => Promise<void>;
  /** Nothing would change: skip the write and answer with the current state. */
  readonly unchanged?: boolean;
}

export interface PlanContext {
  readonly trx: Transaction<Database>;
  readonly record: ReferralRecord;
  readonly party: Party;
  readonly now: Date;
}

const MAX_ATTEMPTS = 5;

class LostRace extends Error {}

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
    producedAt: now,
  }));
}

export function createMutationRunner(deps: MutationDeps) {
  return async function mutate<T>(
    caller: Caller,
    referralId: string,
    operation: Operation,
    ifMatch: number | undefined,
    plan: (ctx: PlanContext) => Promise<Plan>,
    respond: (trx: Transaction<Database>, before: ReferralRecord) => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await writeTransaction(deps.db, caller, async (trx) => {
          const referrals = referralRepository(trx);
          const record = await referrals.getVisible(referralId, caller.institution);
          if (ifMatch !== undefined && ifMatch !== record.version) {
            throw new VersionMismatchError(ifMatch, record.version);
          }
          const party = actingParty(operation, caller.role, record, caller.institution);
          const now = deps.clock.now();
          const planned = await plan({ trx, record, party, now });
          let timeline: NewTimelineEvent[] = [];
          let outbox: NewOutboxMessage[] = [];
          if (planned.unchanged !== true) {
            const { decision } = planned;
            const topics = outboxTopics(decision, record.status);
            const version = record.version + 1;
            const won =
              decision.next === undefined
                ? await referrals.softDelete(record.id, record.version, now)
                : await referrals.compareAndSet(
                    record.id,
                    record.version,
                    {
                      ...planned.patch,
                      status: decision.next,
                      // The forward that is now due: the worker sends this version or a later one.
                      ...(topics.includes('ehr-forward') ? { ehrDue: version } : {}),
                    },
                    now,
                  );
            if (!won) throw new LostRace();
            await planned.writeChildren?.(trx, now);
            timeline = timelineEventsOf(record.id, caller.system, planned.events, now);
            outbox = topics.map((topic) => ({
              topic,
              referralId: record.id,
              version,
              requestId: caller.requestId,
              at: now,
            }));
          }
          await changeLogRepository(trx).record({
            timeline,
            outbox,
            audit: auditEventOf(caller, `referral.${operation}`, [record.id], now),
          });
          return respond(trx, record);
        });
      } catch (error) {
        if (!(error instanceof LostRace)) throw error;
        if (ifMatch !== undefined) {
          const current = await referralRepository(deps.db).getVisible(referralId, caller.institution);
          throw new VersionMismatchError(ifMatch, current.version);
        }
        if (attempt >= MAX_ATTEMPTS) throw new ConcurrentModificationError(referralId);
      }
    }
  };
}

export type MutationRunner = ReturnType<typeof createMutationRunner>;
