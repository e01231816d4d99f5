// Referrals for the wait-times tests, driven through the real API at times a test's clock sets, and the
// figures they should give, computed here in plain TypeScript from the same times, independently of
// the SQL that refhub computes them with (domain/wait-times.ts states the rules both follow).
import type { Clock } from '../../src/domain/clock.ts';
import { call, createDraft } from './scenarios.ts';
import type { TestApp } from './test-app.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** A clock a test moves: every request runs at the time it was last set to. */
export interface SetClock extends Clock {
  set(at: Date): void;
}

export function setClock(start: Date): SetClock {
  let current = start;
  return {
    now: () => current,
    set(at) {
      current = at;
    },
  };
}

/** One step of a referral's life, after its first submit, at an offset from it. */
export type Step =
  | 'accept'
  | 'reject'
  | 'request-action'
  | 'back-to-draft'
  | 'resubmit'
  | 'appointment'
  | 'cancel-appointment'
  | 'cancel';

export interface PlannedReferral {
  readonly offeringId: string;
  readonly submittedAt: Date;
  /** Steps in order, each at `ms` after the first submit. */
  readonly steps: readonly { readonly step: Step; readonly ms: number }[];
}

/** A small deterministic generator, so that a failure can be replayed. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * A few dozen referrals to `offeringId` in the window ending at `now` (and some outside it): accepted
 * at once or after a wait for the sender (a request to act, a return to draft, both), with or without
 * an appointment, rejected, accepted then rejected, cancelled undecided, and first submitted before
 * the window (one of them submitted again within it).
 */
export function plannedReferrals(offeringId: string, now: Date, count: number, seed = 7): PlannedReferral[] {
  const random = generator(seed);
  const within = (maxDays: number) => Math.round(random() * maxDays * DAY);
  const plans: PlannedReferral[] = [];
  for (let i = 0; i < count; i += 1) {
    const submittedAt = new Date(now.getTime() - 170 * DAY + within(150));
    const accept = HOUR + within(12);
    const wait = HOUR + within(20);
    const booked = accept + HOUR + within(25);
    let steps: PlannedReferral['steps'];
    switch (i % 8) {
      case 0:
        steps = [{ step: 'accept', ms: accept }];
        break;
      case 1:
        steps = [
          { step: 'accept', ms: accept },
          { step: 'appointment', ms: booked },
        ];
        break;
      case 2: {
        const asked = Math.round(accept / 2);
        steps = [
          { step: 'request-action', ms: asked },
          { step: 'resubmit', ms: asked + wait },
          { step: 'accept', ms: accept + wait },
          { step: 'appointment', ms: booked + wait },
        ];
        break;
      }
      case 3:
        steps = [{ step: 'reject', ms: accept }];
        break;
      case 4: {
        const back = Math.round(accept / 3);
        steps = [
          { step: 'back-to-draft', ms: back },
          { step: 'resubmit', ms: back + wait },
          { step: 'accept', ms: accept + wait },
        ];
        break;
      }
      case 5: {
        // Asked to act, then taken back to draft: one wait for the sender, not two.
        const asked = Math.round(accept / 3);
        steps = [
          { step: 'request-action', ms: asked },
          { step: 'back-to-draft', ms: asked + HOUR },
          { step: 'resubmit', ms: asked + wait + HOUR },
          { step: 'accept', ms: accept + wait + HOUR },
          { step: 'cancel-appointment', ms: booked + wait + HOUR },
        ];
        break;
      }
      case 6:
        // Accepted, asked to act after that (the wait falls after the acceptance), then booked.
        steps = [
          { step: 'accept', ms: accept },
          { step: 'request-action', ms: accept + HOUR },
          { step: 'resubmit', ms: accept + HOUR + wait },
          { step: 'accept', ms: accept + 2 * HOUR + wait },
          { step: 'appointment', ms: booked + 2 * HOUR + wait },
        ];
        break;
      default:
        steps =
          i % 16 === 7
            ? [
                { step: 'accept', ms: accept },
                { step: 'reject', ms: booked },
              ]
            : [{ step: 'cancel', ms: accept }];
    }
    plans.push({ offeringId, submittedAt, steps });
  }
  // First submitted before the window: left out, even when submitted again within it.
  plans.push({
    offeringId,
    submittedAt: new Date(now.getTime() - 200 * DAY),
    steps: [{ step: 'accept', ms: 2 * DAY }],
  });
  plans.push({
    offeringId,
    submittedAt: new Date(now.getTime() - 185 * DAY),
    steps: [
      { step: 'request-action', ms: DAY },
      { step: 'resubmit', ms: 10 * DAY },
      { step: 'accept', ms: 11 * DAY },
    ],
  });
  return plans;
}

