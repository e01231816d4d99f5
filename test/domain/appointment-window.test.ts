// How far from now an appointment may be (docs/api.md, "Bad input"). Pure: no database, so it runs once.
import { describe, expect, it } from 'vitest';
import { APPOINTMENT_WINDOW_YEARS, isWithinAppointmentWindow } from '../../src/domain/appointment-window.ts';

describe('the appointment window', () => {
  it(`is ${APPOINTMENT_WINDOW_YEARS} calendar years either side of now, both ends included`, () => {
    const now = new Date('2026-11-23T08:00:00.000Z');
    const within = (iso: string) => isWithinAppointmentWindow(new Date(iso), now);
    expect(within('2026-11-23T08:00:00.000Z')).toBe(true);
    expect(within('2031-11-23T08:00:00.000Z')).toBe(true);
    expect(within('2031-11-23T08:00:00.001Z')).toBe(false);
    expect(within('2021-11-23T08:00:00.000Z')).toBe(true);
    expect(within('2021-11-23T07:59:59.999Z')).toBe(false);
  });

  it('counts from a leap day the way the calendar does, and refuses an instant Date cannot hold', () => {
    const leapDay = new Date('2028-02-29T12:00:00.000Z');
    expect(isWithinAppointmentWindow(new Date('2033-03-01T12:00:00.000Z'), leapDay)).toBe(true);
    expect(isWithinAppointmentWindow(new Date('2033-03-01T12:00:00.001Z'), leapDay)).toBe(false);
    expect(isWithinAppointmentWindow(new Date('not a date'), leapDay)).toBe(false);
  });
});
