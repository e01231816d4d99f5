// The EHR forwarding ledger (one row per attempt) and the forwarding state kept on each referral.
// Rows hold IDs, hashes and outcomes only: never the form, never patient data.
import { sql } from 'kysely';
import type { InstitutionRef } from '../../domain/access.ts';
import type { AuditEvent } from '../audit/audit.repository.ts';
import type { DataKeys } from '../data-keys/data-keys.repository.ts';
import { changeLogCtes, TIMELINE_RETURNING } from '../referrals/change.ts';
import type { Executor } from '../executor.ts';
import { sealedDescription, type NewTimelineEvent } from '../referrals/parts.ts';
import type { EhrSubmissionsTable } from '../schema.ts';
import { OUTBOX_TOPICS } from '../../domain/lifecycle.ts';

export type SubmissionOutcome = EhrSubmissionsTable['outcome'];

export interface EhrSubmission {
  readonly id: string;
  readonly referralId: string;
  readonly messageId: string;
  readonly version: number;
  readonly attempt: number;
  readonly attemptedAt: Date;
  readonly outcome: SubmissionOutcome;
  readonly httpStatus: number | null;
  readonly errorCode: string | null;
  readonly sha256: string | null;
  readonly ehrReference: string | null;
  readonly durationMs: number;
  readonly requestId: string;
  /**
   * The attempt an operator's replay repeated. `recordAttempt` takes it from the referral (where the
   * replay left it), so a worker never sets it; an `insert` may.
   */
  readonly replayOf?: string | null;
}

/** A referral whose forward failed for good, with the answer to its latest attempt. IDs only. */
export interface FailedForward {
  readonly referralId: string;
  readonly lastAttemptAt: Date | null;
  readonly attempts: number;
  readonly httpStatus: number | null;
  readonly errorCode: string | null;
  /** The referral version the latest attempt sent; null when no attempt is on the ledger. */
  readonly version: number | null;
}

/** A forward that is due, as the reconciler pages through them. */
export interface DueForward {
  readonly id: string;
  readonly dueVersion: number;
  readonly updatedAt: Date;
  readonly sender: InstitutionRef;
}

/** The forwarding columns of a referral, read under a row lock. */
export interface ForwardingRow {
  readonly version: number;
  readonly status: string;
  readonly deleted: boolean;
  readonly senderSystem: string;
  readonly state: string;
  readonly dueVersion: number | null;
  readonly forwardedVersion: number | null;
}

/** One attempt and everything it settles, as `recordAttempt` writes them together. */
export interface AttemptRecord {
  readonly submission: EhrSubmission;
  /** The state the forward ends in when this attempt carried the due version or a later one. */
  readonly settlesAs: 'forwarded' | 'failed' | undefined;
  /** The attempt delivered its version: the referral's forwarded version becomes at least that. */
  readonly delivered: boolean;
  /**
   * The timeline event the attempt writes, unless the referral is deleted or in a status the
   * lifecycle table does not allow it from.
   */
  readonly event: (NewTimelineEvent & { readonly fromStatuses: readonly string[] }) | undefined;
  readonly audit: AuditEvent;
}

/**
 * Queued referrals with a due version, untouched since `quietSince` (neither changed nor attempted),
 * and with no outbox row of a forward topic (a forward, or a forward again) left to dispatch.
 */
function dueWithoutProgressQuery(db: Executor, quietSince: Date) {
  return db
    .selectFrom('referrals as r')
    .select(['r.id', 'r.ehr_due_version', 'r.updated_at', 'r.sender_id_type', 'r.sender_id'])
    .where('r.ehr_state', '=', 'queued')
    .where('r.ehr_due_version', 'is not', null)
    .where('r.updated_at', '<', quietSince)
    .where((eb) =>
      eb.or([eb('r.ehr_last_attempt_at', 'is', null), eb('r.ehr_last_attempt_at', '<', quietSince)]),
    )
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('outbox as o')
            .select('o.id')
            .whereRef('o.referral_id', '=', 'r.id')
            .where('o.topic', 'in', [OUTBOX_TOPICS.forward, OUTBOX_TOPICS.forwardAgain])
            .where('o.processed_at', 'is', null),
        ),
      ),
    );
}

