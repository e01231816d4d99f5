// `Authorization: ApiKey <key>` (contract §2). Every /api/v1 request is authenticated before it is
// validated; `callerOf` then checks that the key may act for the institution the request names.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { InstitutionRef } from '../../domain/access.ts';
import {
  AppError,
  ForbiddenRoleError,
  InstitutionNotPermittedError,
  UnauthorizedError,
} from '../../errors.ts';
import type { FailureLimiter } from '../failure-limiter.ts';
import type { ApiKeyRecord } from '../../db/api-key.repository.ts';
import type { ApiDeps } from '../api-deps.ts';
import { isApiRoute } from '../http.ts';
import type { Caller } from '../../services/caller.ts';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey: ApiKeyRecord | null;
  }
  interface FastifyContextConfig {
    /** The audit action of the route, also used for denied attempts. */
    action?: string;
  }
}

const SCHEME = /^ApiKey\s+(\S+)\s*$/i;

export type AuthDeps = Pick<ApiDeps, 'apiKeys' | 'metrics'>;

/** `failures` counts unknown keys per client address (built by the composition root, one per app). */
export function registerAuth(app: FastifyInstance, deps: AuthDeps, failures: FailureLimiter): void {
  app.decorateRequest('apiKey', null);

  app.addHook('onRequest', async (request) => {
    if (!isApiRoute(request)) return;
    const header = request.headers.authorization;
    const presented = header === undefined ? undefined : SCHEME.exec(header)?.[1];
    if (presented === undefined) throw new UnauthorizedError();
    const key = await deps.apiKeys.authenticate(presented);
    if (!key) {
      const retryAfter = failures.fail(request.ip);
      deps.metrics.authFailure('api-key', retryAfter === undefined ? 'refused' : 'throttled');
      if (retryAfter !== undefined) {
        throw new AppError(
          'rate_limited',
          429,
          'Too many failed authentications',
          `Too many requests with unknown API keys from this address. Retry after ${retryAfter} seconds.`,
          {},
          undefined,
          retryAfter,
        );
      }
      throw new UnauthorizedError('The API key is unknown or has been revoked.');
    }
    request.apiKey = key;
  });
}

/**
 * The caller for a request that acts for `institution`: 403 institution_not_permitted when the key
 * may not act for it, and 403 forbidden_role for ops keys, which never touch referral data.
 */
export function callerOf(
  request: FastifyRequest,
  institution: InstitutionRef,
  requesterIdentifier: string | undefined,
): Caller {
  const key = request.apiKey;
  if (!key) throw new UnauthorizedError();
  // The role first: an ops key holds no institutions, so the institution check would hide its 403.
  if (key.role === 'ops') throw new ForbiddenRoleError('An ops key may not read or change referrals.');
  if (!key.institutions.some((i) => i.idType === institution.idType && i.id === institution.id)) {
    throw new InstitutionNotPermittedError(institution.idType, institution.id);
  }
  return {
    apiKeyId: key.id,
    system: key.system,
    role: key.role,
    institution,
    requesterIdentifier: requesterIdentifier ?? null,
    requestId: request.id,
    idempotency: request.idempotency ?? undefined,
  };
}
