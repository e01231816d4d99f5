// The OpenAPI document's front matter: what refhub is, how to authenticate, the tags that group the
// operations, and the interface's changelog (spec §9), so the document carries the history its
// clients were written against. `swaggerOptions` is how app.ts registers @fastify/swagger, with the
// examples of schemas/examples.ts.
import type { SwaggerOptions } from '@fastify/swagger';
import { TOKEN_PATH, type Scope } from '../domain/client-credentials.ts';
import { documentedRouteSchema } from './schemas/documented.ts';
import { withExamples } from './schemas/examples.ts';

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

/**
 * The groups of operations, in the order the docs show them. Every operation names one of these
 * (`operation()` in schemas/operation.ts): a route of a new kind adds its tag here, with a description.
 */
export const TAGS = [
  {
    name: 'Referrals',
    description:
      'What a sender does: list, search and read referrals; create, update, submit, cancel, delete and ' +
      "return them to draft; add notes; acknowledge the provider's outcome.",
  },
  {
    name: 'Provider',
    description:
      'What a provider does with a referral it receives: accept, reject, ask the sender to act, book, ' +
      'and complete it with its outcome (a code of the catalog’s outcome list and the consult summary).',
  },
  {
    name: 'Worklists',
    description:
      'The named lists a provider triages and books from and a sender follows up from, each item with ' +
      'the triage due time the service’s level gives it, and every list’s count.',
  },
  {
    name: 'Attachments',
    description:
      'Files that travel with a referral: added by the sender or the provider, scanned for malware, and ' +
      'forwarded with the form.',
  },
  { name: 'Links', description: 'One-time links into the web form, with the patient prefilled.' },
  {
    name: 'EHR forwarding',
    description: 'The ledger of the attempts to forward a referral’s form to the national EHR.',
  },
  {
    name: 'Events',
    description: 'An institution’s referral events in one total order, for systems that catch up or poll.',
  },
  {
    name: 'Webhooks',
    description:
      'Subscriptions that push signed events (Standard Webhooks) to an institution’s system, and their attempts.',
  },
  {
    name: 'Patients',
    description:
      'One patient of an institution, found by UIN: who read or changed which of their referrals, when and how.',
  },
] as const satisfies readonly { name: string; description: string }[];

export type TagName = (typeof TAGS)[number]['name'];

/** The security schemes of the document: an API key, or an access token of signed client credentials. */
export const API_KEY_SCHEME = 'ApiKey';
export const ACCESS_TOKEN_SCHEME = 'ClientCredentials';

/** What each scope lets an access token do, as the document's token scheme lists them. */
const SCOPE_DESCRIPTIONS: Readonly<Record<Scope, string>> = {
  'system/Referral.read':
    'Every operation that changes nothing: lists, gets and searches (the searches are POSTs only so that ' +
    'patient identifiers stay out of URLs), the FHIR view, attachments and their content, the EHR ' +
    'forwarding ledger, the event feed, webhook subscriptions and their attempts, patients’ access reports.',
  'system/Referral.write':
    'Every operation that changes something: referrals and their steps, notes, appointments, attachments ' +
    'and links; webhook subscriptions, their secrets and test events. The answer shows what was changed.',
};

export const API_DESCRIPTION = [
  'refhub tracks referrals between healthcare institutions and forwards each referral as a self-contained HTML',
  'form to the national electronic health record.',
  '',
  'Authenticate with `Authorization: ApiKey <key>`, or with `Authorization: Bearer <token>`, an access token',
  `of signed client credentials (\`POST ${TOKEN_PATH}\`). Each operation names the one scope a token needs for it:`,
  '`system/Referral.read` for an operation that changes nothing (the searches, which are POSTs, included),',
  '`system/Referral.write` for one that changes something. Errors are `application/problem+json` with a stable',
  '`code`.',
  'Every POST accepts `Idempotency-Key`; writes accept `If-Match` with the `ETag` of the referral.',
  'Clients display timeline `description`s and never branch on timeline `type`.',
  '',
  '## Changelog',
  '',
  '| Release | Changes |',
  '|---|---|',
  ...CHANGELOG.map(([release, change]) => `| ${release} | ${change} |`),
].join('\n');

/** @fastify/swagger's options: the document's info, server, security and tags. */
export function swaggerOptions(publicUrl: string): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'refhub API',
        version: API_VERSION,
        description: API_DESCRIPTION,
        // The operators of each installation answer for it; its docs page is where a client starts.
        contact: { name: 'The operators of this refhub installation', url: `${publicUrl}/docs` },
        // refhub is not open source (package.json: UNLICENSED); SPDX's LicenseRef- names such a licence.
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      },
      servers: [{ url: publicUrl }],
      tags: TAGS.map((tag) => ({ ...tag })),
      components: {
        securitySchemes: {
          [API_KEY_SCHEME]: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'The value is `ApiKey <key>`.',
          },
          // Every operation lists the one scope it needs under this scheme (schemas/operation.ts), and
          // the auth plugin enforces exactly that scope.
          [ACCESS_TOKEN_SCHEME]: {
            type: 'oauth2',
            description:
              'An access token of signed client credentials, sent as `Authorization: Bearer <token>`. The ' +
              'client authenticates with a JWT it signs with its private key (`private_key_jwt`, RFC 7523), ' +
              'never with a secret, so this page cannot get a token: try operations here with an API key.',
            flows: {
              clientCredentials: {
                tokenUrl: `${publicUrl}${TOKEN_PATH}`,
                scopes: { ...SCOPE_DESCRIPTIONS },
              },
            },
          },
        },
      },
    },
    // Named schemas (schemas/named.ts) keep their $id as their name under components.schemas.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    transform: ({ schema, url }) => ({ schema: withExamples(documentedRouteSchema(schema)), url }),
  };
}
