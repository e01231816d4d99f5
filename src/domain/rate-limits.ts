// Rate limits per client (an API key, or the client of signed client credentials): a sustained rate
// with a burst, kept by the Generic Cell Rate Algorithm (GCRA), a token bucket that needs one number
// per client. The number is the bucket's "theoretical arrival time" (TAT): the time at which the
// bucket would be full again if the client sent nothing more. Each request moves it one emission
// interval (1 / rate) later; a request that would move it further than the burst's worth ahead of
// now is refused, and moves nothing. A TAT in the past is a full bucket, so a bucket that is not
// stored is full too: the stores may forget a client whose TAT has passed.
//
// The stores (db/rate-limits.repository.ts in the database, queue/rate-limits.ts in Redis) apply
// `takeFrom` atomically, each in one statement, and return its result; what a client is told about
// it (`decisionOf`, `rateLimitHeaders`) is worked out here, the same for every store. The headers
// follow draft-ietf-httpapi-ratelimit-headers-11: one policy, "default", per client.
//
// Times are epoch milliseconds of the clock the limiter is given, so a test sets them.

/** A client's limit: `perSecond` requests a second sustained, with up to `burst` at once. */
export interface RateLimitPolicy {
  readonly perSecond: number;
  readonly burst: number;
}

/** The bounds of a limit, for the settings and the operator's command alike. */
export const RATE_LIMIT_BOUNDS = {
  perSecond: { min: 0.001, max: 100_000 },
  burst: { min: 1, max: 1_000_000 },
} as const;

/** The installation's default limit: NHS e-Referral's 10 requests a second per application, with a burst. */
export const DEFAULT_RATE_LIMIT: RateLimitPolicy = { perSecond: 10, burst: 50 };

/** The name of the one policy in `RateLimit-Policy` and `RateLimit`. */
export const RATE_LIMIT_POLICY_NAME = 'default';

/** Milliseconds between two requests at the sustained rate: what one request moves the TAT. */
export function emissionIntervalMs(policy: RateLimitPolicy): number {
  return 1000 / policy.perSecond;
}

/** How far ahead of now the TAT may be after a request: the whole burst's worth of intervals. */
export function burstToleranceMs(policy: RateLimitPolicy): number {
  return policy.burst * emissionIntervalMs(policy);
}

/** What a store did with one request: whether it was let through, and the bucket's TAT after it. */
export interface BucketTake {
  readonly allowed: boolean;
  readonly tatMs: number;
}

/**
 * One request against a bucket whose TAT is `tatMs` (undefined: not stored, so full) at `nowMs`. The
 * stores do exactly this, atomically; this is the reference they are tested against and the
 * in-process fallback's own.
 */
export function takeFrom(tatMs: number | undefined, nowMs: number, policy: RateLimitPolicy): BucketTake {
  const tat = tatReadAt(tatMs, nowMs, policy);
  const next = tat + emissionIntervalMs(policy);
  if (next - nowMs <= burstToleranceMs(policy)) return { allowed: true, tatMs: next };
  return { allowed: false, tatMs: tat };
}

/**
 * The TAT a request is judged against: a stored one in the past is a full bucket (now), and so is
 * one more than the burst's worth ahead, which no request let through at `nowMs` can leave. That one
 * was written by a clock ahead of this one (this one before it was set back, or another process's),
 * and says nothing this clock can use: it would otherwise refuse the client until the other clock's
 * time came, for as long as the clock was set back. The API processes keep their clocks within a
 * burst of each other (docs/operations.md, "Limits"); a step beyond it costs one burst, not an outage.
 */
export function tatReadAt(tatMs: number | undefined, nowMs: number, policy: RateLimitPolicy): number {
  if (tatMs === undefined || tatMs < nowMs || tatMs - nowMs > burstToleranceMs(policy)) return nowMs;
  return tatMs;
}

/** What a client is told about a request: the `RateLimit` field's values, and Retry-After when refused. */
export interface RateLimitDecision {
  readonly allowed: boolean;
  /** Requests the client may send at once now (`r`). */
  readonly remaining: number;
  /**
   * Seconds (`t`): when let through, until the whole burst is available again; when refused, until
   * the next request is let through, the same as `retryAfterSeconds`.
   */
  readonly resetSeconds: number;
  /** Whole seconds until the next request is let through, at least 1; only when refused. */
  readonly retryAfterSeconds: number | undefined;
}

// Divisions of milliseconds by an interval that is not a whole number (1000 / 3) land a hair under
// a whole number now and then; this keeps 48.9999999 from counting as 48.
const EPSILON = 1e-6;

/** The decision a client is told, from what the store did at `nowMs`. */
export function decisionOf(take: BucketTake, nowMs: number, policy: RateLimitPolicy): RateLimitDecision {
  const interval = emissionIntervalMs(policy);
  const tolerance = burstToleranceMs(policy);
  const ahead = Math.max(0, take.tatMs - nowMs);
  if (take.allowed) {
    return {
      allowed: true,
      remaining: Math.max(0, Math.floor((tolerance - ahead) / interval + EPSILON)),
      resetSeconds: Math.ceil(ahead / 1000 - EPSILON),
      retryAfterSeconds: undefined,
    };
  }
  // The next request is let through once the TAT is no more than the tolerance less one interval ahead.
  const waitMs = take.tatMs + interval - tolerance - nowMs;
  const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000 - EPSILON));
  return { allowed: false, remaining: 0, resetSeconds: retryAfterSeconds, retryAfterSeconds };
}

/**
 * The `RateLimit-Policy` and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers-11, Structured
 * Field lists of one item): the policy as a quota of `burst` requests (`q`) over the seconds the
 * sustained rate takes to earn them back (`w`, at least 1), and the client's service limit now.
 */
export function rateLimitHeaders(
  policy: RateLimitPolicy,
  decision: RateLimitDecision,
): { readonly 'RateLimit-Policy': string; readonly RateLimit: string } {
  const window = Math.max(1, Math.ceil(policy.burst / policy.perSecond - EPSILON));
  const name = `"${RATE_LIMIT_POLICY_NAME}"`;
  return {
    'RateLimit-Policy': `${name};q=${policy.burst};w=${window}`,
    RateLimit: `${name};r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

/**
 * The buckets kept in this process's memory: the limiter's fallback while the shared store cannot be
 * reached (each process then limits on its own). At most `maxClients` are kept; past that the ones
 * whose TAT is earliest go first (a full bucket is the same as none).
 */
export function memoryBuckets(maxClients = 10_000) {
  const tats = new Map<string, number>();
  return {
    take(client: string, nowMs: number, policy: RateLimitPolicy): BucketTake {
      const take = takeFrom(tats.get(client), nowMs, policy);
      if (!tats.has(client) && tats.size >= maxClients) {
        for (const [other, tat] of tats) if (tat <= nowMs) tats.delete(other);
        // Maps iterate in insertion order: what is left first is the longest kept.
        for (const other of tats.keys()) {
          if (tats.size < maxClients) break;
          tats.delete(other);
        }
      }
      tats.set(client, take.tatMs);
      return take;
    },
  };
}
