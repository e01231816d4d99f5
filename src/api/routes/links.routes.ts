// The link upsert (contract §5.7): a one-time URL into our web form, with the patient prefilled.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ApiDeps } from '../api-deps.ts';
import { ifMatchOf } from '../http.ts';
import { callerOf } from '../plugins/auth.ts';
import { InstitutionId, InstitutionIdType, ReferralId, RequesterIdentifier } from '../schemas/primitives.ts';
import { GuardedPostHeaders } from '../schemas/headers.ts';
import { LinkUpsertResponse } from '../schemas/links.schema.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import { ReferralFields } from '../schemas/referral.schema.ts';
import { problems, success } from '../schemas/responses.ts';

export type LinkRoutesDeps = Pick<ApiDeps, 'links'>;

export function linkRoutes(deps: LinkRoutesDeps) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.post(
      '/links/upsert',
      {
        config: { action: 'link.upsert' },
        schema: {
          ...operation({
            operationId: 'upsertLink',
            tag: 'Links',
            scope: 'system/Referral.write',
            summary: 'Create or update a referral link',
            description:
              'Without referralId, creates a draft from the prefill. With the referralId of a draft or of a ' +
              'referral that awaits the sender, applies the prefill. Either way it returns a fresh one-time ' +
              'URL into the web form. The URL never carries patient data. With a referralId, If-Match applies.',
          }),
          headers: GuardedPostHeaders,
          body: Type.Object(
            {
              requesterIdentifier: RequesterIdentifier,
              institutionIdType: InstitutionIdType,
              institutionId: InstitutionId,
              referralId: Type.Optional(ReferralId),
              ...ReferralFields,
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(LinkUpsertResponse), 'The referral and its one-time link.', {
              idempotent: true,
            }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const { requesterIdentifier, institutionIdType, institutionId, referralId, ...prefill } =
          request.body;
        const caller = callerOf(
          request,
          { idType: institutionIdType, id: institutionId },
          requesterIdentifier,
        );
        return deps.links.upsert({ ...caller, requesterIdentifier }, referralId, prefill, ifMatchOf(request));
      },
    );
  };
}
