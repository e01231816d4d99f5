// An offering's wait times (docs/api.md, "Wait times"): what the last computation found, for a sender
// choosing a service. The caller names its institution as on every read; the figures name no one.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ApiDeps } from '../api-deps.ts';
import { callerOf } from '../plugins/auth.ts';
import { institutionOf } from '../http.ts';
import { OfferingId } from '../schemas/primitives.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import { InstitutionParams } from '../schemas/referral.schema.ts';
import { problems, success } from '../schemas/responses.ts';
import { WaitTimes } from '../schemas/wait-times.schema.ts';

export type WaitTimesRoutesDeps = Pick<ApiDeps, 'waitTimes'>;

export function waitTimesRoutes(deps: WaitTimesRoutesDeps) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/offerings/:offeringId/wait-times',
      {
        config: { action: 'wait-times.read' },
        schema: {
          ...operation({
            operationId: 'getWaitTimes',
            tag: 'Referrals',
            scope: 'system/Referral.read',
            summary: "Read an offering's wait times",
            description:
              'How long referrals to the offering waited over the rolling window (WAIT_TIMES_WINDOW_DAYS, 180 ' +
              'days by default): submit → accepted and submit → the first appointment booked, the median ' +
              '(p50) and the ninth decile (p90) in days, without the time a referral waited for the sender, ' +
              'and the share declined, each with the number of referrals behind it. A figure made of fewer ' +
              'referrals than `minReferrals` is not given (`enoughData` is false). Computed nightly and soon ' +
              'after refhub starts: `computedAt` says when; before the first computation `computed` is ' +
              'false. An offering the catalog does not have is a 404.',
          }),
          params: Type.Object({ offeringId: OfferingId }, { additionalProperties: false }),
          querystring: Type.Object(InstitutionParams.properties, { additionalProperties: false }),
          response: { 200: success(ref(WaitTimes), "The offering's wait times."), ...problems() },
        },
      },
      async (request) => {
        // The key must act for the institution it names, as on every read.
        callerOf(request, institutionOf(request.query), undefined);
        return deps.waitTimes.forOffering(request.params.offeringId);
      },
    );
  };
}