/**
 * Records an attempt in one statement, under the referral's row lock: the ledger row, the
 * referral's forwarding columns, the timeline event (its sentence sealed), and what the change log
 * adds to it (the event's row in the feed and the audit row, db/referrals/change.ts). One round
 * trip and one commit per attempt, with no transaction held open in between. The referral's
 * version and updated_at stay: an attempt is the bridge's bookkeeping, not a change to the
 * referral. Returns false, having written nothing, when the referral does not exist.
 */
export async function recordAttempt(db: Executor, keys: DataKeys, r: AttemptRecord): Promise<boolean> {
  const s = r.submission;
  const e = r.event;
  const cipher = await keys.cipher(db);
  const description = e === undefined ? null : sealedDescription(e, cipher);
  // The feed reads the locked row: an attempt changes neither the version nor the parties. The
  // audit row too is written only when the referral was found.
  const leftBehind = changeLogCtes(db, {
    feed: { from: 'ref', events: e === undefined ? [] : [e] },
    outbox: [],
    audit: r.audit,
    auditOnlyWith: 'ref',
  });
  const { rows } = await sql<{ found: number }>`
    with ref as (
      select id, version, status, deleted_at, ehr_due_version, ehr_replay_of,
        sender_id_type, sender_id, provider_id_type, provider_id
      from referrals where id = ${s.referralId}::uuid for update
    ), ledger as (
      insert into ehr_submissions (id, referral_id, message_id, version, attempt, attempted_at, outcome,
        http_status, error_code, sha256, ehr_reference, duration_ms, request_id, replay_of)
      select ${s.id}::uuid, ref.id, ${s.messageId}, ${s.version}::int, ${s.attempt}::int,
        ${s.attemptedAt}::timestamptz, ${s.outcome}, ${s.httpStatus}::int, ${s.errorCode}::text,
        ${s.sha256}::text, ${s.ehrReference}::text, ${s.durationMs}::int, ${s.requestId}, ref.ehr_replay_of
      from ref
    ), forwarding as (
      update referrals as r set
        ehr_attempts = r.ehr_attempts + 1,
        ehr_last_attempt_at = ${s.attemptedAt}::timestamptz,
        ehr_sha256 = coalesce(${s.sha256}::text, r.ehr_sha256),
        ehr_state = case
          when ${r.settlesAs ?? null}::text is not null and ref.ehr_due_version is not null
            and ${s.version}::int >= ref.ehr_due_version then ${r.settlesAs ?? null}::text
          else r.ehr_state end,
        ehr_forwarded_version = case
          when ${r.delivered}::boolean then greatest(coalesce(r.ehr_forwarded_version, 0), ${s.version}::int)
          else r.ehr_forwarded_version end,
        -- A replay's attempts name the attempt it repeats until one of them settles the forward.
        ehr_replay_of = case when ${r.settlesAs ?? null}::text is not null then null else r.ehr_replay_of end
      from ref where r.id = ref.id
    ), timeline as (
      insert into timeline_events (id, referral_id, type, system, description, produced_at)
      select ${e?.id ?? null}::uuid, ref.id, ${e?.type ?? null}::text, ${e?.system ?? null}::text,
        ${description}::text, ${e?.producedAt ?? null}::timestamptz
      from ref
      where ${e !== undefined}::boolean and ref.deleted_at is null
        and ref.status = any(${[...(e?.fromStatuses ?? [])]}::text[])
      returning ${sql.join(TIMELINE_RETURNING.map((column) => sql.ref(column)))}
    ), ${sql.join(leftBehind)}
    select 1 as found from ref
  `.execute(db);
  return rows.length > 0;
}

