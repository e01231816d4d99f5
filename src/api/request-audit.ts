// Audit rows written outside a service's transaction: requests turned away for tenancy or role (their
// transaction rolled back), and idempotent replays (no service runs). What the request named is taken
// from wherever it was sent: the path, the query or the body.
import type { FastifyRequest } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../composition/context.ts';
import { auditRepository } from '../db/audit.repository.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function fieldsOf(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

export async function auditRequest(
  ctx: AppContext,
  request: FastifyRequest,
  outcome: 'success' | 'denied',
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
  await auditRepository(ctx.db).record({
    id: uuidv7(),
    occurredAt: ctx.clock.now(),
    requestId: request.id,
    apiKeyId: key.id,
    system: key.system,
    institution: idType !== null && id !== null ? { idType, id } : null,
    requesterIdentifier: text('requesterIdentifier'),
    action,
    outcome,
    referralIds: [...new Set([...(named !== null && UUID.test(named) ? [named] : []), ...moreReferralIds])],
  });
}

/** The audit action of the request's route. */
export function actionOf(request: FastifyRequest): string {
  return request.routeOptions.config.action ?? `${request.method} ${request.routeOptions.url ?? ''}`;
}
