// A reason is taken when its code is in use, names the operation and comes with the comment it needs.
import { describe, expect, it } from 'vitest';
import { checkReason, type ReasonCode } from '../../src/domain/reasons.ts';

const CODES: readonly ReasonCode[] = [
  {
    code: 'wrong-service',
    display: 'Wrong service',
    actions: ['reject', 'redirect'],
    commentRequired: false,
    active: true,
  },
  {
    code: 'other',
    display: 'Another reason',
    actions: ['reject', 'cancel'],
    commentRequired: true,
    active: true,
  },
  { code: 'retired', display: 'Retired', actions: ['reject'], commentRequired: false, active: false },
];

describe('checkReason', () => {
  it('takes a code in use for the operation, with its words as the catalog has them', () => {
    expect(checkReason(CODES, 'redirect', { reasonCode: 'wrong-service', comment: undefined })).toEqual({
      reason: { code: 'wrong-service', display: 'Wrong service' },
      problems: [],
    });
  });

  it('takes no code at all: the comment alone is what requests gave before codes', () => {
    expect(checkReason(CODES, 'reject', { reasonCode: undefined, comment: 'x' })).toEqual({
      reason: undefined,
      problems: [],
    });
  });

  it('refuses an unknown or withdrawn code, a code of another operation and a missing required comment', () => {
    const problem = (action: Parameters<typeof checkReason>[1], reasonCode: string, comment?: string) =>
      checkReason(CODES, action, { reasonCode, comment }).problems;
    expect(problem('reject', 'nope')).toEqual([
      { field: 'reasonCode', message: expect.stringMatching(/not a reason/) as unknown },
    ]);
    expect(problem('reject', 'retired')).toEqual([
      { field: 'reasonCode', message: expect.stringMatching(/not a reason/) as unknown },
    ]);
    expect(problem('cancel', 'wrong-service')).toEqual([
      { field: 'reasonCode', message: 'is a reason for reject, redirect, not for cancel' },
    ]);
    expect(problem('cancel', 'other')).toEqual([
      { field: 'comment', message: 'is required with the reason other' },
    ]);
    expect(problem('cancel', 'other', ' \n ')).toEqual([
      { field: 'comment', message: 'is required with the reason other' },
    ]);
    expect(problem('cancel', 'other', 'Moved to Johor')).toEqual([]);
  });
});
