// Audit rows written outside a service's transaction: requests turned away for tenancy or role (their
// transaction rolled back), and idempotent replays (no service runs). What the request named is taken
// from wherever it was sent: the path, the query or the body.
import type { FastifyRequest } from 'fastify';
import type { ApiDeps } from './api-deps.ts';
import { auditEventOf, auditRepository, type AuditOutcome } from '../db/audit.repository.ts';
import { isUuid } from '../domain/ids.ts';

function fieldsOf(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

export type RequestAuditDeps = Pick<ApiDeps, 'db' | 'clock'>;

export async function auditRequest(
  deps: RequestAuditDeps,
  request: FastifyRequest,
  outcome: AuditOutcome,
  action: string,
  moreReferralIds: readonly string[] = [],
): Promise<void> {
  const key = request.apiKey;
  if (!key) return;
  const sent = { ...fieldsOf(request.query), ...fieldsOf(request.body), ...fieldsOf(request.params) };
  const text = (name: string) => (typeof sent[name] === 'string' ? sent[name] : null);
  const idType = text('institutionIdType');
  const id = text('institutionId');
  const named = text('referralId');
  const actor = {
    requestId: request.id,
    apiKeyId: key.id,
    system: key.system,
    institution: idType !== null && id !== null ? { idType, id } : null,
    requesterIdentifier: text('requesterIdentifier'),
  };
  const referralIds = [...new Set([...(named !== null && isUuid(named) ? [named] : []), ...moreReferralIds])];
  await auditRepository(deps.db).record(auditEventOf(actor, action, referralIds, deps.clock.now(), outcome));
}

/** The audit action of the request's route. */
export function actionOf(request: FastifyRequest): string {
  return request.routeOptions.config.action ?? `${request.method} ${request.routeOptions.url ?? ''}`;
}
