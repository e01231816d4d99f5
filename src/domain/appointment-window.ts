// When an appointment may be: within a few years of now, either way. Providers record appointments
// ahead and report outcomes after; an instant decades away is a typing or system error, and
// refusing it keeps every stored instant one that clients, PostgreSQL and `Date` all read alike.
export const APPOINTMENT_WINDOW_YEARS = 5;

function yearsFrom(now: Date, years: number): number {
  const at = new Date(now.getTime());
  at.setUTCFullYear(at.getUTCFullYear() + years);
  return at.getTime();
}

/** Whether `startAt` lies within APPOINTMENT_WINDOW_YEARS calendar years before or after `now`. */
export function isWithinAppointmentWindow(startAt: Date, now: Date): boolean {
  const t = startAt.getTime();
  return t >= yearsFrom(now, -APPOINTMENT_WINDOW_YEARS) && t <= yearsFrom(now, APPOINTMENT_WINDOW_YEARS);
}