/** The ledger's reads and its bookkeeping on the referrals (an attempt is recorded by `recordAttempt`). */
export function ehrSubmissionRepository(db: Executor) {
  return {
    async insert(s: EhrSubmission): Promise<void> {
      await db
        .insertInto('ehr_submissions')
        .values({
          id: s.id,
          referral_id: s.referralId,
          message_id: s.messageId,
          version: s.version,
          attempt: s.attempt,
          attempted_at: s.attemptedAt,
          outcome: s.outcome,
          http_status: s.httpStatus,
          error_code: s.errorCode,
          sha256: s.sha256,
          ehr_reference: s.ehrReference,
          duration_ms: s.durationMs,
          request_id: s.requestId,
          replay_of: s.replayOf ?? null,
        })
        .execute();
    },

    async list(referralId: string): Promise<EhrSubmission[]> {
      const rows = await db
        .selectFrom('ehr_submissions')
        .selectAll()
        .where('referral_id', '=', referralId)
        .orderBy('attempted_at')
        .orderBy('id')
        .execute();
      return rows.map((r) => ({
        id: r.id,
        referralId: r.referral_id,
        messageId: r.message_id,
        version: r.version,
        attempt: r.attempt,
        attemptedAt: r.attempted_at,
        outcome: r.outcome,
        httpStatus: r.http_status,
        errorCode: r.error_code,
        sha256: r.sha256,
        ehrReference: r.ehr_reference,
        durationMs: r.duration_ms,
        requestId: r.request_id,
        replayOf: r.replay_of,
      }));
    },

    /** Locks the referral's row for the rest of the transaction; undefined when there is none. */
    async lockForwarding(referralId: string): Promise<ForwardingRow | undefined> {
      const row = await db
        .selectFrom('referrals')
        .select([
          'version',
          'status',
          'deleted_at',
          'sender_system',
          'ehr_state',
          'ehr_due_version',
          'ehr_forwarded_version',
        ])
        .where('id', '=', referralId)
        .forUpdate()
        .executeTakeFirst();
      return (
        row && {
          version: row.version,
          status: row.status,
          deleted: row.deleted_at !== null,
          senderSystem: row.sender_system,
          state: row.ehr_state,
          dueVersion: row.ehr_due_version,
          forwardedVersion: row.ehr_forwarded_version,
        }
      );
    },

    /**
     * Records an attempt on the referral's forwarding columns. `state` is the new forwarding state
     * (unchanged when undefined). The referral's version and updated_at stay: an attempt is the
     * bridge's bookkeeping, not a change to the referral.
     */
    async updateForwarding(
      referralId: string,
      change: {
        readonly at: Date;
        readonly sha256: string | null;
        readonly state?: string;
        readonly forwardedVersion?: number;
      },
    ): Promise<void> {
      await db
        .updateTable('referrals')
        .set((eb) => ({
          ehr_attempts: eb('ehr_attempts', '+', 1),
          ehr_last_attempt_at: change.at,
          ...(change.sha256 === null ? {} : { ehr_sha256: change.sha256 }),
          ...(change.state === undefined ? {} : { ehr_state: change.state }),
          ...(change.forwardedVersion === undefined
            ? {}
            : {
                ehr_forwarded_version: sql<number>`greatest(coalesce(ehr_forwarded_version, 0), ${change.forwardedVersion})`,
              }),
        }))
        .where('id', '=', referralId)
        .execute();
    },

    /** The referrals whose forward failed for good (deleted ones aside), by ID. */
    async failedIds(): Promise<string[]> {
      const rows = await db
        .selectFrom('referrals')
        .select('id')
        .where('ehr_state', '=', 'failed')
        .where('deleted_at', 'is', null)
        .orderBy('id')
        .execute();
      return rows.map((r) => r.id);
    },

    /**
     * Queues the failed forwards among `ids` again, each at its current version; returns the
     * referrals (with that version) that were failed and are now queued.
     */
    async requeueFailed(ids: readonly string[]): Promise<{ id: string; version: number }[]> {
      if (ids.length === 0) return [];
      return db
        .updateTable('referrals')
        .set((eb) => ({
          ehr_state: 'queued',
          ehr_due_version: eb.ref('version'),
          ehr_attempts: 0,
          ehr_replay_of: null,
        }))
        .where('ehr_state', '=', 'failed')
        .where('deleted_at', 'is', null)
        .where('id', 'in', [...ids])
        .returning(['id', 'version'])
        .execute();
    },

    /** Nothing will be sent for the due forward (the referral went back to draft or was deleted). */
    async withdrawForward(referralId: string): Promise<void> {
      await db
        .updateTable('referrals')
        .set({
          ehr_state: sql<string>`case when ehr_forwarded_version is null then 'not-sent' else 'forwarded' end`,
          ehr_due_version: null,
        })
        .where('id', '=', referralId)
        .execute();
    },

    /**
     * Referrals whose forward is due and that no queue job may be carrying: queued, and untouched for
     * `quietSince` (the relay and the worker get time to act first), with no undispatched outbox row.
     * Oldest first, a page at a time: `after` is the last row of the previous page.
     */
    async dueWithoutProgress(quietSince: Date, limit: number, after?: DueForward): Promise<DueForward[]> {
      let query = dueWithoutProgressQuery(db, quietSince);
      if (after !== undefined) {
        query = query.where((eb) =>
          eb.or([
            eb('r.updated_at', '>', after.updatedAt),
            eb.and([eb('r.updated_at', '=', after.updatedAt), eb('r.id', '>', after.id)]),
          ]),
        );
      }
      const rows = await query.orderBy('r.updated_at').orderBy('r.id').limit(limit).execute();
      return rows.map((r) => ({
        id: r.id,
        dueVersion: r.ehr_due_version ?? 0,
        updatedAt: r.updated_at,
        sender: { idType: r.sender_id_type, id: r.sender_id },
      }));
    },

    /**
     * `dueWithoutProgress` for one referral and its due version, read again: the reconciler asks it
     * after finding no live job, so a forward that a worker finished, or a relay took up, since the
     * page was read is not counted as lost.
     */
    async isDueWithoutProgress(referralId: string, dueVersion: number, quietSince: Date): Promise<boolean> {
      const row = await dueWithoutProgressQuery(db, quietSince)
        .where('r.id', '=', referralId)
        .where('r.ehr_due_version', '=', dueVersion)
        .executeTakeFirst();
      return row !== undefined;
    },

    /**
     * Referrals whose forward failed for good, the latest attempt first, each with that attempt's
     * answer (HTTP status or error code): for the ops overview. `total` counts them all.
     */
    async failedForwards(limit: number): Promise<{ total: number; rows: FailedForward[] }> {
      const { total } = await db
        .selectFrom('referrals')
        .select(sql<number>`count(*)::int`.as('total'))
        .where('ehr_state', '=', 'failed')
        .executeTakeFirstOrThrow();
      if (total === 0) return { total, rows: [] };
      const rows = await db
        .selectFrom('referrals as r')
        .leftJoinLateral(
          (eb) =>
            eb
              .selectFrom('ehr_submissions as s')
              .select(['s.http_status', 's.error_code', 's.version'])
              .whereRef('s.referral_id', '=', 'r.id')
              .orderBy('s.attempted_at', 'desc')
              .orderBy('s.id', 'desc')
              .limit(1)
              .as('last'),
          (join) => join.onTrue(),
        )
        .select([
          'r.id',
          'r.ehr_last_attempt_at',
          'r.ehr_attempts',
          'last.http_status',
          'last.error_code',
          'last.version',
        ])
        .where('r.ehr_state', '=', 'failed')
        .orderBy('r.ehr_last_attempt_at', (ob) => ob.desc().nullsLast())
        .orderBy('r.id', 'desc')
        .limit(limit)
        .execute();
      return {
        total,
        rows: rows.map((r) => ({
          referralId: r.id,
          lastAttemptAt: r.ehr_last_attempt_at,
          attempts: r.ehr_attempts,
          httpStatus: r.http_status,
          errorCode: r.error_code,
          version: r.version,
        })),
      };
    },
  };
}
