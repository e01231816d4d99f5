// The rules the wait times follow as pure code: the threshold clears every figure below it, what is
// stored is held to it again as it is read, days have one decimal, and the web form's hint is the p90
// rounded up to whole days, never below one, and absent without enough data.
import { describe, expect, it } from 'vitest';
import {
  acceptedHint,
  daysOf,
  declinedFigure,
  durationFigure,
  storedFigures,
  windowEndingAt,
} from '../../src/domain/wait-times.ts';

const DAY = 86_400;

describe('wait times', () => {
  it('stores no percentile and no share from fewer referrals than the threshold', () => {
    const computed = {
      offeringId: 'cgh-gastro',
      accepted: { referrals: 9, p50Seconds: 2 * DAY, p90Seconds: 5 * DAY },
      firstAppointment: { referrals: 10, p50Seconds: 9 * DAY, p90Seconds: 20 * DAY },
      decided: 9,
      declined: 3,
    };
    expect(storedFigures(computed, 10)).toEqual({
      accepted: { referrals: 9, p50Seconds: null, p90Seconds: null },
      firstAppointment: { referrals: 10, p50Seconds: 9 * DAY, p90Seconds: 20 * DAY },
      decided: 9,
      declinedShare: null,
    });
    expect(storedFigures({ ...computed, decided: 12 }, 10).declinedShare).toBe(0.25);
  });

  it('answers a stored figure held to the threshold as it is now, in days to one decimal', () => {
    const stored = { referrals: 12, p50Seconds: 1.26 * DAY, p90Seconds: 4.04 * DAY };
    expect(durationFigure(stored, 10)).toEqual({ referrals: 12, enoughData: true, p50Days: 1.3, p90Days: 4 });
    // The setting rose since the figures were computed.
    expect(durationFigure(stored, 20)).toEqual({ referrals: 12, enoughData: false });
    expect(declinedFigure(12, 1 / 3, 10)).toEqual({ referrals: 12, enoughData: true, share: 0.33 });
    expect(declinedFigure(12, null, 10)).toEqual({ referrals: 12, enoughData: false });
    expect(daysOf(DAY / 2)).toBe(0.5);
  });

  it('hints the p90 rounded up to whole days, at least one, and nothing without enough data', () => {
    expect(acceptedHint({ referrals: 10, enoughData: true, p50Days: 1, p90Days: 2.1 })).toBe(
      'Usually accepted within 3 days',
    );
    expect(acceptedHint({ referrals: 10, enoughData: true, p50Days: 0.1, p90Days: 0.2 })).toBe(
      'Usually accepted within 1 day',
    );
    expect(acceptedHint({ referrals: 4, enoughData: false })).toBeUndefined();
  });

  it('ends the window at the time of the computation, whole days back', () => {
    const now = new Date('2031-06-30T04:00:00.000Z');
    expect(windowEndingAt(now, 180)).toEqual({ start: new Date('2031-01-01T04:00:00.000Z'), end: now });
  });
});
