// One institution's share of a worker process's slots: the cap, giving a slot back once, and the wait
// of a job set aside, which grows with each time it was set aside before and stops at the maximum.
import { describe, expect, it } from 'vitest';
import { FAIR_SHARE } from '../../src/queue/registry.ts';
import { createFairShare, fairShareDelayMs } from '../../src/workers/fair-share.ts';

describe('fair share', () => {
  it('lets an institution run at most its cap at once, and counts each institution apart', () => {
    const share = createFairShare(2);
    const first = share.take('hci:B');
    const second = share.take('hci:B');
    expect(first).toBeTypeOf('function');
    expect(second).toBeTypeOf('function');
    expect(share.take('hci:B')).toBeUndefined();
    expect(share.take('hci:A')).toBeTypeOf('function');
    first?.();
    first?.(); // giving back twice frees one slot, not two
    expect(share.inFlight('hci:B')).toBe(1);
    expect(share.take('hci:B')).toBeTypeOf('function');
    expect(share.take('hci:B')).toBeUndefined();
  });

  it('refuses a cap that is not a positive integer', () => {
    expect(() => createFairShare(0)).toThrow(RangeError);
    expect(() => createFairShare(1.5)).toThrow(RangeError);
  });

  it('waits longer each time a job is set aside again, up to the maximum, with jitter below it', () => {
    const { baseMs, maxMs } = FAIR_SHARE.deferral;
    const top = () => 1 - Number.EPSILON;
    const after = (setAsideBefore: number, attemptsMade = 0) =>
      fairShareDelayMs({ attemptsStarted: attemptsMade + setAsideBefore + 1, attemptsMade }, top);
    expect(after(0)).toBe(baseMs);
    expect(after(1)).toBe(2 * baseMs);
    expect(after(3)).toBe(8 * baseMs);
    expect(after(1_000)).toBe(maxMs);
    // Attempts that ran do not count as times set aside.
    expect(after(0, 4)).toBe(baseMs);
    expect(fairShareDelayMs({ attemptsStarted: 1, attemptsMade: 0 }, () => 0)).toBe(baseMs / 2);
  });
});
