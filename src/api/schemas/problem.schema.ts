// The problem+json document every error returns (contract §9).
import { Type } from 'typebox';
import { REFUSAL_REASONS } from '../../errors.ts';
import { named, ref } from './named.ts';

export const FieldError = named(
  'FieldError',
  Type.Object({
    path: Type.String({
      description:
        'Where the problem is: `body.<field>`, `query.<field>`, `path.<field>` or `header.<name>`.',
    }),
    message: Type.String({ description: 'What is wrong with it. Never quotes the value that was sent.' }),
  }),
);

export const Problem = named(
  'Problem',
  Type.Object(
    {
      type: Type.String({ description: '`urn:refhub:problem:<code>`' }),
      title: Type.String(),
      status: Type.Integer({ description: 'The HTTP status code.' }),
      detail: Type.String({ description: 'What went wrong, written for the caller.' }),
      code: Type.String({
        description:
          'Stable, machine-readable error code: branch on this, never on `detail`. For example ' +
          '`validation_failed`, `unauthorized`, `forbidden_role`, `institution_not_permitted`, ' +
          '`referral_not_found`, `referral_archived`, `invalid_transition`, `incomplete_referral`, `version_mismatch`, ' +
          '`idempotency_key_reused`, `idempotency_key_in_use`, `payload_too_large`, `rate_limited`.',
      }),
      requestId: Type.String({ description: 'The `X-Request-Id` of the request, for support.' }),
      errors: Type.Optional(
        Type.Array(ref(FieldError), { description: 'One entry per field that was refused.' }),
      ),
      currentStatus: Type.Optional(
        Type.String({ description: 'With `invalid_transition`: the status the referral is in.' }),
      ),
      reason: Type.Optional(
        Type.Enum([...REFUSAL_REASONS], {
          description:
            'With `invalid_transition`, and with `forbidden_role` when the key may not act on this ' +
            "referral's side: why the operation was refused, as the referral's `blockedActions[].reason` " +
            'gives it. `offering-locked`: an update may not change the offering after submission.',
        }),
      ),
      currentVersion: Type.Optional(
        Type.Integer({
          description: 'With `version_mismatch`: the version the referral is at. Read it again and retry.',
        }),
      ),
      referralId: Type.Optional(
        Type.String({ description: 'With `referral_archived`: the referral that was archived.' }),
      ),
      archive: Type.Optional(
        Type.Object(
          {
            name: Type.String({ description: 'The archive that holds the referral’s record.' }),
            archivedAt: Type.String({ format: 'date-time', description: 'When it was archived.' }),
          },
          {
            description:
              'With `referral_archived` (410): where the referral’s record went. Its clinical content is ' +
              'no longer held by refhub; an operator reads it back from that archive.',
          },
        ),
      ),
      missing: Type.Optional(
        Type.Array(Type.String(), {
          description: 'With `incomplete_referral`: what the referral needs before it can be submitted.',
        }),
      ),
    },
    { additionalProperties: true, description: 'An error, as application/problem+json (RFC 9457).' },
  ),
);
