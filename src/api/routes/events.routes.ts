// An institution's event feed: every event of the referrals it may see, in one total order, after an
// opaque cursor. A system that missed webhook deliveries (or never subscribed) catches up here.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ApiDeps } from '../api-deps.ts';
import { MAX_FEED_LIMIT, MAX_FEED_WAIT_SECONDS } from '../../domain/events.ts';
import { callerOf } from '../plugins/auth.ts';
import { institutionOf } from '../http.ts';
import { RequesterIdentifier } from '../schemas/primitives.ts';
import { EventPage } from '../schemas/events.schema.ts';
import { InstitutionParams } from '../schemas/referral.schema.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import { problems, success } from '../schemas/responses.ts';

export type EventRoutesDeps = Pick<ApiDeps, 'eventFeed'>;

export function eventRoutes(deps: EventRoutesDeps) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/institutions/:institutionIdType/:institutionId/events',
      {
        config: { action: 'events.read' },
        schema: {
          ...operation({
            operationId: 'listEvents',
            tag: 'Events',
            scope: 'system/Referral.read',
            summary: 'Read an institution’s event feed',
            description:
              'Every event of the referrals the institution may see (those it sends; those it receives once ' +
              'submitted), oldest first, in one total order: each event appears exactly once across pages, ' +
              'also while referrals change meanwhile. Start without `after`, then pass `metadata.next`. ' +
              'With `wait`, an empty page is held open up to that many seconds for a new event. Events are ' +
              'kept for EVENT_RETENTION_DAYS (default 30).',
          }),
          params: InstitutionParams,
          querystring: Type.Object(
            {
              after: Type.Optional(
                Type.String({
                  minLength: 1,
                  maxLength: 64,
                  description:
                    'The cursor of the last page read (`metadata.next`); omit to start at the oldest',
                }),
              ),
              limit: Type.Optional(
                Type.Integer({ minimum: 1, maximum: MAX_FEED_LIMIT, default: 100, description: 'Page size' }),
              ),
              wait: Type.Optional(
                Type.Integer({
                  minimum: 0,
                  maximum: MAX_FEED_WAIT_SECONDS,
                  default: 0,
                  description: 'Seconds to wait for an event when none is ready (long polling)',
                }),
              ),
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: { 200: success(ref(EventPage), 'The next events, in feed order.'), ...problems() },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        const gone = new AbortController();
        const onClose = () => {
          gone.abort();
        };
        // The response's close: the client went away (or the answer was sent).
        reply.raw.once('close', onClose);
        try {
          return await deps.eventFeed.read(caller, {
            after: request.query.after,
            limit: request.query.limit ?? 100,
            waitSeconds: request.query.wait ?? 0,
            signal: gone.signal,
          });
        } finally {
          reply.raw.off('close', onClose);
        }
      },
    );
  };
}
