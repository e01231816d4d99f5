// The worklists (docs/api.md, "Worklists"): the provider's and the sender's named lists of the
// institution's referrals, a page at a time and audited as the list is, and the lists with their
// counts. Each handler checks the caller and calls one query.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ApiDeps } from '../api-deps.ts';
import { institutionOf } from '../http.ts';
import { callerOf } from '../plugins/auth.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import { RequesterIdentifier } from '../schemas/primitives.ts';
import { InstitutionParams, ListFilters } from '../schemas/referral.schema.ts';
import { problems, success } from '../schemas/responses.ts';
import { WorklistCounts, WorklistName, WorklistPage } from '../schemas/worklists.schema.ts';

export type WorklistRoutesDeps = Pick<ApiDeps, 'referralQueries'>;

export function worklistRoutes(deps: WorklistRoutesDeps) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/institutions/:institutionIdType/:institutionId/worklists',
      {
        config: { action: 'referral.worklists' },
        schema: {
          ...operation({
            operationId: 'listWorklists',
            tag: 'Worklists',
            scope: 'system/Referral.read',
            summary: 'List the worklists with their counts',
            description:
              'Every worklist of the institution, the provider’s and the sender’s, with how many referrals ' +
              'each has now: what a work queue’s tabs show.',
          }),
          params: InstitutionParams,
          querystring: Type.Object(
            { requesterIdentifier: Type.Optional(RequesterIdentifier) },
            { additionalProperties: false },
          ),
          response: { 200: success(ref(WorklistCounts), 'The worklists and their counts.'), ...problems() },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return deps.referralQueries.worklists(caller);
      },
    );

    app.get(
      '/institutions/:institutionIdType/:institutionId/worklists/:worklistName',
      {
        config: { action: 'referral.worklist' },
        schema: {
          ...operation({
            operationId: 'getWorklist',
            tag: 'Worklists',
            scope: 'system/Referral.read',
            summary: 'Get a page of a worklist',
            description:
              'The referrals of one worklist, a page at a time: ask again with `offset` + `pageSize` while ' +
              '`metadata.hasNext` is true. The provider’s lists come most pressing first (the earliest ' +
              '`dueAt`; none last), then the longest waiting; the sender’s, latest change first. Each item ' +
              'is the list’s summary with `dueAt` and `overdue`. Audited as the list is.',
          }),
          params: Type.Object(
            { ...InstitutionParams.properties, worklistName: WorklistName },
            { additionalProperties: false },
          ),
          querystring: Type.Object(
            {
              offset: ListFilters.offset,
              pageSize: ListFilters.pageSize,
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: { 200: success(ref(WorklistPage), 'One page of the worklist.'), ...problems() },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return deps.referralQueries.worklist(caller, request.params.worklistName, {
          offset: request.query.offset ?? 0,
          pageSize: request.query.pageSize ?? 10,
        });
      },
    );
  };
}
