// The OpenAPI document's front matter: what refhub is, how to authenticate, and the interface's
// changelog (spec §9), so the document carries the history its clients were written against.

export const API_VERSION = '0.0.71';

export const CHANGELOG: readonly (readonly [string, string])[] = [
  ['v0.0.71', 'New timeline type referral.provider-patient-create-reminder-sent.'],
  ['v0.0.70', 'submittedAt added to referral responses.'],
  ['v0.0.69', 'patient.isHsgEnrolled removed; offering.description description updated.'],
  [
    'v0.0.68',
    'senderSystem and timelineEvents[].system gain `Manual`; offering.category gains `gpfirst` and `ae`.',
  ],
  ['v0.0.67', 'additionalField gains `ehrForm`; ehrForm and ehrFormType fields added.'],
  [
    'v0.0.66',
    'Required parameters added; appointment statuses renamed (`booked` → `scheduled`, `noShow` → `no-show`); new ' +
      'timeline types; nationality, location, isCancellable, coreStatus, offering.specialty, offering.ehrCode and ' +
      'link label added; status deprecated; sender-action-required added to the status filter.',
  ],
];

export const API_DESCRIPTION = [
  'refhub tracks referrals between healthcare institutions and forwards each referral as a self-contained HTML',
  'form to the national electronic health record.',
  '',
  'Authenticate with `Authorization: ApiKey <key>`. Errors are `application/problem+json` with a stable `code`.',
  'Every POST accepts `Idempotency-Key`; writes accept `If-Match` with the `ETag` of the referral.',
  'Clients display timeline `description`s and never branch on timeline `type`.',
  '',
  '## Changelog',
  '',
  '| Release | Changes |',
  '|---|---|',
  ...CHANGELOG.map(([release, change]) => `| ${release} | ${change} |`),
].join('\n');
