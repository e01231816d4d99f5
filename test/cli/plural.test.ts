// Every count a command prints goes through `plural`: "1 forward", never "1 forwards" or "forward(s)".
import { describe, expect, it } from 'vitest';
import { plural } from '../../src/cli/plural.ts';

describe('plural', () => {
  it('puts the noun in the singular for one, and in the plural for none and for many', () => {
    expect(plural(1, 'failed forward')).toBe('1 failed forward');
    expect(plural(0, 'failed forward')).toBe('0 failed forwards');
    expect(plural(2, 'check')).toBe('2 checks');
    expect(plural(1500, 'event')).toBe('1500 events');
  });

  it('takes an irregular plural', () => {
    expect(plural(1, 'delivery', 'deliveries')).toBe('1 delivery');
    expect(plural(3, 'delivery', 'deliveries')).toBe('3 deliveries');
  });
});
