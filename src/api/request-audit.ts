// Audit rows written outside a service's transaction: requests turned away for tenancy or role (their
// transaction rolled back), and idempotent replays (no service runs). What the request named is taken
// from wherever it was sent: the path, the query or the body.
//
// The institution a row names is the one that acted, and a request acts for what its credential holds,
// never for what it merely claims. When the credential may act for the institution the request named,
// that one acted. Otherwise (a key of one clinic naming another, or an ops key naming any) the
// credential's own institution acted, and the claim is kept in a column of its own: so a credential
// cannot add rows to another institution's chain, nor, through the referrals it names, to that
// institution's patients' access reports (db/audit/access-report.repository.ts leaves claims out). A
// credential that holds one institution acts for it; one that holds several, or none (ops keys), acts
// for none in particular, and its row joins the day's `refhub` chain with the credential named.
import type { FastifyRequest } from 'fastify';
import type { ApiDeps } from './api-deps.ts';
import type { ApiKeyRecord } from '../db/api-key.repository.ts';
import { auditEventOf } from '../domain/audit.ts';
import { type AuditActor, type AuditOutcome } from '../db/audit/audit.repository.ts';
import type { Stores } from '../db/stores.ts';
import type { InstitutionRef } from '../domain/access.ts';
import { isUuid } from '../domain/ids.ts';

function fieldsOf(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

export interface RequestAuditDeps extends Pick<ApiDeps, 'clock'> {
  readonly stores: Pick<Stores, 'audit'>;
}

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
  const actor: AuditActor = {
    requestId: request.id,
    apiKeyId: key.id,
    system: key.system,
    ...actingInstitution(key, idType !== null && id !== null ? { idType, id } : null),
    requesterIdentifier: text('requesterIdentifier'),
  };
  const referralIds = [...new Set([...(named !== null && isUuid(named) ? [named] : []), ...moreReferralIds])];
  await deps.stores.audit.record(auditEventOf(actor, action, referralIds, deps.clock.now(), outcome));
}

/** The institution that acted on a request naming `named`, and the claim when it may not act for it. */
export function actingInstitution(
  key: Pick<ApiKeyRecord, 'role' | 'institutions'>,
  named: InstitutionRef | null,
): { institution: InstitutionRef | null; claimedInstitution: InstitutionRef | null } {
  const holds =
    named !== null &&
    key.role !== 'ops' &&
    key.institutions.some((i) => i.idType === named.idType && i.id === named.id);
  if (holds) return { institution: named, claimedInstitution: null };
  const [only] = key.institutions;
  const own = key.role !== 'ops' && key.institutions.length === 1 && only !== undefined ? only : null;
  return { institution: own === null ? null : { idType: own.idType, id: own.id }, claimedInstitution: named };
}

/** The audit action of the request's route. */
export function actionOf(request: FastifyRequest): string {
  return request.routeOptions.config.action ?? `${request.method} ${request.routeOptions.url ?? ''}`;
}
