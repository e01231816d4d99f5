// The audit trail: one row for every read and write of referral data, written in the same
// transaction as the work it records (and on its own for denied attempts). It names the key,
// institution, requester, action and referral IDs, and never holds patient data. A row is written
// without its seal; the sealer chains it a moment later (audit-chain.repository.ts), so that no write
// waits for another's.
//
// Every writer makes its row with `auditEventOf` (domain/audit.ts) and turns it into columns with `auditRow`, so what a
// column holds is decided here alone, and `auditContentOf` reads them back. Every INSERT of an audit
// row is made here, by one function, naming the same columns from `AUDIT_COLUMN_TYPES`: `record`
// writes a row on its own; a statement written in SQL takes its rows through `auditInsert` (one that
// must write the row only when another part of it found its referral), or, when the statement itself
// decides the referral IDs, `auditInsertFromJson`. The row's shape is declared once, `AuditContent`
// (domain/audit-chain.ts).
import { sql, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import type { AuditContent } from '../../domain/audit-chain.ts';
import type { AuditEvent } from '../../domain/audit.ts';
import type { Executor } from '../executor.ts';
import type { AuditEventsTable } from '../schema.ts';

export type { AuditActor, AuditEvent, AuditOutcome } from '../../domain/audit.ts';

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

/** A column a writer sets. */
export type AuditColumn = keyof typeof AUDIT_COLUMN_TYPES;

/** The columns a writer sets, in `AUDIT_COLUMN_TYPES`' order (`referral_ids` last). */
export const AUDIT_COLUMNS = Object.keys(AUDIT_COLUMN_TYPES) as AuditColumn[];

/** The columns the sealer sets, in the order the chain's statements read them. */
export const AUDIT_SEAL_COLUMNS = [
  'chain',
  'chain_index',
  'prev_hash',
  'row_hash',
  'sealed_at',
  'hash_form',
] as const satisfies readonly AuditSealColumn[];

/** The row's content, as `auditRow` wrote it: the one reading of the columns a writer sets. */
export function auditContentOf(row: Pick<Selectable<AuditEventsTable>, AuditColumn>): AuditContent {
  return {
    id: row.id,
    occurredAt: row.occurred_at,
    requestId: row.request_id,
    apiKeyId: row.api_key_id,
    system: row.system,
    institution: institutionOf(row.institution_id_type, row.institution_id),
    claimedInstitution: institutionOf(row.claimed_institution_id_type, row.claimed_institution_id),
    requesterIdentifier: row.requester_identifier,
    action: row.action,
    outcome: row.outcome,
    referralIds: row.referral_ids,
  };
}

function institutionOf(idType: string | null, id: string | null): { idType: string; id: string } | null {
  return idType === null || id === null ? null : { idType, id };
}

/**
 * The one INSERT of audit rows: `columns` (every column a writer sets, `referral_ids` last) filled by
 * `rows`, a query (VALUES or SELECT) giving them in that order. Every other function here that writes
 * an audit row goes through it.
 */
function auditRowsInsert(rows: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`insert into audit_events (${sql.join(AUDIT_COLUMNS.map((c) => sql.ref(c)))}) ${rows}`;
}

/**
 * `auditRow(event)` (or each of `events`, in order) as an INSERT for a statement written in SQL, to be
 * used as one of its common table expressions. With `onlyWith`, the name of another of them, the rows
 * are written only when that one has a row (once per row it has): a statement that finds nothing to
 * record then writes no audit row either.
 */
export function auditInsert(
  events: AuditEvent | readonly AuditEvent[],
  onlyWith?: string,
): RawBuilder<unknown> {
  const list: readonly AuditEvent[] = isEventList(events) ? events : [events];
  const values = sql`values ${sql.join(
    list.map((event) => {
      const row = auditRow(event);
      return sql`(${sql.join(AUDIT_COLUMNS.map((c) => sql`${row[c]}::${sql.raw(AUDIT_COLUMN_TYPES[c])}`))})`;
    }),
  )}`;
  return auditRowsInsert(
    onlyWith === undefined ? values : sql`select v.* from (${values}) v cross join ${sql.table(onlyWith)}`,
  );
}

function isEventList(events: AuditEvent | readonly AuditEvent[]): events is readonly AuditEvent[] {
  return Array.isArray(events);
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
  return auditRowsInsert(sql`select ${sql.join(columns.map((c) => sql.ref(`a.${c}`)))}, ${referralIds}
    from ${sql.join(from)}`);
}

export function auditRepository(db: Executor) {
  return {
    async record(event: AuditEvent): Promise<void> {
      await auditInsert(event).execute(db);
    },
  };
}
