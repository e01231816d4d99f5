// How long an offering's referrals wait, as a sender choosing a service reads it: from submit to
// accepted, and from submit to the first appointment booked, the middle (p50) and the ninth decile
// (p90) in days, and the share declined, over a rolling window. The figures are computed from the
// timeline (db/wait-times.repository.ts, in SQL) on a schedule (services/wait-times.service.ts); this
// module holds the rules they follow, as pure code:
//
// - The referrals counted are those first submitted (their first `referral.pending-acceptance` step)
//   within the window; a referral first submitted before it is left out, even if resubmitted in it.
// - Submit → accepted runs to the first `referral.accepted`; submit → first appointment to the first
//   appointment step that books one (`appt.scheduled`, or `appt.actualized` / `appt.no-show` when the
//   provider records an appointment only once it is past); a cancelled appointment books nothing. The
//   appointment's figure is when it was booked, not the day it is on.
// - Time spent waiting for the sender is left out: from `referral.sender-action-required` (the
//   provider asked the sender to act) or `referral.back-to-draft` (the sender took it back) until the
//   sender submits it again (`referral.pending-acceptance`).
// - Declined: among the referrals decided (accepted or rejected at least once), the share rejected
//   (a referral accepted and later rejected counts as declined). A cancellation or a return to draft
//   is the sender's doing, not a decision: such a referral counts only if the provider decided first.
// - Percentiles are PostgreSQL's `percentile_cont`: linear interpolation between the two nearest
//   ranks (p of n sorted values is at rank 1 + p × (n − 1)), the same on PostgreSQL and PGlite.
// - No figure is given from fewer referrals than WAIT_TIMES_MIN_REFERRALS: below it a figure says
//   how many referrals there were and that there is not enough data, so that no figure can point at
//   one patient. The threshold holds for what is stored, and again for what is read.

/** The timeline steps the figures are made of. */
export const WAIT_TIME_STEPS = {
  submitted: 'referral.pending-acceptance',
  accepted: 'referral.accepted',
  rejected: 'referral.rejected',
  /** Steps after which the referral waits for the sender, until it is submitted again. */
  senderWaits: ['referral.sender-action-required', 'referral.back-to-draft'],
  /** Steps that book an appointment (a cancelled one books nothing). */
  appointmentBooked: ['appt.scheduled', 'appt.actualized', 'appt.no-show'],
} as const;

export const SECONDS_PER_DAY = 86_400;

/** One figure as computed, before the threshold: how many referrals, and their percentiles. */
export interface ComputedDurations {
  readonly referrals: number;
  readonly p50Seconds: number | null;
  readonly p90Seconds: number | null;
}

/** What the computation gives for one offering, before the threshold. */
export interface ComputedWaitTimes {
  readonly offeringId: string;
  readonly accepted: ComputedDurations;
  readonly firstAppointment: ComputedDurations;
  /** Referrals decided (accepted or rejected), and of them those rejected. */
  readonly decided: number;
  readonly declined: number;
}

/** A duration figure as stored and answered: the percentiles only with enough referrals. */
export type DurationFigure =
  | { readonly referrals: number; readonly enoughData: false }
  | {
      readonly referrals: number;
      readonly enoughData: true;
      readonly p50Days: number;
      readonly p90Days: number;
    };

/** The share declined, only with enough decided referrals. */
export type DeclinedFigure =
  | { readonly referrals: number; readonly enoughData: false }
  | { readonly referrals: number; readonly enoughData: true; readonly share: number };

/** An offering's figures as stored by the last computation. */
export interface OfferingWaitTimes {
  readonly offeringId: string;
  readonly computedAt: Date;
  readonly windowStart: Date;
  readonly windowEnd: Date;
  /** Seconds, before rounding; null below the threshold. */
  readonly accepted: ComputedDurations;
  readonly firstAppointment: ComputedDurations;
  readonly decided: number;
  /** Null below the threshold. */
  readonly declinedShare: number | null;
}

/** The window that ends at `now`: `days` whole days back. */
export function windowEndingAt(now: Date, days: number): { readonly start: Date; readonly end: Date } {
  return { start: new Date(now.getTime() - days * SECONDS_PER_DAY * 1000), end: now };
}

/** A computed figure with its percentiles cleared below `minReferrals`: what is stored. */
export function thresholdDurations(computed: ComputedDurations, minReferrals: number): ComputedDurations {
  const enough = computed.referrals >= minReferrals && computed.p50Seconds !== null;
  return enough ? computed : { referrals: computed.referrals, p50Seconds: null, p90Seconds: null };
}

/** What one offering's computation stores: every figure held to the threshold. */
export function storedFigures(
  computed: ComputedWaitTimes,
  minReferrals: number,
): Pick<OfferingWaitTimes, 'accepted' | 'firstAppointment' | 'decided' | 'declinedShare'> {
  return {
    accepted: thresholdDurations(computed.accepted, minReferrals),
    firstAppointment: thresholdDurations(computed.firstAppointment, minReferrals),
    decided: computed.decided,
    declinedShare:
      computed.decided >= minReferrals && computed.decided > 0 ? computed.declined / computed.decided : null,
  };
}

/** Days to one decimal: a figure in days never claims more precision than a tenth of a day. */
export function daysOf(seconds: number): number {
  return Math.round((seconds / SECONDS_PER_DAY) * 10) / 10;
}

/** A stored duration figure as answered, held to the threshold again (the setting may have risen). */
export function durationFigure(stored: ComputedDurations, minReferrals: number): DurationFigure {
  if (stored.referrals < minReferrals || stored.p50Seconds === null || stored.p90Seconds === null) {
    return { referrals: stored.referrals, enoughData: false };
  }
  return {
    referrals: stored.referrals,
    enoughData: true,
    p50Days: daysOf(stored.p50Seconds),
    p90Days: daysOf(stored.p90Seconds),
  };
}

/** The stored share declined as answered, to two decimals, held to the threshold again. */
export function declinedFigure(decided: number, share: number | null, minReferrals: number): DeclinedFigure {
  if (decided < minReferrals || share === null) return { referrals: decided, enoughData: false };
  return { referrals: decided, enoughData: true, share: Math.round(share * 100) / 100 };
}

/**
 * The hint the web form shows beside a service: "Usually accepted within 3 days". It is the p90 (nine
 * referrals in ten were accepted within it), rounded up to whole days and never below one, so that
 * "within" holds for most referrals rather than for half of them. Without enough data, nothing.
 */
export function acceptedHint(figure: DurationFigure): string | undefined {
  if (!figure.enoughData) return undefined;
  const days = Math.max(1, Math.ceil(figure.p90Days));
  return `Usually accepted within ${days} ${days === 1 ? 'day' : 'days'}`;
}
