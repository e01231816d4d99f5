// Webhook subscriptions of an institution, managed by a key that acts for it: create, list, read,
// update, delete, rotate the secret, send a test event, and read the delivery attempts. Each handler
// checks the caller and calls one service function. The answers that show a secret say
// `secretShown: true`; their stored responses keep no secret (`shownOnce`, plugins/idempotency.ts).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ApiDeps } from '../api-deps.ts';
import { callerOf } from '../plugins/auth.ts';
import { institutionOf } from '../http.ts';
import { PostHeaders } from '../schemas/headers.ts';
import { RequesterIdentifier } from '../schemas/primitives.ts';
import { InstitutionParams } from '../schemas/referral.schema.ts';
import {
  EndpointUrl,
  EventTypeList,
  SubscriptionDescription,
  WebhookAttempt,
  WebhookAttemptList,
  WebhookSubscription,
  WebhookSubscriptionList,
  WebhookSubscriptionWithSecret,
} from '../schemas/webhooks.schema.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import { problems, success } from '../schemas/responses.ts';

const BASE = '/institutions/:institutionIdType/:institutionId/webhook-subscriptions';

const SubscriptionParams = Type.Object(
  { ...InstitutionParams.properties, subscriptionId: Type.String({ format: 'uuid', maxLength: 36 }) },
  { additionalProperties: false },
);

const Requester = Type.Object(
  { requesterIdentifier: Type.Optional(RequesterIdentifier) },
  { additionalProperties: false },
);

export type WebhookRoutesDeps = Pick<ApiDeps, 'webhookSubscriptions'>;

