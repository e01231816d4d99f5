// An offering's wait times (docs/api.md, "Wait times"): counts and figures in days over the rolling
// window, never a figure from fewer referrals than the installation's threshold, and nothing that
// names a referral or a patient.
import { Type } from 'typebox';
import { OfferingId, Timestamp } from './primitives.ts';
import { named, ref } from './named.ts';

const referrals = (what: string) =>
  Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: `How many referrals ${what}.` });

const enoughData = Type.Boolean({
  description:
    'Whether there were at least `minReferrals` of them: only then are the figures given. Below it the ' +
    'answer has the count alone, so that no figure can point at one patient.',
});

const daysFigure = (description: string) =>
  Type.Optional(Type.Number({ minimum: 0, maximum: 1_000_000, description: `${description}, to 0.1 day.` }));

export const WaitTimeFigure = named(
  'WaitTimeFigure',
  Type.Object(
    {
      referrals: referrals('the figure is made of (those first submitted in the window that got this far)'),
      enoughData,
      p50Days: daysFigure('Half of them took at most this many days (the median)'),
      p90Days: daysFigure('Nine in ten took at most this many days'),
    },
    {
      additionalProperties: false,
      description:
        'Days from the first submit, without the time the referral waited for the sender (from a request ' +
        'to act or a return to draft until it was submitted again). Percentiles interpolate linearly ' +
        "between the nearest ranks (PostgreSQL's percentile_cont).",
    },
  ),
);

export const DeclinedShare = named(
  'DeclinedShare',
  Type.Object(
    {
      referrals: referrals('were decided (accepted or rejected at least once)'),
      enoughData,
      share: Type.Optional(
        Type.Number({
          minimum: 0,
          maximum: 1,
          description:
            'Of the referrals decided, the share rejected (accepted and later rejected counts as rejected), ' +
            'to 0.01. Cancelled or returned to draft before a decision: not counted.',
        }),
      ),
    },
    { additionalProperties: false, description: 'How many referrals the provider declined.' },
  ),
);

export const WaitTimes = named(
  'WaitTimes',
  Type.Object(
    {
      offeringId: OfferingId,
      computed: Type.Boolean({
        description:
          'False until the figures were first computed (soon after refhub starts, then nightly): `detail` ' +
          'says so, and no other field but `offeringId` is given.',
      }),
      detail: Type.Optional(Type.String({ maxLength: 500, description: 'Why there are no figures yet.' })),
      computedAt: Type.Optional({
        ...Timestamp,
        description: 'When the figures were computed (ISO 8601 UTC).',
      }),
      window: Type.Optional(
        Type.Object(
          {
            days: Type.Integer({ minimum: 1, maximum: 3650, description: 'The window in days.' }),
            from: {
              ...Timestamp,
              description: 'Referrals first submitted at or after this time are counted.',
            },
            to: { ...Timestamp, description: 'and before this one (when the figures were computed).' },
          },
          { additionalProperties: false, description: 'The rolling window the figures cover.' },
        ),
      ),
      minReferrals: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 100_000,
          description: 'The fewest referrals a figure is given from (WAIT_TIMES_MIN_REFERRALS).',
        }),
      ),
      accepted: Type.Optional(ref(WaitTimeFigure)),
      firstAppointment: Type.Optional(ref(WaitTimeFigure)),
      declined: Type.Optional(ref(DeclinedShare)),
    },
    {
      additionalProperties: false,
      description:
        "An offering's wait times over the rolling window, as last computed: `accepted`, submit → " +
        'accepted; `firstAppointment`, submit → the first appointment booked (when it was booked, not ' +
        'the day it is on); `declined`, the share of decided referrals the provider rejected.',
    },
  ),
);
