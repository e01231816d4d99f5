// Rate limits per client on the API (services/rate-limits.service.ts keeps the buckets): every
// /api/v1 request of an authenticated client takes one from its client's bucket — the API key, or
// the signed-credentials client of an access token — before its input is validated, and every answer
// to it carries `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11), success
// and refusal alike. Over the limit it is answered 429 `rate_limited` with `Retry-After`, and does
// nothing. A request that is not authenticated never gets here: it was answered 401 first, and failed
// authentication has its own limit per address (failure-limiter.ts). The web form, the ops pages,
// health, metrics and the token endpoint are not API routes and are not counted.
import type { FastifyInstance } from 'fastify';
import { rateLimitHeaders } from '../domain/rate-limits.ts';
import { AppError } from '../errors.ts';
import type { RateLimits } from '../services/rate-limits.service.ts';
import { isApiRoute } from './http.ts';

export interface RateLimitDeps {
  readonly rateLimits: Pick<RateLimits, 'take'>;
}

/** How a rate in the 429's detail reads: `10`, `0.5`. */
function rate(perSecond: number): string {
  return String(Math.round(perSecond * 1000) / 1000);
}

export function registerRateLimits(app: FastifyInstance, deps: RateLimitDeps): void {
  app.addHook('preValidation', async (request, reply) => {
    const client = request.apiKey;
    if (client === null || !isApiRoute(request)) return;
    const { policy, decision } = await deps.rateLimits.take(client);
    void reply.headers(rateLimitHeaders(policy, decision));
    if (decision.allowed) return;
    const who = client.kind === 'client' ? 'This client' : 'This API key';
    throw new AppError(
      'rate_limited',
      429,
      'Too many requests',
      `${who} is limited to ${rate(policy.perSecond)} requests a second, with up to ${policy.burst} at ` +
        `once. Retry after ${decision.retryAfterSeconds} seconds.`,
      {},
      undefined,
      decision.retryAfterSeconds,
    );
  });
}