export function webhookRoutes(deps: WebhookRoutesDeps) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const subscriptions = deps.webhookSubscriptions;

    app.get(
      BASE,
      {
        config: { action: 'webhooks.subscription.list' },
        schema: {
          ...operation({
            operationId: 'listWebhookSubscriptions',
            tag: 'Webhooks',
            scope: 'system/Referral.read',
            summary: 'List the institution’s webhook subscriptions',
            description: 'Oldest first, without their secrets.',
          }),
          params: InstitutionParams,
          querystring: Requester,
          response: { 200: success(ref(WebhookSubscriptionList), 'The subscriptions.'), ...problems() },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return { data: await subscriptions.list(caller) };
      },
    );

    app.post(
      BASE,
      {
        config: { action: 'webhooks.subscription.create', shownOnce: 'secret' },
        schema: {
          ...operation({
            operationId: 'createWebhookSubscription',
            tag: 'Webhooks',
            scope: 'system/Referral.write',
            summary: 'Subscribe to the institution’s events',
            description:
              'Events of the referrals the institution may see are POSTed to `url`, signed as Standard Webhooks ' +
              'specifies. The answer carries the signing secret, the only time it is shown: a replay ' +
              '(the same Idempotency-Key) answers without it, with `secretShown: false`. At most 20 ' +
              'subscriptions per institution.',
          }),
          headers: PostHeaders,
          params: InstitutionParams,
          querystring: Requester,
          body: Type.Object(
            {
              url: EndpointUrl,
              eventTypes: Type.Optional(EventTypeList),
              description: Type.Optional(SubscriptionDescription),
            },
            { additionalProperties: false },
          ),
          response: {
            201: success(
              ref(WebhookSubscriptionWithSecret),
              'The subscription, with its secret (without it in a replay).',
              {
                idempotent: true,
              },
            ),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request, reply) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return reply
          .code(201)
          .send({ ...(await subscriptions.create(caller, request.body)), secretShown: true });
      },
    );

    app.get(
      `${BASE}/:subscriptionId`,
      {
        config: { action: 'webhooks.subscription.read' },
        schema: {
          ...operation({
            operationId: 'getWebhookSubscription',
            tag: 'Webhooks',
            scope: 'system/Referral.read',
            summary: 'Get a webhook subscription',
            description: 'Whether it is enabled, why not, and since when it fails; never its secret.',
          }),
          params: SubscriptionParams,
          querystring: Requester,
          response: { 200: success(ref(WebhookSubscription), 'The subscription.'), ...problems() },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return subscriptions.get(caller, request.params.subscriptionId);
      },
    );

    app.patch(
      `${BASE}/:subscriptionId`,
      {
        config: { action: 'webhooks.subscription.update' },
        schema: {
          ...operation({
            operationId: 'updateWebhookSubscription',
            tag: 'Webhooks',
            scope: 'system/Referral.write',
            summary: 'Change a webhook subscription',
            description:
              'Changes what is sent: the URL, the event types (an empty list means every type), the ' +
              'description. `enabled: false` pauses deliveries; `enabled: true` resumes them, also after ' +
              'refhub disabled the subscription, and forgets its failures.',
          }),
          params: SubscriptionParams,
          querystring: Requester,
          body: Type.Object(
            {
              url: Type.Optional(EndpointUrl),
              eventTypes: Type.Optional(EventTypeList),
              description: Type.Optional(SubscriptionDescription),
              enabled: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false, minProperties: 1 },
          ),
          response: { 200: success(ref(WebhookSubscription), 'The subscription, changed.'), ...problems() },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return subscriptions.update(caller, request.params.subscriptionId, request.body);
      },
    );

    app.delete(
      `${BASE}/:subscriptionId`,
      {
        config: { action: 'webhooks.subscription.delete' },
        schema: {
          ...operation({
            operationId: 'deleteWebhookSubscription',
            tag: 'Webhooks',
            scope: 'system/Referral.write',
            summary: 'Delete a webhook subscription',
            description: 'Nothing more is delivered to it, and its attempts are forgotten.',
          }),
          params: SubscriptionParams,
          querystring: Requester,
          response: { 200: success(ref(WebhookSubscription), 'The subscription as it was.'), ...problems() },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return subscriptions.delete(caller, request.params.subscriptionId);
      },
    );

    app.post(
      `${BASE}/:subscriptionId/rotate-secret`,
      {
        config: { action: 'webhooks.subscription.rotate-secret', shownOnce: 'secret' },
        schema: {
          ...operation({
            operationId: 'rotateWebhookSecret',
            tag: 'Webhooks',
            scope: 'system/Referral.write',
            summary: 'Give a webhook subscription a new signing secret',
            description:
              'The answer carries the new secret, the only time it is shown: a replay (the same ' +
              'Idempotency-Key) answers without it, with `secretShown: false`, and rotates nothing. For 24 ' +
              'hours deliveries are signed with both the new and the previous secret, so receivers can ' +
              'switch without losing any.',
          }),
          headers: PostHeaders,
          params: SubscriptionParams,
          querystring: Requester,
          response: {
            200: success(
              ref(WebhookSubscriptionWithSecret),
              'The subscription, with its new secret (without it in a replay).',
              {
                idempotent: true,
              },
            ),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return {
          ...(await subscriptions.rotateSecret(caller, request.params.subscriptionId)),
          secretShown: true,
        };
      },
    );

    app.post(
      `${BASE}/:subscriptionId/test`,
      {
        config: { action: 'webhooks.subscription.test' },
        schema: {
          ...operation({
            operationId: 'sendWebhookTest',
            tag: 'Webhooks',
            scope: 'system/Referral.write',
            summary: 'Send a test event to a webhook subscription',
            description:
              'Sends a `webhook.test` event now, signed like every delivery, once and without retries, and ' +
              'answers with the attempt: the receiver’s status, or why it could not be reached.',
          }),
          headers: PostHeaders,
          params: SubscriptionParams,
          querystring: Requester,
          response: {
            200: success(ref(WebhookAttempt), 'The attempt.', { idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return subscriptions.sendTest(caller, request.params.subscriptionId);
      },
    );

    app.get(
      `${BASE}/:subscriptionId/attempts`,
      {
        config: { action: 'webhooks.attempts.read' },
        schema: {
          ...operation({
            operationId: 'listWebhookAttempts',
            tag: 'Webhooks',
            scope: 'system/Referral.read',
            summary: 'List a webhook subscription’s delivery attempts',
            description:
              'Newest first: when, the receiver’s status, how long it took, and an error code when no answer ' +
              `came. Kept for RETENTION_WEBHOOK_ATTEMPTS_MONTHS whole months.`,
          }),
          params: SubscriptionParams,
          querystring: Type.Object(
            {
              eventId: Type.Optional(
                Type.String({ format: 'uuid', maxLength: 36, description: 'Only this event’s attempts' }),
              ),
              limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: { 200: success(ref(WebhookAttemptList), 'The attempts.'), ...problems() },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        const { subscriptionId } = request.params;
        return {
          data: await subscriptions.attempts(
            caller,
            subscriptionId,
            request.query.limit ?? 100,
            request.query.eventId,
          ),
        };
      },
    );
  };
}
