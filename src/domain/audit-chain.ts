// The audit trail's hash chains, as pure rules: which chain a row joins, the exact text of a row that
// is hashed, and how a row's hash follows from the previous one. `refhub audit verify`, the sealer
// and an auditor checking an export offline all compute the same thing from these rules.
//
// A row's hash covers one of two forms of its content, and the row says which (`hash_form`). Form 1
// is what rows sealed before migration 0020 hold: what the row records, not what the sealer set.
// Form 2, which the sealer writes since, covers every column a verification rests on: what the row
// records, the institution a refused request claimed, and what the sealer set (the chain, the index
// and `sealed_at`). Form 2's text starts with the number 2 and form 1's with the row's ID, a string,
// so no text is both: a row signed in form 2 cannot be rewritten as form 1 with the same hash.
import { createHash } from 'node:crypto';

export interface InstitutionOfRow {
  readonly idType: string;
  readonly id: string;
}

/** What a writer records of an attempt: it was done, or refused. */
export type AuditOutcome = 'success' | 'denied';

/**
 * The audit fields a row records: everything but what the sealer adds. The one declaration of the
 * audit row's shape: the row a writer makes (db/audit/audit.repository.ts), the row the sealer chains
 * and the row an export holds are all this, with what each adds.
 */
export interface AuditContent {
  readonly id: string;
  readonly occurredAt: Date;
  readonly requestId: string;
  readonly apiKeyId: string | null;
  readonly system: string | null;
  /** The institution that acted: the one the credential acted for, or its own (api/request-audit.ts). */
  readonly institution: InstitutionOfRow | null;
  /** The institution a refused request named, when its credential may not act for it. */
  readonly claimedInstitution: InstitutionOfRow | null;
  readonly requesterIdentifier: string | null;
  readonly action: string;
  /** An `AuditOutcome` as written; a string as read back, for a check to judge. */
  readonly outcome: string;
  readonly referralIds: readonly string[];
}

/** What the sealer sets on a row besides the hashes, which form 2 covers too. */
export interface AuditSeal {
  readonly chain: string;
  readonly chainIndex: number;
  readonly sealedAt: Date;
}

/** The forms of a row's hashed content; the sealer writes HASH_FORM. */
export type HashForm = 1 | 2;
export const HASH_FORM: HashForm = 2;

export function isHashForm(value: unknown): value is HashForm {
  return value === 1 || value === 2;
}

/** The `prev_hash` of the first row of a chain. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * The chain a row joins: its institution's for the UTC day it occurred (`hci:S1234A/2026-11-26`), or,
 * for rows that name no institution (refhub's own work, ops), the day's `refhub` chain. Chains are
 * small and many, so sealing never contends on one, and a day's chains can be checked alone.
 */
export function chainOf(row: Pick<AuditContent, 'institution' | 'occurredAt'>): string {
  const day = row.occurredAt.toISOString().slice(0, 10);
  return row.institution === null
    ? `refhub/${day}`
    : `${row.institution.idType}:${row.institution.id}/${day}`;
}

/** The day of a chain (its name's last part). */
export function dayOfChain(chain: string): string {
  return chain.slice(chain.lastIndexOf('/') + 1);
}

/**
 * The text a row's hash covers, as a JSON array, times in ISO 8601 UTC with milliseconds:
 * - form 1: `[id, occurredAt, requestId, apiKeyId, system, institution idType, institution id,
 *   requesterIdentifier, action, outcome, referralIds]`;
 * - form 2: `[2, chain, chainIndex, id, occurredAt, requestId, apiKeyId, system, institution idType,
 *   institution id, claimed idType, claimed id, requesterIdentifier, action, outcome, referralIds,
 *   sealedAt]`.
 * Form 1 has no place for a claim: a row of form 1 that holds one is not as it was sealed.
 */
export function contentText(row: AuditContent & AuditSeal, form: HashForm): string {
  if (form === 1)
    return JSON.stringify([
      row.id,
      row.occurredAt.toISOString(),
      row.requestId,
      row.apiKeyId,
      row.system,
      row.institution?.idType ?? null,
      row.institution?.id ?? null,
      row.requesterIdentifier,
      row.action,
      row.outcome,
      [...row.referralIds],
    ]);
  return JSON.stringify([
    2,
    row.chain,
    row.chainIndex,
    row.id,
    row.occurredAt.toISOString(),
    row.requestId,
    row.apiKeyId,
    row.system,
    row.institution?.idType ?? null,
    row.institution?.id ?? null,
    row.claimedInstitution?.idType ?? null,
    row.claimedInstitution?.id ?? null,
    row.requesterIdentifier,
    row.action,
    row.outcome,
    [...row.referralIds],
    row.sealedAt.toISOString(),
  ]);
}

/** The hash of a row: SHA-256, in hex, of the previous row's hash, a line feed, and its content. */
export function rowHashOf(prevHash: string, row: AuditContent & AuditSeal, form: HashForm): string {
  return createHash('sha256')
    .update(`${prevHash}\n${contentText(row, form)}`)
    .digest('hex');
}
