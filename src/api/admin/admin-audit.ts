// Audit rows for the ops pages: who opened them, which jobs they looked at or changed, and every
// attempt that was turned away. IDs only: the key, the user name typed at the sign-in prompt (the
// person behind a shared ops key), the action and the referral IDs a job ID names.
import type { FastifyRequest } from 'fastify';
import type { ApiKeyRecord } from '../../db/api-key.repository.ts';
import { auditEventOf } from '../../domain/audit.ts';
import { type AuditOutcome } from '../../db/audit/audit.repository.ts';
import type { Stores } from '../../db/stores.ts';
import type { Clock } from '../../domain/clock.ts';
import type { AdminAction } from './admin-access.ts';

export interface AdminAuditEntry {
  readonly action: AdminAction;
  readonly outcome: AuditOutcome;
  /** The key presented; null when it was not a valid key. */
  readonly key: ApiKeyRecord | null;
  /** The user name given with the key, when it is one a person would type. */
  readonly user: string | null;
  readonly referralIds?: readonly string[];
}

export interface AdminAudit {
  record(request: FastifyRequest, entry: AdminAuditEntry): Promise<void>;
}

// The user name is free text from a sign-in prompt: kept when it is short and printable.
const PRINTABLE_USER = /^[\x21-\x7e][\x20-\x7e]{0,127}$/;

export function userNameForAudit(user: string): string | null {
  const trimmed = user.trim();
  return PRINTABLE_USER.test(trimmed) ? trimmed : null;
}

export function createAdminAudit(deps: {
  readonly stores: Pick<Stores, 'audit'>;
  readonly clock: Clock;
}): AdminAudit {
  return {
    async record(request, entry) {
      // An ops key acts for no institution; the person is the user name typed at the prompt.
      const actor = {
        requestId: request.id,
        apiKeyId: entry.key?.id ?? null,
        system: entry.key?.system ?? null,
        institution: null,
        requesterIdentifier: entry.user,
      };
      await deps.stores.audit.record(
        auditEventOf(actor, entry.action, entry.referralIds ?? [], deps.clock.now(), entry.outcome),
      );
    },
  };
}
