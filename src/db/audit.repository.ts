// The audit trail: one row for every read and write of referral data, written in the same
// transaction as the work it records (and on its own for denied attempts). It names the key,
// institution, requester, action and referral IDs, and never holds patient data.
import type { Executor } from './executor.ts';

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

export function auditRepository(db: Executor) {
  return {
    async record(event: AuditEvent): Promise<void> {
      await db
        .insertInto('audit_events')
        .values({
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
        })
        .execute();
    },
  };
}
