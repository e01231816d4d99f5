// The audit trail's hash chains, as pure rules: which chain a row joins, the exact text of a row that
// is hashed, and how a row's hash follows from the previous one. `refhub audit verify`, the sealer
// and an auditor checking an export offline all compute the same thing from these rules.
import { createHash } from 'node:crypto';

/** The audit fields a row's hash covers: everything it records, nothing the sealer adds. */
export interface AuditContent {
  readonly id: string;
  readonly occurredAt: Date;
  readonly requestId: string;
  readonly apiKeyId: string | null;
  readonly system: string | null;
  readonly institution: { readonly idType: string; readonly id: string } | null;
  readonly requesterIdentifier: string | null;
  readonly action: string;
  readonly outcome: string;
  readonly referralIds: readonly string[];
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

/** The text a row's hash covers: its fields as a JSON array, in this order, times in ISO 8601 UTC. */
export function contentText(row: AuditContent): string {
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
}

/** The hash of a row: SHA-256, in hex, of the previous row's hash, a line feed, and its content. */
export function rowHashOf(prevHash: string, row: AuditContent): string {
  return createHash('sha256')
    .update(`${prevHash}\n${contentText(row)}`)
    .digest('hex');
}
