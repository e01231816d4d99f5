// Times as people read them: in one display zone (DISPLAY_TIME_ZONE), with the zone named, like
// "Tue 1 Dec 2026, 09:30 SGT". The API speaks ISO 8601 UTC; only what a person reads is local.
//
// The EHR form is hashed by the forwarder, so its text must not depend on the machine's locale or on
// the words of its ICU data. The words here (weekdays, months, zone abbreviations) are our own. Intl is
// asked only for the numeric wall-clock parts of an instant in a zone, which is what the tz rules
// decide. A zone whose current offset is not in our table of abbreviations is named by its offset
// ("UTC+05:45"), so a wrong abbreviation is never shown, even for a historic offset.

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;

export const DEFAULT_DISPLAY_TIME_ZONE = 'Asia/Singapore';

/**
 * Abbreviations we own, by zone and by UTC offset in minutes. Only offsets listed here get a name; any
 * other offset of the zone (a historic one, or a rule change) falls back to "UTC±hh:mm".
 */
const ZONE_ABBREVIATIONS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'Asia/Singapore': { '480': 'SGT' },
  Singapore: { '480': 'SGT' },
  UTC: { '0': 'UTC' },
  'Etc/UTC': { '0': 'UTC' },
  'Asia/Kuala_Lumpur': { '480': 'MYT' },
  'Asia/Jakarta': { '420': 'WIB' },
  'Asia/Hong_Kong': { '480': 'HKT' },
  'Asia/Tokyo': { '540': 'JST' },
  'Asia/Kolkata': { '330': 'IST' },
  'Australia/Perth': { '480': 'AWST' },
  'Australia/Sydney': { '600': 'AEST', '660': 'AEDT' },
  'Europe/London': { '0': 'GMT', '60': 'BST' },
  'America/New_York': { '-300': 'EST', '-240': 'EDT' },
};

/** A day in the calendar, without a time or a zone (a date of birth). */
export interface CalendarDate {
  readonly year: number;
  /** 1–12 */
  readonly month: number;
  /** 1–31 */
  readonly day: number;
}

export interface DisplayTime {
  /** The IANA zone times are shown in. */
  readonly timeZone: string;
  /**
   * "Tue 1 Dec 2026, 09:30 SGT": the one way a time is written wherever a person reads it (the web
   * pages and the EHR form, the ops pages, the command line's listings). A string that is not an ISO
   * 8601 UTC instant is returned as given, so an odd stored value is visible rather than hidden.
   */
  dateTime(instant: Date | string): string;
  /** "20:06 SGT", for a time within the next hours (when a session ends). */
  time(instant: Date | string): string;
  /** The day the instant falls on in the zone; undefined for a value that is not an instant. */
  calendarDate(instant: Date | string): CalendarDate | undefined;
  /** The instant the day starts in the zone: its midnight. */
  startOfDay(date: CalendarDate): Date;
}

/**
 * The locale a browser formats times in where refhub cannot format them itself: the queue dashboard
 * (bull-board), whose page formats job times with the browser's Intl.DateTimeFormat. British English
 * writes the day before the month and the short month names, as `dateTime` does.
 */
export const BROWSER_TIME_LOCALE = 'en-GB';

/**
 * The browser's nearest to `dateTime` in `timeZone`, as Intl.DateTimeFormat options: the same zone,
 * weekday, day, short month, year, 24-hour minutes and the zone named. Only the words are the
 * browser's: it writes "Thu, 26 Nov 2026, 03:30 GMT+8" where refhub writes "Thu 26 Nov 2026, 03:30 SGT"
 * (a comma after the weekday, and its own name for the zone: "UTC", "BST" and "GMT+8" where refhub
 * has "UTC", "BST" and "SGT").
 */
export function browserDateTimeFormat(timeZone: string): Intl.DateTimeFormatOptions {
  if (!isDisplayTimeZone(timeZone)) throw new RangeError(`Not an IANA time zone: ${timeZone}`);
  return {
    timeZone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  };
}

/** Names that look like IANA zones (`Area/Location`, `UTC`); Intl alone would also take "+08:00". */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

