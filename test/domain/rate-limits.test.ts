// The rate-limit algorithm (GCRA) and what a client is told about it, on a clock the test sets: a
// sustained rate with a burst, the RateLimit fields of draft-ietf-httpapi-ratelimit-headers-11, and
// Retry-After.
import { describe, expect, it } from 'vitest';
import {
  decisionOf,
  memoryBuckets,
  rateLimitHeaders,
  takeFrom,
  type RateLimitPolicy,
} from '../../src/domain/rate-limits.ts';

const START = Date.parse('2026-11-29T10:00:00Z');
const NHS: RateLimitPolicy = { perSecond: 10, burst: 50 };

describe('rate limits (GCRA)', () => {
  it('lets a full burst through at once, then refuses, and tells the client so', () => {
    const buckets = memoryBuckets();
    const told = [];
    for (let i = 0; i < NHS.burst; i++) {
      const take = buckets.take('client', START, NHS);
      expect(take.allowed).toBe(true);
      told.push(decisionOf(take, START, NHS));
    }
    expect(told[0]).toEqual({ allowed: true, remaining: 49, resetSeconds: 1, retryAfterSeconds: undefined });
    expect(told[49]).toEqual({ allowed: true, remaining: 0, resetSeconds: 5, retryAfterSeconds: undefined });
    const refused = buckets.take('client', START, NHS);
    expect(refused.allowed).toBe(false);
    expect(decisionOf(refused, START, NHS)).toEqual({
      allowed: false,
      remaining: 0,
      resetSeconds: 1,
      retryAfterSeconds: 1,
    });
  });

  it('earns requests back at the sustained rate: one every 100 ms at 10 a second', () => {
    const buckets = memoryBuckets();
    for (let i = 0; i < NHS.burst; i++) buckets.take('client', START, NHS);
    expect(buckets.take('client', START + 99, NHS).allowed).toBe(false);
    expect(buckets.take('client', START + 100, NHS).allowed).toBe(true);
    expect(buckets.take('client', START + 100, NHS).allowed).toBe(false);
    // Sent at exactly the rate, a client is never refused.
    for (let i = 2; i < 200; i++) expect(buckets.take('client', START + i * 100, NHS).allowed).toBe(true);
  });

  it('a refused request moves nothing: waiting Retry-After is enough', () => {
    const slow: RateLimitPolicy = { perSecond: 0.5, burst: 2 };
    const buckets = memoryBuckets();
    buckets.take('client', START, slow);
    buckets.take('client', START, slow);
    let refused = buckets.take('client', START, slow);
    for (let i = 0; i < 5; i++) refused = buckets.take('client', START + 500, slow);
    const decision = decisionOf(refused, START + 500, slow);
    // One request every 2 seconds: the next is due at START + 2000, 1.5 s later, so 2 whole seconds.
    expect(decision.retryAfterSeconds).toBe(2);
    expect(buckets.take('client', START + 500 + 1_499, slow).allowed).toBe(false);
    expect(buckets.take('client', START + 2_000, slow).allowed).toBe(true);
  });

  it('keeps clients apart', () => {
    const buckets = memoryBuckets();
    const one: RateLimitPolicy = { perSecond: 1, burst: 1 };
    expect(buckets.take('a', START, one).allowed).toBe(true);
    expect(buckets.take('a', START, one).allowed).toBe(false);
    expect(buckets.take('b', START, one).allowed).toBe(true);
  });

  it('a bucket not stored is full, and a TAT long past is the same as none', () => {
    expect(takeFrom(undefined, START, NHS)).toEqual({ allowed: true, tatMs: START + 100 });
    expect(takeFrom(START - 60_000, START, NHS)).toEqual({ allowed: true, tatMs: START + 100 });
  });

  it('a TAT further ahead than a burst can leave it (a clock set back) is read as a full bucket', () => {
    const buckets = memoryBuckets();
    const later = START + 90 * 86_400_000;
    for (let n = 0; n < 50; n++) expect(buckets.take('k', later, NHS).allowed).toBe(true);
    expect(buckets.take('k', later, NHS).allowed).toBe(false);
    expect(buckets.take('k', START, NHS)).toEqual({ allowed: true, tatMs: START + 100 });
    // A TAT a whole burst ahead is a state a request can leave: it is kept, and refuses.
    expect(takeFrom(START + 5_000, START, NHS)).toEqual({ allowed: false, tatMs: START + 5_000 });
  });

  it('counts a rate that is not a whole number of milliseconds without losing a request', () => {
    const thirds: RateLimitPolicy = { perSecond: 3, burst: 3 };
    const buckets = memoryBuckets();
    const decisions = [0, 1, 2].map(() => decisionOf(buckets.take('c', START, thirds), START, thirds));
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0]);
    expect(buckets.take('c', START, thirds).allowed).toBe(false);
  });

  it('says the policy and the service limit in the draft syntax', () => {
    const buckets = memoryBuckets();
    const take = buckets.take('client', START, NHS);
    expect(rateLimitHeaders(NHS, decisionOf(take, START, NHS))).toEqual({
      'RateLimit-Policy': '"default";q=50;w=5',
      RateLimit: '"default";r=49;t=1',
    });
    // A window shorter than a second is said as one second: `w` is a whole number above 0.
    const fast: RateLimitPolicy = { perSecond: 100, burst: 10 };
    expect(rateLimitHeaders(fast, decisionOf(takeFrom(undefined, START, fast), START, fast))).toEqual({
      'RateLimit-Policy': '"default";q=10;w=1',
      RateLimit: '"default";r=9;t=1',
    });
  });

  it('forgets the buckets that are full first when it holds as many clients as it may', () => {
    const buckets = memoryBuckets(2);
    const one: RateLimitPolicy = { perSecond: 1, burst: 1 };
    buckets.take('a', START, one);
    buckets.take('b', START + 5_000, one);
    // a's bucket is full again by now; b's is not: a goes, and b keeps its debt.
    buckets.take('c', START + 5_500, one);
    expect(buckets.take('b', START + 5_500, one).allowed).toBe(false);
  });
});
