// A patient's access report (docs/api.md, "A patient's access report"): one entry per audit row and
// referral of the patient, naming who acted and how. IDs, names of institutions and credentials, and
// the requester; never patient data.
import { Type } from 'typebox';
import { InstitutionId, Nullable, Timestamp } from './primitives.ts';
import { named, ref } from './named.ts';

export const PatientAccessInstitution = named(
  'PatientAccessInstitution',
  Type.Object(
    {
      idType: Type.String({ maxLength: 16, description: 'The kind of identifier, such as `hci`.' }),
      id: InstitutionId,
      name: Nullable(
        Type.String({
          description: 'Its name in the catalog; null for an institution the catalog does not list.',
        }),
      ),
    },
    { additionalProperties: false, description: 'The institution that acted, as the request named it.' },
  ),
);

export const PatientAccessClient = named(
  'PatientAccessClient',
  Type.Object(
    {
      kind: Type.Enum(['api-key', 'client'], {
        description: '`api-key`, or `client`: signed client credentials (an access token).',
      }),
      prefix: Type.String({ maxLength: 64, description: 'The credential’s display prefix.' }),
      clientId: Type.Optional(
        Type.String({
          format: 'uuid',
          description: 'A client’s ID, as its assertions name it; absent for an API key.',
        }),
      ),
      label: Nullable(Type.String({ description: 'The label refhub’s operators gave the credential.' })),
    },
    { additionalProperties: false, description: 'The credential the request was made with.' },
  ),
);

export const PatientAccess = named(
  'PatientAccess',
  Type.Object(
    {
      auditEventId: Type.String({
        format: 'uuid',
        description:
          'The audit row’s ID. With `referralId` it tells entries apart: one row may name two referrals ' +
          'of the patient (a list that showed both).',
      }),
      occurredAt: Timestamp,
      action: Type.String({
        maxLength: 100,
        description:
          'The audit action, such as `referral.read`, `referral.read-ehr-form`, ' +
          '`referral.read-attachment-content`, `referral.update` or `link.redeem` (docs/api.md, "Audit"). ' +
          'The set grows: display it, do not branch on it.',
      }),
      outcome: Type.Enum(['success', 'denied'], {
        description:
          '`denied`: the request was turned away (tenancy, role, scope), or a link opened nothing.',
      }),
      referralId: Type.String({ format: 'uuid' }),
      channel: Type.Enum(['api', 'web-form', 'ops', 'refhub'], {
        description:
          '`api`: a client system; `web-form`: a person in refhub’s web form, behind a one-time link ' +
          '(system `Manual`, with the credential that minted the link); `ops`: refhub’s operators; ' +
          '`refhub`: refhub on its own (a forward to the EHR, a reminder).',
      }),
      institution: Nullable(ref(PatientAccessInstitution)),
      system: Nullable(Type.String({ maxLength: 64, description: 'The system that acted.' })),
      requesterIdentifier: Nullable(
        Type.String({ maxLength: 254, description: 'The person the request named, if it named one.' }),
      ),
      client: Nullable(ref(PatientAccessClient)),
      requestId: Type.String({
        maxLength: 128,
        description: 'The request’s `X-Request-Id`: quote it to refhub’s operators.',
      }),
    },
    { additionalProperties: false },
  ),
);

export const PatientAccessReportMetadata = named(
  'PatientAccessReportMetadata',
  Type.Object(
    {
      offset: Type.Integer({ description: 'How many entries come before this page.' }),
      pageSize: Type.Integer(),
      hasNext: Type.Boolean({ description: 'Whether a page follows: ask again with offset + pageSize.' }),
      total: Type.Integer({ description: 'How many entries the report has.' }),
      asOf: Type.String({
        maxLength: 19,
        pattern: '^[0-9]+$',
        description:
          'Opaque. Every page asked for is an access itself, listed first from then on: send this as ' +
          '`asOf` with the next pages, so that they show the report as this one did.',
      }),
    },
    { additionalProperties: false },
  ),
);

export const PatientAccessReport = named(
  'PatientAccessReport',
  Type.Object(
    {
      data: Type.Array(ref(PatientAccess), { maxItems: 1000, description: 'Newest first.' }),
      metadata: ref(PatientAccessReportMetadata),
    },
    { additionalProperties: false },
  ),
);
