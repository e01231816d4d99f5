// Rate limits per client (domain/rate-limits.ts states the algorithm): each request of an
// authenticated client takes one from its bucket in the shared store — Redis where the queues are in
// Redis, the database where they are in the database — so every API process counts against one
// budget. The limit is the client's own when the operator set one (`setForKey`, `setForClient`,
// audited), and the installation's default (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST) otherwise.
//
// When the shared store does not answer, the limiter fails open to this process's own buckets: a
// Redis outage must not take the API down, and a client is still held to its limit by each process
// (so N processes let through up to N times it) until the store is back. Each such request is counted
// (refhub_rate_limit_fallbacks_total), and the outage is logged once, as it starts and as it ends.
import { v7 as uuidv7 } from 'uuid';
import type { ApiKeyRecord } from '../db/api-key.repository.ts';
import type { Stores } from '../db/stores.ts';
import { auditEventOf } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import { REFHUB_SYSTEM } from '../domain/lifecycle.ts';
import {
  decisionOf,
  memoryBuckets,
  RATE_LIMIT_BOUNDS,
  type BucketTake,
  type RateLimitDecision,
  type RateLimitPolicy,
} from '../domain/rate-limits.ts';
import { NotFoundError, ValidationError, type FieldError } from '../errors.ts';
import { createOutageLog, type Logger } from '../logger.ts';
import type { Metrics } from '../observability/metrics.ts';

/** Where the buckets are shared: Redis (queue/rate-limits.ts) or the database (db/rate-limits.repository.ts). */
export interface SharedBuckets {
  take(clientId: string, nowMs: number, policy: RateLimitPolicy): Promise<BucketTake>;
}

/** The client a request is counted against: the API key, or the client of an access token. */
export type LimitedClient = Pick<ApiKeyRecord, 'id' | 'kind' | 'rateLimit'>;

/** What the limiter said about one request, with the policy it applied (for the headers). */
export interface RateLimitAnswer {
  readonly policy: RateLimitPolicy;
  readonly decision: RateLimitDecision;
}

export interface RateLimitsDeps {
  readonly buckets: SharedBuckets;
  readonly clock: Clock;
  /** The installation's default: RATE_LIMIT_PER_SECOND and RATE_LIMIT_BURST. */
  readonly defaults: RateLimitPolicy;
  readonly metrics: Pick<Metrics, 'rateLimited' | 'rateLimitFallback'>;
  readonly logger: Logger;
  /** Where what the shared store calls the outage, in the log's `outage` field: `redis` or `database`. */
  readonly storeName: string;
}

export function createRateLimits(deps: RateLimitsDeps) {
  const fallback = memoryBuckets();
  const outage = createOutageLog(deps.logger, {
    dependency: deps.storeName,
    down: `the rate limits' shared store (${deps.storeName}) does not answer: each API process limits on its own`,
    up: `the rate limits' shared store (${deps.storeName}) answers again`,
  });
  return {
    /** The limit that applies to `client`: its own, or the installation's default. */
    policyOf(client: Pick<LimitedClient, 'rateLimit'>): RateLimitPolicy {
      return client.rateLimit ?? deps.defaults;
    },

    /** Counts one request of `client`: whether it may go on, and what it is told. */
    async take(client: LimitedClient): Promise<RateLimitAnswer> {
      const policy = client.rateLimit ?? deps.defaults;
      const nowMs = deps.clock.now().getTime();
      let taken: BucketTake;
      try {
        taken = await deps.buckets.take(client.id, nowMs, policy);
        if (outage.ongoing) outage.recovered();
      } catch (error) {
        outage.failed({ err: { message: (error as Error).message } });
        deps.metrics.rateLimitFallback();
        taken = fallback.take(client.id, nowMs, policy);
      }
      const decision = decisionOf(taken, nowMs, policy);
      if (!decision.allowed) deps.metrics.rateLimited(client.kind);
      return { policy, decision };
    },
  };
}

export type RateLimits = ReturnType<typeof createRateLimits>;

/** What the operator asks for: a limit of the client's own, or the installation's default again. */
export type LimitChange = { readonly perSecond: number; readonly burst: number } | 'default';

/** The fields of a limit outside RATE_LIMIT_BOUNDS, named as the operator typed them. */
export function limitProblems(limit: RateLimitPolicy): FieldError[] {
  const problems: FieldError[] = [];
  const { perSecond, burst } = RATE_LIMIT_BOUNDS;
  if (!Number.isFinite(limit.perSecond) || limit.perSecond < perSecond.min || limit.perSecond > perSecond.max)
    problems.push({
      path: 'per-second',
      message: `must be a number from ${perSecond.min} to ${perSecond.max}`,
    });
  if (!Number.isInteger(limit.burst) || limit.burst < burst.min || limit.burst > burst.max)
    problems.push({ path: 'burst', message: `must be a whole number from ${burst.min} to ${burst.max}` });
  return problems;
}

/**
 * The operator's changes of a client's limit (`refhub keys limit`, `refhub clients limit`): stored on
 * the credential's row, and audited as refhub's own action (`rate-limit.set` or `rate-limit.default`)
 * naming the credential changed. An API process reads the new limit the next time it looks the
 * credential up: at once for access tokens, within KEY_LOOKUP_REUSE_MS for API keys.
 */
export function createRateLimitSettings(deps: {
  readonly stores: Pick<Stores, 'transaction'>;
  readonly clock: Clock;
}) {
  const set = async (
    kind: ApiKeyRecord['kind'],
    idOrPrefix: string,
    change: LimitChange,
  ): Promise<ApiKeyRecord> => {
    const limit = change === 'default' ? null : change;
    if (limit !== null) {
      const problems = limitProblems(limit);
      if (problems.length > 0) throw new ValidationError(problems);
    }
    return deps.stores.transaction(async (tx) => {
      const [match, ...others] = await tx.apiKeys.findActiveByIdOrPrefix(idOrPrefix, kind);
      const what = kind === 'client' ? 'client' : 'API key';
      if (!match) throw new NotFoundError(`No active ${what} has the ID or prefix ${idOrPrefix}.`);
      if (others.length > 0) {
        throw new ValidationError([
          { path: 'id', message: `prefix ${idOrPrefix} matches several keys; use the ID` },
        ]);
      }
      await tx.apiKeys.setRateLimit(match.id, limit);
      const actor = {
        requestId: `cli-${uuidv7()}`,
        apiKeyId: match.id,
        system: REFHUB_SYSTEM,
        institution: null,
        requesterIdentifier: null,
      };
      const action = limit === null ? 'rate-limit.default' : 'rate-limit.set';
      await tx.audit.record(auditEventOf(actor, action, [], deps.clock.now()));
      return { ...match, rateLimit: limit };
    });
  };
  return {
    /** Sets an API key's own limit, or gives it the default again. */
    setForKey: (idOrPrefix: string, change: LimitChange) => set('api-key', idOrPrefix, change),
    /** Sets a signed-credentials client's own limit, or gives it the default again. */
    setForClient: (id: string, change: LimitChange) => set('client', id, change),
  };
}

export type RateLimitSettings = ReturnType<typeof createRateLimitSettings>;
