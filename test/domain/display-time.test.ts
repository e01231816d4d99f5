// Times as people read them: in the display zone, named by our own abbreviation or by the offset,
// across daylight-saving changes, with dates of birth and ages counted on the referral's own day.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ageOn,
  dateOfBirthText,
  displayTimeIn,
  formatCalendarDate,
  isDisplayTimeZone,
  offsetName,
  parseCalendarDate,
} from '../../src/domain/display-time.ts';

const singapore = displayTimeIn('Asia/Singapore');
const london = displayTimeIn('Europe/London');

describe('displayTimeIn', () => {
  it('shows an instant as the wall clock in the zone, with our own abbreviation', () => {
    expect(singapore.dateTime('2026-12-01T01:30:00.000Z')).toBe('Tue 1 Dec 2026, 09:30 SGT');
    expect(singapore.dateTime(new Date('2026-12-01T01:30:00.000Z'))).toBe('Tue 1 Dec 2026, 09:30 SGT');
    expect(singapore.time('2026-12-01T12:06:59.999Z')).toBe('20:06 SGT');
    // Past midnight in the zone, the day moves on with the clock.
    expect(singapore.dateTime('2026-12-31T16:00:00.000Z')).toBe('Fri 1 Jan 2027, 00:00 SGT');
    expect(displayTimeIn('UTC').dateTime('2026-12-01T01:30:00.000Z')).toBe('Tue 1 Dec 2026, 01:30 UTC');
  });

  it('follows daylight saving in Europe/London: GMT in winter, BST in summer', () => {
    expect(london.dateTime('2026-03-29T00:59:00.000Z')).toBe('Sun 29 Mar 2026, 00:59 GMT');
    expect(london.dateTime('2026-03-29T01:00:00.000Z')).toBe('Sun 29 Mar 2026, 02:00 BST');
    // The hour that happens twice in October reads twice, told apart by its zone.
    expect(london.dateTime('2026-10-25T00:30:00.000Z')).toBe('Sun 25 Oct 2026, 01:30 BST');
    expect(london.dateTime('2026-10-25T01:30:00.000Z')).toBe('Sun 25 Oct 2026, 01:30 GMT');
    expect(displayTimeIn('America/New_York').time('2026-07-01T16:00:00.000Z')).toBe('12:00 EDT');
  });

  it('names a zone not in its table by its offset', () => {
    expect(displayTimeIn('Asia/Kathmandu').dateTime('2026-06-01T00:00:00.000Z')).toBe(
      'Mon 1 Jun 2026, 05:45 UTC+05:45',
    );
    expect(displayTimeIn('America/St_Johns').dateTime('2026-01-01T00:00:00.000Z')).toBe(
      'Wed 31 Dec 2025, 20:30 UTC-03:30',
    );
    expect(displayTimeIn('Etc/GMT+12').time('2026-01-01T00:00:00.000Z')).toBe('12:00 UTC-12:00');
    expect(offsetName(0)).toBe('UTC+00:00');
    expect(offsetName(-570)).toBe('UTC-09:30');
  });

  it('never gives a known zone its abbreviation for an offset the abbreviation does not mean', () => {
    // Singapore kept UTC+07:30 until the end of 1981: that was not SGT as written today.
    expect(singapore.dateTime('1981-12-31T15:00:00.000Z')).toBe('Thu 31 Dec 1981, 22:30 UTC+07:30');
    expect(singapore.dateTime('1981-12-31T16:30:00.000Z')).toBe('Fri 1 Jan 1982, 00:30 SGT');
  });

  it('shows a value that is not an ISO 8601 UTC instant as given', () => {
    for (const odd of ['2026-06-04T11:15:00+08:00', 'yesterday', '', '2026-13-45T99:99:00Z']) {
      expect(singapore.dateTime(odd)).toBe(odd);
      expect(singapore.calendarDate(odd)).toBeUndefined();
    }
  });

  it('writes the same words whatever instant, and only ASCII digits, letters and our punctuation', () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('1900-01-01T00:00:00Z'),
          max: new Date('2200-01-01T00:00:00Z'),
          noInvalidDate: true,
        }),
        fc.constantFrom('Asia/Singapore', 'Europe/London', 'Asia/Kathmandu', 'America/New_York'),
        (date, zone) => {
          const shown = displayTimeIn(zone).dateTime(date);
          expect(shown).toMatch(
            /^(Sun|Mon|Tue|Wed|Thu|Fri|Sat) \d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}, \d{2}:\d{2} ([A-Z]{3,4}|UTC[+-]\d{2}:\d{2})$/,
          );
          expect(displayTimeIn(zone).dateTime(date)).toBe(shown);
        },
      ),
    );
  });

  it('refuses names that are not IANA zones', () => {
    expect(() => displayTimeIn('Asia/Atlantis')).toThrow(RangeError);
    for (const name of ['SGT', '+08:00', 'Asia/Atlantis', '', 'Asia/../etc']) {
      expect(isDisplayTimeZone(name), name).toBe(false);
    }
    for (const name of ['Asia/Singapore', 'UTC', 'America/Argentina/Buenos_Aires', 'Etc/GMT-8']) {
      expect(isDisplayTimeZone(name), name).toBe(true);
    }
  });
});

describe('dates of birth', () => {
  it('reads only real YYYY-MM-DD dates', () => {
    expect(parseCalendarDate('1960-02-29')).toEqual({ year: 1960, month: 2, day: 29 });
    for (const bad of ['1961-02-29', '1960-2-29', '1960-02-30', '29/02/1960', '']) {
      expect(parseCalendarDate(bad), bad).toBeUndefined();
    }
    expect(formatCalendarDate({ year: 1960, month: 2, day: 29 })).toBe('29 Feb 1960');
  });

  it('counts the age in whole years; a 29 February birthday comes on 1 March in other years', () => {
    const leapling = { year: 1960, month: 2, day: 29 };
    expect(ageOn(leapling, { year: 2026, month: 2, day: 28 })).toBe(65);
    expect(ageOn(leapling, { year: 2026, month: 3, day: 1 })).toBe(66);
    expect(ageOn(leapling, { year: 2028, month: 2, day: 29 })).toBe(68);
    expect(ageOn(leapling, { year: 1960, month: 2, day: 29 })).toBe(0);
    expect(ageOn(leapling, { year: 1959, month: 12, day: 31 })).toBeUndefined();
  });

  it('shows the date with the age on the day of the given instant in the display zone', () => {
    expect(dateOfBirthText('1960-02-29', '2026-12-01T01:30:00.000Z', singapore)).toBe('29 Feb 1960 (age 66)');
    // 16:00 UTC on 28 February is already 1 March in Singapore, but not in London.
    expect(dateOfBirthText('1960-02-29', '2026-02-28T16:00:00.000Z', singapore)).toBe('29 Feb 1960 (age 66)');
    expect(dateOfBirthText('1960-02-29', '2026-02-28T16:00:00.000Z', london)).toBe('29 Feb 1960 (age 65)');
    expect(dateOfBirthText('2030-01-01', '2026-02-28T16:00:00.000Z', singapore)).toBe('1 Jan 2030');
    expect(dateOfBirthText('sometime in 1960', '2026-02-28T16:00:00.000Z', singapore)).toBe(
      'sometime in 1960',
    );
  });
});
