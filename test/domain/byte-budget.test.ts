// The byte budget shared by the forward jobs' forms and the API's answers: bytes that must be counted
// whether they fit or not hold the others back until they are given back.
import { describe, expect, it } from 'vitest';
import { createByteBudget } from '../../src/domain/byte-budget.ts';

describe('the byte budget', () => {
  it('counts bytes taken anyway, beyond the limit, and holds the others back until they are given back', async () => {
    const budget = createByteBudget(100);
    const first = budget.tryTake(80);
    expect(first).toBeTypeOf('function');
    const forced = budget.takeAnyway(80);
    expect(budget.held).toBe(160);
    expect(budget.tryTake(1)).toBeUndefined();
    first?.();
    expect(budget.held).toBe(80);
    // 80 held: 30 more would pass the limit, so it waits for the forced bytes.
    let granted = false;
    const waiting = budget.take(30).then((release) => {
      granted = true;
      return release;
    });
    await Promise.resolve();
    expect(granted).toBe(false);
    expect(budget.waiting).toBe(1);
    forced();
    forced(); // giving back twice gives back once
    const release = await waiting;
    expect(budget.held).toBe(30);
    release();
    expect(budget.held).toBe(0);
  });
});
