// The EHR forwarding ledger of a referral: every attempt to deliver its form, with the outcome, the
// SHA-256 of the bytes sent and the EHR's reference. Sender and provider keys read it for referrals
// their institution can see; ops keys for any referral (it holds no patient data). The form an
// attempt sent, byte for byte, is for sender and provider keys only: it is patient data.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ApiDeps } from '../api-deps.ts';
import { UnauthorizedError, ValidationError } from '../../errors.ts';
import { callerOf } from '../plugins/auth.ts';
import {
  InstitutionId,
  InstitutionIdType,
  ReferralIdParams,
  RequesterIdentifier,
} from '../schemas/primitives.ts';
import { EhrSentForm, EhrSubmissionList } from '../schemas/forwarding.schema.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import { problems, success } from '../schemas/responses.ts';

export type ForwardingRoutesDeps = Pick<ApiDeps, 'ehrForwarding'>;

export function ehrSubmissionRoutes(deps: ForwardingRoutesDeps) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/referrals/:referralId/ehr-submissions',
      {
        config: { action: 'ehr.submissions.read' },
        schema: {
          ...operation({
            operationId: 'listEhrSubmissions',
            tag: 'EHR forwarding',
            scope: 'system/Referral.read',
            summary: 'List the attempts to forward a referral’s form to the EHR',
            description:
              'Oldest first. Sender and provider keys name the institution they act for; ops keys may omit it.',
          }),
          params: ReferralIdParams,
          querystring: Type.Object(
            {
              institutionIdType: Type.Optional(InstitutionIdType),
              institutionId: Type.Optional(InstitutionId),
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(EhrSubmissionList), 'Every attempt so far, oldest first.'),
            ...problems(),
          },
        },
      },
      async (request) => {
        const key = request.apiKey;
        if (!key) throw new UnauthorizedError();
        const { referralId } = request.params;
        const { institutionIdType, institutionId, requesterIdentifier } = request.query;
        if (key.role === 'ops') {
          const reader = {
            role: 'ops' as const,
            apiKeyId: key.id,
            system: key.system,
            requestId: request.id,
          };
          return { data: await deps.ehrForwarding.submissions(reader, referralId) };
        }
        const missing = [
          ...(institutionIdType === undefined ? ['institutionIdType'] : []),
          ...(institutionId === undefined ? ['institutionId'] : []),
        ];
        if (institutionIdType === undefined || institutionId === undefined) {
          throw new ValidationError(
            missing.map((name) => ({ path: `query.${name}`, message: 'is required' })),
          );
        }
        const caller = callerOf(
          request,
          { idType: institutionIdType, id: institutionId },
          requesterIdentifier,
        );
        return { data: await deps.ehrForwarding.submissions(caller, referralId) };
      },
    );

    app.get(
      '/referrals/:referralId/ehr-submissions/:attemptId/form',
      {
        config: { action: 'ehr.submissions.form.read' },
        schema: {
          ...operation({
            operationId: 'getEhrSentForm',
            tag: 'EHR forwarding',
            scope: 'system/Referral.read',
            summary: 'Get the form one attempt sent to the EHR, with its hash',
            description:
              'The exact bytes the attempt sent (every attempt of one message ID sends the same), with ' +
              'the SHA-256 the ledger recorded: proof afterwards of what the EHR received. Sender and ' +
              'provider keys only (it is patient data); an attempt that sent no form is 404.',
          }),
          params: Type.Object(
            { ...ReferralIdParams.properties, attemptId: Type.String({ format: 'uuid', maxLength: 36 }) },
            { additionalProperties: false },
          ),
          querystring: Type.Object(
            {
              institutionIdType: InstitutionIdType,
              institutionId: InstitutionId,
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(EhrSentForm), 'The form as it was sent, with its hash.'),
            ...problems(),
          },
        },
      },
      async (request) => {
        const { referralId, attemptId } = request.params;
        const { institutionIdType, institutionId, requesterIdentifier } = request.query;
        const caller = callerOf(
          request,
          { idType: institutionIdType, id: institutionId },
          requesterIdentifier,
        );
        return deps.ehrForwarding.formOfAttempt(caller, referralId, attemptId);
      },
    );
  };
}