/** Whether `name` is an IANA time zone this runtime knows. */
export function isDisplayTimeZone(name: string): boolean {
  if (!ZONE_NAME.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?Z$/;

function instantOf(value: Date | string): Date | undefined {
  if (typeof value === 'string' && !ISO_INSTANT.test(value)) return undefined;
  const date = typeof value === 'string' ? new Date(value) : value;
  return Number.isNaN(date.getTime()) ? undefined : date;
}

const two = (n: number): string => String(n).padStart(2, '0');

interface WallClock extends CalendarDate {
  readonly hour: number;
  readonly minute: number;
  /** Minutes east of UTC at this instant. */
  readonly offsetMinutes: number;
}

/** "UTC+08:00", "UTC-03:30": the zone named by its offset. */
export function offsetName(offsetMinutes: number): string {
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `UTC${sign}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
}

export function displayTimeIn(timeZone: string): DisplayTime {
  if (!isDisplayTimeZone(timeZone)) throw new RangeError(`Not an IANA time zone: ${timeZone}`);
  // Numbers only: the locale and options below make every part plain ASCII digits.
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    numberingSystem: 'latn',
    calendar: 'gregory',
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  // By the name as configured, then as the runtime spells it ("utc" is "UTC").
  const abbreviations =
    ZONE_ABBREVIATIONS[timeZone] ?? ZONE_ABBREVIATIONS[format.resolvedOptions().timeZone] ?? {};

  function wallClock(instant: Date): WallClock | undefined {
    const parts: Partial<Record<Intl.DateTimeFormatPartTypes, number>> = {};
    for (const part of format.formatToParts(instant)) {
      if (part.type !== 'literal') parts[part.type] = Number(part.value);
    }
    const { year, month, day, minute, second } = parts;
    // Some ICU versions write midnight as hour 24 even under h23.
    const hour = parts.hour === 24 ? 0 : parts.hour;
    if (
      year === undefined ||
      month === undefined ||
      day === undefined ||
      hour === undefined ||
      minute === undefined ||
      second === undefined ||
      [year, month, day, hour, minute, second].some((n) => !Number.isInteger(n))
    ) {
      return undefined;
    }
    const wholeSecond = Math.floor(instant.getTime() / 1000) * 1000;
    // setUTCFullYear, not Date.UTC, which reads years 0–99 as 1900–1999.
    const asUtc = new Date(0);
    asUtc.setUTCFullYear(year, month - 1, day);
    asUtc.setUTCHours(hour, minute, second);
    return {
      year,
      month,
      day,
      hour,
      minute,
      offsetMinutes: Math.round((asUtc.getTime() - wholeSecond) / 60_000),
    };
  }

  const zoneName = (offsetMinutes: number): string =>
    abbreviations[String(offsetMinutes)] ?? offsetName(offsetMinutes);

  function shown(value: Date | string, write: (clock: WallClock) => string): string {
    const instant = instantOf(value);
    const clock = instant === undefined ? undefined : wallClock(instant);
    if (clock === undefined) return typeof value === 'string' ? value : 'Invalid date';
    return write(clock);
  }

  return {
    timeZone,
    dateTime: (value) =>
      shown(
        value,
        (c) =>
          `${weekdayOf(c)} ${formatCalendarDate(c)}, ${two(c.hour)}:${two(c.minute)} ${zoneName(c.offsetMinutes)}`,
      ),
    time: (value) => shown(value, (c) => `${two(c.hour)}:${two(c.minute)} ${zoneName(c.offsetMinutes)}`),
    calendarDate: (value) => {
      const instant = instantOf(value);
      const clock = instant === undefined ? undefined : wallClock(instant);
      return clock === undefined ? undefined : { year: clock.year, month: clock.month, day: clock.day };
    },
    startOfDay: ({ year, month, day }) => {
      // Midnight as if the zone were UTC, moved by the zone's offset there; and again by the offset at
      // the instant found, which differs when the day starts on the other side of a change of offset.
      const asUtc = new Date(0);
      asUtc.setUTCFullYear(year, month - 1, day);
      let instant = asUtc;
      for (let i = 0; i < 2; i += 1) {
        const offset = wallClock(instant)?.offsetMinutes ?? 0;
        instant = new Date(asUtc.getTime() - offset * 60_000);
      }
      return instant;
    },
  };
}

function weekdayOf({ year, month, day }: CalendarDate): string {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return WEEKDAYS[date.getUTCDay()] ?? '';
}

/** "29 Feb 1960". */
export function formatCalendarDate({ year, month, day }: CalendarDate): string {
  return `${day} ${MONTHS[month - 1] ?? ''} ${year}`;
}

/** A real `YYYY-MM-DD` date, or undefined. */
export function parseCalendarDate(value: string): CalendarDate | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (match === null) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  const real =
    date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
  return real ? { year, month, day } : undefined;
}

/**
 * Whole years from `birth` to `on`. Someone born on 29 February is a year older on 1 March in a
 * year without one. Undefined when `on` is before `birth`.
 */
export function ageOn(birth: CalendarDate, on: CalendarDate): number | undefined {
  const beforeBirthday = on.month < birth.month || (on.month === birth.month && on.day < birth.day);
  const age = on.year - birth.year - (beforeBirthday ? 1 : 0);
  return age < 0 ? undefined : age;
}

/**
 * A date of birth as people read it, with the age on the day of `at` in the display zone:
 * "29 Feb 1960 (age 66)". A value that is not a real date is returned as given.
 */
export function dateOfBirthText(dob: string, at: Date | string, display: DisplayTime): string {
  const birth = parseCalendarDate(dob);
  if (birth === undefined) return dob;
  const on = display.calendarDate(at);
  const age = on === undefined ? undefined : ageOn(birth, on);
  return age === undefined ? formatCalendarDate(birth) : `${formatCalendarDate(birth)} (age ${age})`;
}
