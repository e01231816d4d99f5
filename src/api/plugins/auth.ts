// `Authorization: ApiKey <key>` (contract §2), or `Authorization: Bearer <token>`, an access token of
// signed client credentials (POST /oauth2/token). Every /api/v1 request is authenticated before it is
// validated; `callerOf` then checks that the key, or the token's client, may act for the institution
// the request names. A token also carries scopes, and each API route declares the one it needs in its
// schema (`operation()`, schemas/operation.ts): `system/Referral.read` for what changes nothing, the
// searches sent as POST included, `system/Referral.write` for what changes something. An app with a
// route that declares none never becomes ready, so no request is let through, or refused, on a guess
// from its HTTP method. An installation may refuse API keys altogether (ACCEPT_API_KEYS=false).
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
import { API_PREFIX, isApiRoute } from '../http.ts';
import type { Caller } from '../../services/caller.ts';
import { declaredScope } from '../schemas/operation.ts';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey: ApiKeyRecord | null;
  }
  interface FastifyContextConfig {
    /** The audit action of the route, also used for denied attempts. */
    action?: string;
  }
}

const SCHEME = /^(ApiKey|Bearer)\s+(\S+)\s*$/i;

export type AuthDeps = Pick<ApiDeps, 'apiKeys' | 'clientCredentials' | 'metrics'> & {
  readonly config: Pick<ApiDeps['config'], 'acceptApiKeys'>;
};

function throttled(retryAfter: number, what: string): AppError {
  return new AppError(
    'rate_limited',
    429,
    'Too many failed authentications',
    `Too many requests with ${what} from this address. Retry after ${retryAfter} seconds.`,
    {},
    undefined,
    retryAfter,
  );
}

/** `failures` counts unknown keys per client address (built by the composition root, one per app). */
export function registerAuth(app: FastifyInstance, deps: AuthDeps, failures: FailureLimiter): void {
  app.decorateRequest('apiKey', null);

  // Every API route says which scope a token needs for it. One that does not stops the app from
  // becoming ready, so it never answers a request: listen() and inject() both wait for ready().
  // (Thrown here instead, the error would escape a route file's synchronous plugin uncaught.)
  const undeclared: string[] = [];
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(`${API_PREFIX}/`) || declaredScope(route.schema) !== undefined) return;
    undeclared.push(`${Array.isArray(route.method) ? route.method.join(',') : route.method} ${route.url}`);
  });
  app.addHook('onReady', (done) => {
    if (undeclared.length === 0) {
      done();
      return;
    }
    done(
      new Error(
        `An API route declares no scope (${undeclared.join(', ')}): give its schema ` +
          'operation({ scope, … }) (src/api/schemas/operation.ts).',
      ),
    );
  });

  app.addHook('onRequest', async (request) => {
    if (!isApiRoute(request)) return;
    const header = request.headers.authorization;
    const [, scheme, presented] = (header === undefined ? undefined : SCHEME.exec(header)) ?? [];
    if (scheme === undefined || presented === undefined) throw new UnauthorizedError();
    if (scheme.toLowerCase() === 'bearer') {
      const token = await deps.clientCredentials.authenticate(presented);
      if (!token) {
        const retryAfter = failures.fail(request.ip);
        deps.metrics.authFailure('access-token', retryAfter === undefined ? 'refused' : 'throttled');
        if (retryAfter !== undefined) throw throttled(retryAfter, 'unknown access tokens');
        throw new UnauthorizedError(
          'The access token is unknown or has expired, or its client has been revoked: get a new one from ' +
            'POST /oauth2/token.',
        );
      }
      // Set before the scope check, so that a request refused for its scope is audited under the client.
      request.apiKey = token;
      const needed = declaredScope(request.routeOptions.schema);
      // Never undefined once the app is ready (see onReady above); if it were, nothing is granted.
      if (needed === undefined) throw new Error(`${request.routeOptions.url ?? ''} declares no scope`);
      if (!token.scopes.includes(needed)) {
        throw new AppError(
          'insufficient_scope',
          403,
          'Insufficient scope',
          `This request needs the scope ${needed}, which the access token was not granted.`,
        );
      }
      return;
    }
    const key = await deps.apiKeys.authenticate(presented);
    if (!key) {
      const retryAfter = failures.fail(request.ip);
      deps.metrics.authFailure('api-key', retryAfter === undefined ? 'refused' : 'throttled');
      if (retryAfter !== undefined) throw throttled(retryAfter, 'unknown API keys');
      throw new UnauthorizedError('The API key is unknown or has been revoked.');
    }
    // Ops keys are refhub's operators' own, for the ops API; clinic systems sign their credentials.
    if (!deps.config.acceptApiKeys && key.role !== 'ops') {
      throw new UnauthorizedError(
        'This installation does not accept API keys: authenticate with an access token of signed client ' +
          'credentials (POST /oauth2/token), as "Authorization: Bearer <token>".',
      );
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
