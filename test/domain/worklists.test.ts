// A referral's triage is due at the end of its service level's last working day in the clinic's zone,
// weekends and public holidays left out; the level is its priority's, or the offering's shortest or
// longest for a priority the offering gives none.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { displayTimeIn } from '../../src/domain/display-time.ts';
import {
  isTriageOverdue,
  triageDueAt,
  triageWorkingDays,
  WORKLIST_NAMES,
  WORKLISTS,
} from '../../src/domain/worklists.ts';

const SGT = displayTimeIn('Asia/Singapore');
const LONDON = displayTimeIn('Europe/London');
const NONE = new Set<string>();
const ROUTINE = { code: 'routine', display: 'Routine', fhirPriority: 'routine' } as const;
const URGENT = { code: 'urgent', display: 'Urgent', fhirPriority: 'urgent' } as const;
const TWW = { code: 'two-week-wait', display: 'Two-week wait', fhirPriority: 'asap' } as const;

describe('triage due time', () => {
  it('counts working days after the day of submission and ends at the following midnight', () => {
    // Tue 1 Dec 2026, 15:00 SGT: two working days end with Thursday.
    expect(triageDueAt(new Date('2026-12-01T07:00:00Z'), 2, NONE, SGT).toISOString()).toBe(
      '2026-12-03T16:00:00.000Z',
    );
    // Fri 4 Dec 2026, 23:30 SGT (15:30 UTC, still Friday there): one working day is Monday.
    expect(triageDueAt(new Date('2026-12-04T15:30:00Z'), 1, NONE, SGT).toISOString()).toBe(
      '2026-12-07T16:00:00.000Z',
    );
    // Sat 5 Dec 2026, 00:30 SGT is Friday 16:30 in UTC: the clinic's day decides, so Monday again.
    expect(triageDueAt(new Date('2026-12-04T16:30:00Z'), 1, NONE, SGT).toISOString()).toBe(
      '2026-12-07T16:00:00.000Z',
    );
  });

  it('leaves out the public holidays', () => {
    // Thu 24 Dec 2026 with Christmas on Friday: one working day is Monday 28 Dec.
    const christmas = new Set(['2026-12-25']);
    expect(triageDueAt(new Date('2026-12-24T02:00:00Z'), 1, christmas, SGT).toISOString()).toBe(
      '2026-12-28T16:00:00.000Z',
    );
  });

  it("ends at the clinic's midnight across a change of its offset", () => {
    // Fri 23 Oct 2026 in London (BST); Monday 26 Oct is GMT, so its end is midnight GMT.
    expect(triageDueAt(new Date('2026-10-23T09:00:00Z'), 1, NONE, LONDON).toISOString()).toBe(
      '2026-10-27T00:00:00.000Z',
    );
  });

  it('refuses a level outside 1 to 365 working days', () => {
    expect(() => triageDueAt(new Date(), 0, NONE, SGT)).toThrow(RangeError);
    expect(() => triageDueAt(new Date(), 366, NONE, SGT)).toThrow(RangeError);
  });

  it('matches a count of the working days between, done day by day', () => {
    const day = 86_400_000;
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('2026-01-01T00:00:00Z'),
          max: new Date('2028-12-31T00:00:00Z'),
          noInvalidDate: true,
        }),
        fc.integer({ min: 1, max: 30 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 120 }), { maxLength: 15 }),
        (submitted, workingDays, holidayOffsets) => {
          // Singapore has no daylight saving: a day there is UTC+8 throughout.
          const local = (instant: Date) => new Date(instant.getTime() + 8 * 3_600_000);
          const dateOf = (instant: Date) => local(instant).toISOString().slice(0, 10);
          const holidays = new Set(
            holidayOffsets.map((n) => dateOf(new Date(submitted.getTime() + n * day))),
          );
          const due = triageDueAt(submitted, workingDays, holidays, SGT);
          // The due time is a midnight in the clinic's zone.
          expect(local(due).toISOString().slice(11)).toBe('00:00:00.000Z');
          // The days from the day after submission up to the due time hold exactly `workingDays`
          // working days, and the last of them is one.
          const working = (date: string) => {
            const weekday = new Date(`${date}T00:00:00Z`).getUTCDay();
            return weekday !== 0 && weekday !== 6 && !holidays.has(date);
          };
          const days: string[] = [];
          for (let t = local(submitted).getTime() + day; ; t += day) {
            const date = new Date(t).toISOString().slice(0, 10);
            if (date >= local(due).toISOString().slice(0, 10)) break;
            days.push(date);
          }
          expect(days.filter(working)).toHaveLength(workingDays);
          expect(working(days.at(-1) ?? '')).toBe(true);
        },
      ),
    );
  });
});

describe('service levels', () => {
  const levels = { routine: 10, urgent: 2, 'two-week-wait': 1 };

  it("gives a referral its priority's level", () => {
    expect(triageWorkingDays(levels, { priority: TWW, isUrgent: true })).toBe(1);
    expect(triageWorkingDays(levels, { priority: ROUTINE, isUrgent: false })).toBe(10);
  });

  it("gives a priority without a level, or no priority, the offering's shortest when urgent, else its longest", () => {
    expect(triageWorkingDays({ routine: 10, 'two-week-wait': 1 }, { priority: URGENT, isUrgent: true })).toBe(
      1,
    );
    expect(triageWorkingDays(levels, { priority: null, isUrgent: true })).toBe(1);
    expect(triageWorkingDays(levels, { priority: null, isUrgent: false })).toBe(10);
  });

  it('gives no level where the offering has none', () => {
    expect(triageWorkingDays(null, { priority: URGENT, isUrgent: true })).toBeNull();
    expect(triageWorkingDays({}, { priority: URGENT, isUrgent: true })).toBeNull();
  });
});

describe('worklists', () => {
  it('is overdue only while it waits for acceptance past its due time', () => {
    const due = new Date('2026-12-03T16:00:00Z');
    const at = new Date('2026-12-03T16:00:00Z');
    expect(isTriageOverdue({ status: 'pending-acceptance', triageDueAt: due }, at)).toBe(true);
    expect(
      isTriageOverdue({ status: 'pending-acceptance', triageDueAt: due }, new Date(at.getTime() - 1)),
    ).toBe(false);
    expect(isTriageOverdue({ status: 'accepted', triageDueAt: due }, at)).toBe(false);
    expect(isTriageOverdue({ status: 'pending-acceptance', triageDueAt: null }, at)).toBe(false);
  });

  it('names six lists, three for each side', () => {
    expect(WORKLIST_NAMES).toEqual([
      'to-triage',
      'overdue',
      'to-book',
      'needs-action',
      'outcomes-to-read',
      'rejected',
    ]);
    expect(WORKLIST_NAMES.filter((name) => WORKLISTS[name].side === 'provider')).toHaveLength(3);
  });
});
