// The audit trail: one row for every read and write of referral data, written in the same
// transaction as the work it records (and on its own for denied attempts). It names the key,
// institution, requester, action and referral IDs, and never holds patient data. A row is written
// without its seal; the sealer chains it a moment later (audit-chain.repository.ts), so that no write
// waits for another's.
//
// Every writer makes its row with `auditEventOf` and turns it into columns with `auditRow`, so what a
// column holds is decided here alone. A statement written in SQL (one that must write the row only
// when another part of it found its referral) takes the same row through `auditInsert`, or, when the
// statement itself decides the referral IDs, `auditInsertFromJson`: every INSERT of an audit row
// names the same columns, from `AUDIT_COLUMN_TYPES`.
import { sql, type Insertable, type RawBuilder } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { InstitutionRef } from '../../domain/access.ts';
import { REFHUB_SYSTEM } from '../../domain/lifecycle.ts';
import type { Executor } from '../executor.ts';
import type { AuditEventsTable } from '../schema.ts';

export interface AuditEvent {
  readonly id: string;
  readonly occurredAt: Date;
  readonly requestId: string;
  readonly apiKeyId: string | null;
  readonly system: string | null;
  readonly institution: { readonly idType: string; readonly id: string } | null;
  /** The institution a refused request named when its credential may not act for it. */
  readonly claimedInstitution: { readonly idType: string; readonly id: string } | null;
  readonly requesterIdentifier: string | null;
  readonly action: string;
  readonly outcome: AuditOutcome;
  readonly referralIds: readonly string[];
}

export type AuditOutcome = 'success' | 'denied';

/**
 * Who an audit row says acted: the request, the key and its system, the institution it acted for
 * and the person behind it. A service's `Caller` is one; work refhub does on its own is `systemActor`.
 */
export interface AuditActor {
  readonly requestId: string;
  readonly apiKeyId: string | null;
  readonly system: string | null;
  readonly institution: InstitutionRef | null;
  readonly requesterIdentifier: string | null;
  /**
   * The institution a refused request named when the credential may not act for it; `institution`
   * then names the credential's own (api/request-audit.ts). Absent everywhere else.
   */
  readonly claimedInstitution?: InstitutionRef | null;
}

/** refhub itself, doing work (a forward, a reminder, a circuit change) under the request that caused it. */
export function systemActor(requestId: string): AuditActor {
  return { requestId, apiKeyId: null, system: REFHUB_SYSTEM, institution: null, requesterIdentifier: null };
}

/**
 * The audit row of `action` by `actor` at `occurredAt`: the one place a row is made. Only the actor's
 * audit fields are copied, so a caller object with more on it cannot put more in the row. The ID is a
 * UUIDv7, so rows sort by when they were made.
 */
export function auditEventOf(
  actor: AuditActor,
  action: string,
  referralIds: readonly string[],
  occurredAt: Date,
  outcome: AuditOutcome = 'success',
): AuditEvent {
  return {
    id: uuidv7(),
    occurredAt,
    requestId: actor.requestId,
    apiKeyId: actor.apiKeyId,
    system: actor.system,
    institution: actor.institution,
    claimedInstitution: actor.claimedInstitution ?? null,
    requesterIdentifier: actor.requesterIdentifier,
    action,
    outcome,
    referralIds,
  };
}

export function auditRow(event: AuditEvent): Insertable<AuditEventsTable> {
  return {
    id: event.id,
    occurred_at: event.occurredAt,
    request_id: event.requestId,
    api_key_id: event.apiKeyId,
    system: event.system,
    institution_id_type: event.institution?.idType ?? null,
    institution_id: event.institution?.id ?? null,
    claimed_institution_id_type: event.claimedInstitution?.idType ?? null,
    claimed_institution_id: event.claimedInstitution?.id ?? null,
    requester_identifier: event.requesterIdentifier,
    action: event.action,
    outcome: event.outcome,
    referral_ids: [...event.referralIds],
  };
}

/**
 * The SQL type each column of `auditRow` is sent as. A parameter in a SELECT list has no type of its
 * own, so a statement written in SQL must name it (a null `api_key_id` would otherwise be text).
 */
const AUDIT_COLUMN_TYPES = {
  id: 'uuid',
  occurred_at: 'timestamptz',
  request_id: 'text',
  api_key_id: 'uuid',
  system: 'text',
  institution_id_type: 'text',
  institution_id: 'text',
  claimed_institution_id_type: 'text',
  claimed_institution_id: 'text',
  requester_identifier: 'text',
  action: 'text',
  outcome: 'text',
  referral_ids: 'uuid[]',
} as const satisfies Record<Exclude<keyof AuditEventsTable, 'seq' | AuditSealColumn>, string>;

/** The columns the sealer sets later (audit-chain.repository.ts); a row is written without them. */
type AuditSealColumn = 'chain' | 'chain_index' | 'prev_hash' | 'row_hash' | 'sealed_at' | 'hash_form';

/** The columns a writer sets, in `AUDIT_COLUMN_TYPES`' order. */
const AUDIT_COLUMNS = Object.keys(AUDIT_COLUMN_TYPES) as (keyof typeof AUDIT_COLUMN_TYPES)[];

/**
 * `auditRow(event)` as an INSERT for a statement written in SQL, to be used as one of its common table
 * expressions. With `onlyWith`, the name of another of them, the row is written only when that one has
 * a row (one per row it has): a statement that finds nothing to record then writes no audit row either.
 */
export function auditInsert(event: AuditEvent, onlyWith?: string): RawBuilder<unknown> {
  const row = auditRow(event);
  const values = AUDIT_COLUMNS.map((c) => sql`${row[c]}::${sql.raw(AUDIT_COLUMN_TYPES[c])}`);
  const from = onlyWith === undefined ? sql`` : sql` from ${sql.table(onlyWith)}`;
  return sql`insert into audit_events (${sql.join(AUDIT_COLUMNS.map((c) => sql.ref(c)))}) select ${sql.join(values)}${from}`;
}

/**
 * An INSERT of the audit row `json` holds (`JSON.stringify(auditRow(event))`, or a placeholder for it in
 * a statement compiled once), whose referral IDs the statement decides: `referralIds`, an expression
 * over the common table expressions named in `alsoFrom`, which the row is joined with (one row per row
 * they have).
 */
export function auditInsertFromJson(
  json: string,
  referralIds: RawBuilder<unknown>,
  alsoFrom: readonly string[] = [],
): RawBuilder<unknown> {
  const columns = AUDIT_COLUMNS.filter((c) => c !== 'referral_ids');
  const from = [
    sql`json_populate_record(null::audit_events, ${json}::json) a`,
    ...alsoFrom.map((t) => sql.table(t)),
  ];
  return sql`insert into audit_events (${sql.join(columns.map((c) => sql.ref(c)))}, referral_ids)
    select ${sql.join(columns.map((c) => sql.ref(`a.${c}`)))}, ${referralIds}
    from ${sql.join(from)}`;
}

export function auditRepository(db: Executor) {
  return {
    async record(event: AuditEvent): Promise<void> {
      await db.insertInto('audit_events').values(auditRow(event)).execute();
    },
  };
}
