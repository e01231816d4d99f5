// The FHIR R4 view of a referral (docs/fhir.md): the same query, tenancy and audit as the get, and
// the referral as a FHIR Bundle served as application/fhir+json, so FHIR tooling can read it.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ApiDeps } from '../api-deps.ts';
import { callerOf } from '../plugins/auth.ts';
import { institutionOf, referralHeaders } from '../http.ts';
import { FhirBundle } from '../schemas/fhir.schema.ts';
import {
  InstitutionId,
  InstitutionIdType,
  ReferralIdParams,
  RequesterIdentifier,
} from '../schemas/primitives.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import { problems, success } from '../schemas/responses.ts';

const FHIR_JSON = 'application/fhir+json';

export type FhirRoutesDeps = Pick<ApiDeps, 'referralFhir'>;

export function fhirRoutes(deps: FhirRoutesDeps) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/referrals/:referralId/fhir',
      {
        config: { action: 'referral.read-fhir' },
        schema: {
          ...operation({
            operationId: 'getReferralFhir',
            tag: 'Referrals',
            scope: 'system/Referral.read',
            summary: 'Get a referral as a FHIR R4 Bundle',
            description:
              'The referral the get returns, as FHIR R4 resources in a Bundle of type collection ' +
              '(application/fhir+json): a ServiceRequest with a Task for its workflow state, the Patient, ' +
              'the Organizations and the referring clinician, the appointments, the notes as ' +
              'Communications, each attachment as a DocumentReference (the sender’s as the ServiceRequest’s ' +
              'supportingInfo, the provider’s as Task outputs), and each attempt to forward the form to the ' +
              'EHR as an AuditEvent carrying ' +
              'the SHA-256 of the form sent. The same callers see it as see the referral; the ETag is ' +
              'the referral version. The mapping is in docs/fhir.md.',
          }),
          params: ReferralIdParams,
          querystring: Type.Object(
            {
              requesterIdentifier: RequesterIdentifier,
              institutionIdType: InstitutionIdType,
              institutionId: InstitutionId,
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(FhirBundle), 'The referral as a FHIR R4 Bundle.', {
              etag: true,
              contentType: FHIR_JSON,
            }),
            ...problems(),
          },
        },
      },
      async (request, reply) => {
        const { query } = request;
        const caller = callerOf(request, institutionOf(query), query.requesterIdentifier);
        const view = await deps.referralFhir.read(caller, request.params.referralId);
        void reply.headers(referralHeaders(view));
        return reply.type(`${FHIR_JSON}; charset=utf-8`).send(view.bundle);
      },
    );
  };
}
