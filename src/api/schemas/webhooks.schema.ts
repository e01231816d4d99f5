// Webhook subscriptions and their delivery attempts. The signing secret appears only in the answers
// that create or rotate it, and not in their replays (Idempotency-Key), which say so in `secretShown`.
import { Type } from 'typebox';
import { EVENT_TYPES } from '../../domain/events.ts';
import { Timestamp } from './primitives.ts';
import { named, ref } from './named.ts';

export const EndpointUrl = Type.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'Where deliveries are POSTed: `https` (plain `http` only outside production); in production its host must ' +
    'resolve to public addresses only, unless an operator allowed it (WEBHOOK_ALLOWED_ADDRESSES).',
});

export const EventTypeList = Type.Array(Type.String({ maxLength: 100, pattern: '^[a-z][a-z0-9.-]*$' }), {
  maxItems: 50,
  description: `The event types wanted; omitted or empty means every type. Known types: ${EVENT_TYPES.join(', ')}.`,
});

export const SubscriptionDescription = Type.String({ maxLength: 500, description: 'A note for people' });

const SubscriptionFields = {
  id: Type.String({ format: 'uuid' }),
  url: Type.String({ maxLength: 2048 }),
  eventTypes: Type.Optional(
    Type.Array(Type.String({ maxLength: 100 }), {
      maxItems: 50,
      description: 'The event types delivered; absent means every type',
    }),
  ),
  description: Type.Optional(Type.String({ maxLength: 500 })),
  enabled: Type.Boolean({ description: 'Whether events are delivered' }),
  disabledReason: Type.Optional(
    Type.Enum(['by-institution', 'gone', 'failing'], {
      description:
        '`by-institution`: you disabled it; `gone`: the receiver answered 410; `failing`: deliveries kept ' +
        'failing for WEBHOOK_DISABLE_AFTER_SECONDS. Enable it again with `enabled: true`.',
    }),
  ),
  disabledAt: Type.Optional(Timestamp),
  failingSince: Type.Optional({ ...Timestamp, description: 'The first failure since the last success' }),
  previousSecretExpiresAt: Type.Optional({
    ...Timestamp,
    description: 'After a rotation, the previous secret signs beside the new one until then',
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};

export const WebhookSubscription = named(
  'WebhookSubscription',
  Type.Object(SubscriptionFields, { additionalProperties: false }),
);

export const WebhookSubscriptionWithSecret = named(
  'WebhookSubscriptionWithSecret',
  Type.Object(
    {
      ...SubscriptionFields,
      secret: Type.Optional(
        Type.String({
          maxLength: 100,
          description:
            'The signing secret (`whsec_…`), shown only now: verify deliveries with it (Standard Webhooks). ' +
            'Absent when `secretShown` is false.',
        }),
      ),
      secretShown: Type.Boolean({
        description:
          '`true` in the answer that made the secret, which carries it. `false` in a replay of that answer ' +
          '(the same Idempotency-Key, `Idempotent-Replayed: true`): the secret was shown only in the first ' +
          'answer and is not shown again. If that answer was lost, rotate the secret.',
      }),
    },
    { additionalProperties: false },
  ),
);

export const WebhookSubscriptionList = named(
  'WebhookSubscriptionList',
  Type.Object(
    { data: Type.Array(ref(WebhookSubscription), { maxItems: 100, description: 'Oldest first.' }) },
    { additionalProperties: false },
  ),
);

export const WebhookAttempt = named(
  'WebhookAttempt',
  Type.Object(
    {
      id: Type.String({ format: 'uuid' }),
      eventId: Type.String({ format: 'uuid', description: 'Also the delivery’s `webhook-id`' }),
      eventType: Type.String({ maxLength: 100 }),
      attempt: Type.Integer({ minimum: 1 }),
      attemptedAt: Timestamp,
      outcome: Type.Enum(['delivered', 'retrying', 'failed'], {
        description: '`retrying`: it failed and another attempt is scheduled',
      }),
      httpStatus: Type.Optional(Type.Integer({ description: 'The receiver’s answer, when it answered' })),
      durationMs: Type.Integer({ minimum: 0 }),
      errorCode: Type.Optional(
        Type.String({ maxLength: 64, description: 'Why no answer came, such as WEBHOOK_ATTEMPT_TIMEOUT' }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const WebhookAttemptList = named(
  'WebhookAttemptList',
  Type.Object(
    { data: Type.Array(ref(WebhookAttempt), { maxItems: 500, description: 'Newest first.' }) },
    { additionalProperties: false },
  ),
);
