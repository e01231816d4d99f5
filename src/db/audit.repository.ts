// The audit trail: one row for every read and write of referral data, written in the same
// transaction as the work it records (and on its own for denied attempts). It names the key,
// institution, requester, action and referral IDs, and never holds patient data.
import type { Insertable } from 'kysely';
import type { Executor } from './executor.ts';
import { linkTokenRows, type NewLinkToken } from './links.repository.ts';
import type { AuditEventsTable } from './schema.ts';

export interface AuditEvent {
  readonly id: string;
  readonly occurredAt: Date;
  readonly requestId: string;
  readonly apiKeyId: string | null;
  readonly system: string | null;
  readonly institution: { readonly idType: string; readonly id: string } | null;
  readonly requesterIdentifier: string | null;
  readonly action: string;
  readonly outcome: 'success' | 'denied';
  readonly referralIds: readonly string[];
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
    requester_identifier: event.requesterIdentifier,
    action: event.action,
    outcome: event.outcome,
    referral_ids: [...event.referralIds],
  };
}

export function auditRepository(db: Executor) {
  return {
    async record(event: AuditEvent): Promise<void> {
      await db.insertInto('audit_events').values(auditRow(event)).execute();
    },

    /**
     * The audit row of a read together with the one-time links the read hands out, in one statement:
     * both are stored or neither is, without a transaction of their own (see referral-queries.ts).
     */
    async recordWithLinks(event: AuditEvent, links: readonly NewLinkToken[]): Promise<void> {
      if (links.length === 0) return this.record(event);
      await db
        .with('minted', (q) => q.insertInto('link_tokens').values(linkTokenRows(links)))
        .insertInto('audit_events')
        .values(auditRow(event))
        .execute();
    },
  };
}
