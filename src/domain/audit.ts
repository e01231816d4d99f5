// An audit row as a writer makes it, and who it says acted: the one place a row's values are made
// (db/audit/ writes them). Pure, so every layer that records what it did makes its row the same way.
import { v7 as uuidv7 } from 'uuid';
import type { InstitutionRef } from './access.ts';
import type { AuditContent, AuditOutcome } from './audit-chain.ts';
import { REFHUB_SYSTEM } from './lifecycle.ts';

export type { AuditOutcome };

/**
 * An audit row as a writer makes it: what the row records (`AuditContent`, domain/audit-chain.ts, the
 * one declaration of the row's shape), with an outcome a writer may record.
 */
export interface AuditEvent extends AuditContent {
  readonly outcome: AuditOutcome;
}

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
