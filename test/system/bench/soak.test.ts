// How the soak judges memory: what rises while the heap and the job retention fill is not growth; what
// still rises over the second half is.
import { describe, expect, it } from 'vitest';
import { soakMemory, type SoakSample } from '../../../bench/scenarios/soak.ts';

/** A sample every 10 s over `seconds`, RSS and Redis memory given as functions of the time. */
function soak(seconds: number, rss: (at: number) => number, redis: (at: number) => number): SoakSample[] {
  return Array.from({ length: seconds / 10 + 1 }, (_, i) => ({
    at: i * 10,
    rssMiB: rss(i * 10),
    redisMiB: redis(i * 10),
  }));
}

describe('the soak’s memory verdict', () => {
  it('holds when memory rises while filling up, then stays flat', () => {
    // As measured: RSS jumps with the load, Redis climbs until the retention of completed jobs is full.
    const samples = soak(
      600,
      (at) => (at === 0 ? 222 : 555),
      (at) => Math.min(2.6 + at * 0.08, 19.2),
    );
    const memory = soakMemory(samples, 600);
    expect(memory.rss).toEqual({ first: 222, half: 555, end: 555 });
    expect(memory.redis.first).toBe(2.6);
    expect(memory.redis.end).toBe(19.2);
    expect(memory.holds).toBe(true);
  });

  it('does not hold when RSS still rises over the second half', () => {
    const samples = soak(
      600,
      (at) => 300 + at * 0.2,
      () => 10,
    );
    const memory = soakMemory(samples, 600);
    expect(memory.rss.half).toBeCloseTo(300 + 0.2 * 325);
    expect(memory.rss.end).toBeCloseTo(300 + 0.2 * 570);
    expect(memory.holds).toBe(false);
  });

  it('does not hold when Redis still rises over the second half', () => {
    const samples = soak(
      600,
      () => 300,
      (at) => 5 + at * 0.05,
    );
    expect(soakMemory(samples, 600).holds).toBe(false);
  });

  it('judges a short soak by fifths of it, and a soak with no samples never holds', () => {
    const short = soak(
      100,
      () => 300,
      () => 10,
    );
    expect(soakMemory(short, 100)).toEqual({
      rss: { first: 300, half: 300, end: 300 },
      redis: { first: 10, half: 10, end: 10 },
      holds: true,
    });
    expect(soakMemory([], 600).holds).toBe(false);
  });
});
