// The EHR forwarding ledger of a referral: every attempt to deliver its form, with the outcome, the
// SHA-256 of the bytes sent and the EHR's reference. Sender and provider keys read it for referrals
// their institution can see; ops keys for any referral (it holds no patient data). The form an
// attempt sent, byte for byte, is for sender and provider keys only: it is patient data.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { UnauthorizedError, ValidationError } from '../../errors.ts';
import { callerOf } from '../plugins/auth.ts';
import {
  InstitutionId,
  InstitutionIdType,
  ReferralIdParams,
  RequesterIdentifier,
  Timestamp,
} from '../schemas/primitives.ts';
import { problemResponses } from '../schemas/problem.schema.ts';

const Submission = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    messageId: Type.String({
      description: '`<referralId>.v<version>`, also the Idempotency-Key sent to the EHR',
    }),
    version: Type.Integer({ description: 'The referral version whose form was sent' }),
    attempt: Type.Integer({ minimum: 1 }),
    attemptedAt: Timestamp,
    outcome: Type.Enum(['delivered', 'retrying', 'failed']),
    httpStatus: Type.Optional(Type.Integer({ description: 'The EHR’s answer, when it answered' })),
    errorCode: Type.Optional(Type.String({ description: 'Why no answer came (a network error code)' })),
    sha256: Type.Optional(
      Type.String({ pattern: '^[0-9a-f]{64}$', description: 'Of the ehrForm bytes sent' }),
    ),
    ehrReference: Type.Optional(Type.String()),
    durationMs: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

const SentForm = Type.Object(
  {
    attemptId: Type.String({ format: 'uuid' }),
    messageId: Type.String({ description: '`<referralId>.v<version>`, also the Idempotency-Key sent' }),
    version: Type.Integer({ minimum: 1, description: 'The referral version the form was rendered from' }),
    sha256: Type.String({
      pattern: '^[0-9a-f]{64}$',
      description: 'Hex SHA-256 of the UTF-8 bytes of ehrForm',
    }),
    ehrFormType: Type.String({ description: 'The templates used, joined with |' }),
    ehrForm: Type.String({ description: 'The HTML document, exactly as it was sent' }),
  },
  { additionalProperties: false },
);

export function ehrSubmissionRoutes(ctx: AppContext) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/referrals/:referralId/ehr-submissions',
      {
        config: { action: 'ehr.submissions.read' },
        schema: {
          tags: ['EHR forwarding'],
          summary: 'List the attempts to forward a referral’s form to the EHR',
          description:
            'Oldest first. Sender and provider keys name the institution they act for; ops keys may omit it.',
          params: ReferralIdParams,
          querystring: Type.Object(
            {
              institutionIdType: Type.Optional(InstitutionIdType),
              institutionId: Type.Optional(InstitutionId),
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: { 200: Type.Object({ data: Type.Array(Submission) }), ...problemResponses },
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
          return { data: await ctx.ehrForwarding.submissions(reader, referralId) };
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
        return { data: await ctx.ehrForwarding.submissions(caller, referralId) };
      },
    );

    app.get(
      '/referrals/:referralId/ehr-submissions/:attemptId/form',
      {
        config: { action: 'ehr.submissions.form.read' },
        schema: {
          tags: ['EHR forwarding'],
          summary: 'Get the form one attempt sent to the EHR, with its hash',
          description:
            'The exact bytes the attempt sent (every attempt of one message ID sends the same), with the ' +
            'SHA-256 the ledger recorded: proof afterwards of what the EHR received. Sender and provider keys only.',
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
          response: { 200: SentForm, ...problemResponses },
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
        return ctx.ehrForwarding.formOfAttempt(caller, referralId, attemptId);
      },
    );
  };
}
