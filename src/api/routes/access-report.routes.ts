// A patient's access report (docs/api.md, "A patient's access report"): who read or changed which of
// the patient's referrals the institution may see. The GET takes the UIN in its query, as the
// requirements name it: refhub logs route patterns, never URLs (request-log.ts), audits named fields
// only (request-audit.ts) and names fields, never values, in its errors. The search takes the UIN in its
// body, for clients whose proxies log URLs, as the referral search does.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { ApiDeps } from '../api-deps.ts';
import { institutionOf } from '../http.ts';
import { callerOf } from '../plugins/auth.ts';
import { PostHeaders } from '../schemas/headers.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import { PatientAccessReport } from '../schemas/access-report.schema.ts';
import { InstitutionId, InstitutionIdType, RequesterIdentifier, Uin } from '../schemas/primitives.ts';
import { ListFilters } from '../schemas/referral.schema.ts';
import { problems, success } from '../schemas/responses.ts';

/** What both forms take: the institution, the person, the patient and the page. */
const ReportRequest = Type.Object(
  {
    institutionIdType: InstitutionIdType,
    institutionId: InstitutionId,
    requesterIdentifier: RequesterIdentifier,
    patientUin: Uin,
    offset: ListFilters.offset,
    pageSize: ListFilters.pageSize,
    asOf: Type.Optional(
      Type.String({
        maxLength: 19,
        pattern: '^[0-9]+$',
        description:
          'The `metadata.asOf` of the first page: the next pages leave out what was written since.',
      }),
    ),
  },
  { additionalProperties: false },
);

const DESCRIPTION =
  'Every access to the referrals of one patient that the institution sends, or receives once submitted: ' +
  'who read or changed which referral, when, from which client (each party’s, refhub’s operators’ and ' +
  'refhub’s own), newest first, a page at a time: ask again with `offset` + `pageSize` and the first ' +
  'page’s `metadata.asOf` while `metadata.hasNext` is true. Reads of the form and of attachments are ' +
  'listed as such. A patient with no referral the institution may see has an empty report. The report ' +
  'itself is audited (`patient.access-report`), naming the referrals it covered.';

export type AccessReportRoutesDeps = Pick<ApiDeps, 'accessReport'>;

export function accessReportRoutes(deps: AccessReportRoutesDeps) {
  /** The report `input` asks for, from the query or the body alike. */
  const report = (request: FastifyRequest, input: Static<typeof ReportRequest>) =>
    deps.accessReport.report(callerOf(request, institutionOf(input), input.requesterIdentifier), {
      patientUin: input.patientUin,
      offset: input.offset ?? 0,
      pageSize: input.pageSize ?? 10,
      asOf: input.asOf,
    });

  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/patients/access-report',
      {
        config: { action: 'patient.access-report' },
        schema: {
          ...operation({
            operationId: 'getPatientAccessReport',
            tag: 'Patients',
            scope: 'system/Referral.read',
            summary: 'Get a patient’s access report',
            description:
              `${DESCRIPTION} The UIN is in the URL: refhub never logs it, but a proxy in front may; the ` +
              'search operation takes it in the body instead.',
          }),
          querystring: ReportRequest,
          response: { 200: success(ref(PatientAccessReport), 'One page of the report.'), ...problems() },
        },
      },
      async (request) => report(request, request.query),
    );

    app.post(
      '/patients/access-report/search',
      {
        config: { action: 'patient.access-report' },
        schema: {
          ...operation({
            operationId: 'searchPatientAccessReport',
            tag: 'Patients',
            scope: 'system/Referral.read',
            summary: 'Get a patient’s access report, the UIN in the body',
            description:
              `${DESCRIPTION} The get operation with the UIN in the body, where no URL carries it. It ` +
              'changes nothing, so it can be retried as it is.',
          }),
          headers: PostHeaders,
          body: ReportRequest,
          response: {
            200: success(ref(PatientAccessReport), 'One page of the report.', { idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => report(request, request.body),
    );
  };
}
