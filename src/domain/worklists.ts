// Worklists: the named lists a provider triages and books from and a sender follows up from, each a
// fixed definition over the referral's side and status; and the service levels that give each
// referral its triage due time, in working days per priority (catalog `offerings[].triageWithin`),
// weekends and the catalog's public holidays left out, counted in the clinic's zone.
import type { CalendarDate, DisplayTime } from './display-time.ts';
import type { ReferralSummaryView } from './referral-view.ts';
import { isUrgentPriority, type ReferralPriority } from './priorities.ts';
import type { Status } from './statuses.ts';

export interface WorklistDefinition {
  /** Whose list it is: the referrals the institution receives, or those it sends. */
  readonly side: 'sender' | 'provider';
  readonly statuses: readonly Status[];
  /** Only the referrals whose triage is past its due time. */
  readonly overdueOnly: boolean;
  /**
   * `due`: the most pressing first (the earliest triage due time; none last), then the longest waiting.
   * `updated`: the latest change first, as the list has it.
   */
  readonly order: 'due' | 'updated';
  readonly title: string;
}

/** The worklists, in the order they are listed. */
export const WORKLISTS = {
  'to-triage': {
    side: 'provider',
    statuses: ['pending-acceptance'],
    overdueOnly: false,
    order: 'due',
    title: 'Waiting for acceptance',
  },
  overdue: {
    side: 'provider',
    statuses: ['pending-acceptance'],
    overdueOnly: true,
    order: 'due',
    title: 'Waiting for acceptance past their due time',
  },
  'to-book': {
    side: 'provider',
    statuses: ['accepted'],
    overdueOnly: false,
    order: 'due',
    title: 'Accepted, with no appointment booked',
  },
  'needs-action': {
    side: 'sender',
    statuses: ['sender-action-required'],
    overdueOnly: false,
    order: 'updated',
    title: 'Sent back by the provider for the sender to act on',
  },
  'outcomes-to-read': {
    side: 'sender',
    statuses: ['completed'],
    overdueOnly: false,
    order: 'updated',
    title: 'Completed, with an outcome the sender has not acknowledged',
  },
  rejected: {
    side: 'sender',
    statuses: ['rejected'],
    overdueOnly: false,
    order: 'updated',
    title: 'Rejected by the provider',
  },
} as const satisfies Record<string, WorklistDefinition>;

export type WorklistName = keyof typeof WORKLISTS;
export const WORKLIST_NAMES = Object.keys(WORKLISTS) as WorklistName[];

/** A worklist's item: the list's summary, when its triage is due, and whether that has passed. */
export type WorklistItemView = ReferralSummaryView & {
  /** ISO 8601 UTC; absent when its service has no service level (or it was submitted before they were). */
  readonly dueAt?: string;
  readonly overdue: boolean;
};

/** A worklist and how many referrals it has now. */
export interface WorklistCountView {
  readonly name: WorklistName;
  readonly side: 'sender' | 'provider';
  readonly title: string;
  readonly count: number;
}

/** Whether a referral's triage is overdue at `now`: it still waits for acceptance past its due time. */
export function isTriageOverdue(
  referral: { readonly status: Status; readonly triageDueAt: Date | null },
  now: Date,
): boolean {
  return (
    referral.status === 'pending-acceptance' &&
    referral.triageDueAt !== null &&
    referral.triageDueAt.getTime() <= now.getTime()
  );
}

/** An offering's triage service levels: working days by priority code (catalog `triageWithin`). */
export type TriageWithin = Readonly<Record<string, number>>;

/** The most working days a service level may give. */
export const MAX_TRIAGE_WORKING_DAYS = 365;

/**
 * How many working days the provider has to triage a referral: its priority's level; for a priority
 * the offering gives no level, or a referral without a priority (made before priorities), the
 * offering's shortest level when the referral is urgent and its longest when it is not. Null when the
 * offering has no service levels: such a referral has no due time.
 */
export function triageWorkingDays(
  levels: TriageWithin | null,
  referral: { readonly priority: ReferralPriority | null; readonly isUrgent: boolean },
): number | null {
  if (levels === null) return null;
  const days = Object.values(levels);
  if (days.length === 0) return null;
  const own = referral.priority === null ? undefined : levels[referral.priority.code];
  if (own !== undefined) return own;
  const urgent = referral.priority === null ? referral.isUrgent : isUrgentPriority(referral.priority);
  return urgent ? Math.min(...days) : Math.max(...days);
}

/** "2026-12-25": a calendar date as the catalog's holidays spell it. */
export function isoDate({ year, month, day }: CalendarDate): string {
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

function nextDay({ year, month, day }: CalendarDate): CalendarDate {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day + 1);
  return { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() };
}

function isWeekend({ year, month, day }: CalendarDate): boolean {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  const weekday = date.getUTCDay();
  return weekday === 0 || weekday === 6;
}

/**
 * When the triage of a referral submitted at `submittedAt` is due: the end of the `workingDays`-th
 * working day after the day it was submitted, in the clinic's zone (midnight, as the next day starts).
 * A working day is a weekday that is not one of `holidays` ("YYYY-MM-DD"). A referral submitted on
 * Friday with one working day is due at the end of Monday; one submitted on a holiday or at a weekend
 * counts from the next working day all the same, since the day of submission is never counted.
 */
export function triageDueAt(
  submittedAt: Date,
  workingDays: number,
  holidays: ReadonlySet<string>,
  display: Pick<DisplayTime, 'calendarDate' | 'startOfDay'>,
): Date {
  if (!Number.isInteger(workingDays) || workingDays < 1 || workingDays > MAX_TRIAGE_WORKING_DAYS)
    throw new RangeError(
      `A service level is 1 to ${MAX_TRIAGE_WORKING_DAYS} working days, not ${workingDays}`,
    );
  let day = display.calendarDate(submittedAt);
  if (day === undefined) throw new RangeError('The submission time is not an instant');
  let counted = 0;
  while (counted < workingDays) {
    day = nextDay(day);
    if (!isWeekend(day) && !holidays.has(isoDate(day))) counted += 1;
  }
  return display.startOfDay(nextDay(day));
}