/** Makes the planned referrals through the API, each request at its planned time. */
export async function seedReferrals(
  t: TestApp,
  clock: SetClock,
  plans: readonly PlannedReferral[],
): Promise<void> {
  for (const plan of plans) {
    clock.set(new Date(plan.submittedAt.getTime() - HOUR));
    const draft = await createDraft(t, { offeringId: plan.offeringId });
    const url = (op: string) => `/api/v1/referrals/${draft.id}/${op}`;
    clock.set(plan.submittedAt);
    await call(t, t.sender, 'POST', url('submit'), {});
    let appointments = 0;
    for (const { step, ms } of plan.steps) {
      clock.set(new Date(plan.submittedAt.getTime() + ms));
      switch (step) {
        case 'accept':
          await call(t, t.provider, 'POST', url('accept'), {});
          break;
        case 'reject':
          await call(t, t.provider, 'POST', url('reject'), { reason: 'Not within our scope.' });
          break;
        case 'request-action':
          await call(t, t.provider, 'POST', url('request-action'), { reason: 'Please attach the ECG.' });
          break;
        case 'back-to-draft':
          await call(t, t.sender, 'POST', url('back-to-draft'), {});
          break;
        case 'resubmit':
          await call(t, t.sender, 'POST', url('submit'), {});
          break;
        case 'cancel':
          await call(t, t.sender, 'POST', url('cancel'), { cancelNote: 'Patient recovered' });
          break;
        case 'appointment':
        case 'cancel-appointment':
          appointments += 1;
          await call(
            t,
            t.provider,
            'PUT',
            `/api/v1/referrals/${draft.id}/appointments/appt-${appointments}`,
            {
              status: step === 'appointment' ? 'scheduled' : 'cancelled',
              startAt: '2030-01-15T01:30:00.000Z',
              location: 'Clinic 3B, Level 3',
            },
          );
          break;
      }
    }
  }
}

/** Linear interpolation between the nearest ranks: p of n sorted values sits at rank 1 + p(n − 1). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = p * (sorted.length - 1);
  const below = Math.floor(rank);
  const above = Math.ceil(rank);
  const low = sorted[below] ?? Number.NaN;
  const high = sorted[above] ?? Number.NaN;
  return low + (high - low) * (rank - below);
}

export interface ExpectedFigures {
  readonly acceptedSeconds: number[];
  readonly appointmentSeconds: number[];
  decided: number;
  declined: number;
}

/** What the planned referrals of one offering should give over [start, end), worked out step by step. */
export function expectedFigures(
  plans: readonly PlannedReferral[],
  offeringId: string,
  window: { readonly start: Date; readonly end: Date },
): ExpectedFigures {
  const out: ExpectedFigures = { acceptedSeconds: [], appointmentSeconds: [], decided: 0, declined: 0 };
  for (const plan of plans) {
    const t0 = plan.submittedAt.getTime();
    if (plan.offeringId !== offeringId || t0 < window.start.getTime() || t0 >= window.end.getTime()) continue;
    // The intervals the sender had the referral: from the first hand-over to the next submit.
    const waits: { from: number; to: number }[] = [];
    let waitingSince: number | undefined;
    for (const { step, ms } of plan.steps) {
      if ((step === 'request-action' || step === 'back-to-draft') && waitingSince === undefined)
        waitingSince = ms;
      if (step === 'resubmit' && waitingSince !== undefined) {
        waits.push({ from: waitingSince, to: ms });
        waitingSince = undefined;
      }
    }
    const waitedBefore = (until: number) =>
      waits.reduce((sum, w) => sum + Math.max(0, Math.min(w.to, until) - w.from), 0);
    const accepted = plan.steps.find((s) => s.step === 'accept')?.ms;
    const booked = plan.steps.find((s) => s.step === 'appointment')?.ms;
    const rejected = plan.steps.some((s) => s.step === 'reject');
    if (accepted !== undefined) out.acceptedSeconds.push((accepted - waitedBefore(accepted)) / 1000);
    if (booked !== undefined) out.appointmentSeconds.push((booked - waitedBefore(booked)) / 1000);
    if (accepted !== undefined || rejected) out.decided += 1;
    if (rejected) out.declined += 1;
  }
  return out;
}

/** Seconds as the API gives days: to one decimal. */
export const days = (seconds: number): number => Math.round((seconds / 86_400) * 10) / 10;
