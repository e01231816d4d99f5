// Webhook subscriptions, managed by a key of the institution they belong to: create, list, read,
// update, delete, rotate the secret, send a test event, read the attempts. Another institution's
// subscription does not exist for the caller (404). The secret is shown once, in the answer that
// creates or rotates it; after a rotation the previous secret keeps signing for ROTATION_OVERLAP_MS.
// Every change is audited.
import { v7 as uuidv7 } from 'uuid';
import type { Clock } from '../../domain/clock.ts';
import { EVENT_TYPES, TEST_EVENT_TYPE, type EventView } from '../../domain/events.ts';
import { LimitExceededError, NotFoundError, ValidationError } from '../../errors.ts';
import { auditEventOf } from '../../domain/audit.ts';
import type { WebhookAttempt } from '../../db/webhooks/attempts.repository.ts';
import type {
  SigningSubscription,
  SubscriptionPatch,
  WebhookSubscription,
} from '../../db/webhooks/subscriptions.repository.ts';
import type { Stores } from '../../db/stores.ts';
import type { Caller } from '../caller.ts';
import { checkEndpointUrl, type EndpointPolicy } from './endpoint-policy.ts';
import { newSigningSecret } from '../../domain/webhooks-signature.ts';

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
export const MAX_SUBSCRIPTIONS_PER_INSTITUTION = 20;

export interface SubscriptionView {
  id: string;
  url: string;
  eventTypes?: string[];
  description?: string;
  enabled: boolean;
  disabledReason?: 'by-institution' | 'gone' | 'failing';
  disabledAt?: string;
  failingSince?: string;
  previousSecretExpiresAt?: string;
  createdAt: string;
  updatedAt: string;
}

export interface AttemptView {
  id: string;
  eventId: string;
  eventType: string;
  attempt: number;
  attemptedAt: string;
  outcome: 'delivered' | 'retrying' | 'failed';
  httpStatus?: number;
  durationMs: number;
  errorCode?: string;
}

export interface SubscriptionInput {
  readonly url: string;
  readonly eventTypes?: readonly string[] | undefined;
  readonly description?: string | undefined;
}

export interface SubscriptionUpdate {
  readonly url?: string | undefined;
  /** An empty list, like none, means every type. */
  readonly eventTypes?: readonly string[] | undefined;
  readonly description?: string | undefined;
  readonly enabled?: boolean | undefined;
}

export function toSubscriptionView(s: WebhookSubscription, now: Date): SubscriptionView {
  const previousUntil = s.previousSecretExpiresAt;
  return {
    id: s.id,
    url: s.url,
    ...(s.eventTypes === null ? {} : { eventTypes: [...s.eventTypes] }),
    ...(s.description === null ? {} : { description: s.description }),
    enabled: s.disabledAt === null,
    ...(s.disabledReason === null ? {} : { disabledReason: s.disabledReason }),
    ...(s.disabledAt === null ? {} : { disabledAt: s.disabledAt.toISOString() }),
    ...(s.failingSince === null ? {} : { failingSince: s.failingSince.toISOString() }),
    ...(previousUntil !== null && previousUntil.getTime() > now.getTime()
      ? { previousSecretExpiresAt: previousUntil.toISOString() }
      : {}),
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

export function toAttemptView(a: WebhookAttempt | Omit<WebhookAttempt, 'subscriptionId'>): AttemptView {
  return {
    id: a.id,
    eventId: a.eventId,
    eventType: a.eventType,
    attempt: a.attempt,
    attemptedAt: a.attemptedAt.toISOString(),
    outcome: a.outcome,
    ...(a.httpStatus === null ? {} : { httpStatus: a.httpStatus }),
    durationMs: a.durationMs,
    ...(a.errorCode === null ? {} : { errorCode: a.errorCode }),
  };
}

/** null for "every type"; a 400 naming each unknown type. */
function eventTypesOf(types: readonly string[] | undefined): readonly string[] | null {
  if (types === undefined || types.length === 0) return null;
  const unknown = types
    .map((type, index) => ({ type, index }))
    .filter(({ type }) => !EVENT_TYPES.includes(type));
  if (unknown.length > 0) {
    throw new ValidationError(
      unknown.map(({ index }) => ({
        path: `body.eventTypes.${index}`,
        message: `is not an event type; use one of ${EVENT_TYPES.join(', ')}`,
      })),
    );
  }
  return [...new Set(types)].sort();
}

export interface SubscriptionDeps {
  readonly stores: Pick<Stores, 'webhooks' | 'audit'>;
  readonly clock: Clock;
  readonly endpoints: EndpointPolicy;
  /**
   * Sends one signed delivery once and records the attempt: the webhook worker's own delivery, passed
   * in by the composition root, so a test event goes out exactly as every delivery does. Its HTTP
   * client is opened on first use (the API opens none until a test is sent).
   */
  readonly deliver: (input: {
    readonly subscription: SigningSubscription;
    readonly view: EventView;
    readonly attempt: number;
    readonly final: boolean;
  }) => Promise<Omit<WebhookAttempt, 'subscriptionId'>>;
}

export function createWebhookSubscriptions(deps: SubscriptionDeps) {
  const repo = deps.stores.webhooks.subscriptions;
  const notFound = (id: string) => new NotFoundError(`No webhook subscription ${id} for this institution.`);

  async function audited(caller: Caller, action: string): Promise<void> {
    await deps.stores.audit.record(auditEventOf(caller, action, [], deps.clock.now()));
  }

  async function found(caller: Caller, id: string): Promise<WebhookSubscription> {
    const subscription = await repo.findFor(caller.institution, id);
    if (subscription === undefined) throw notFound(id);
    return subscription;
  }

  return {
    async create(caller: Caller, input: SubscriptionInput): Promise<SubscriptionView & { secret: string }> {
      const url = await checkEndpointUrl(input.url, deps.endpoints, 'body.url');
      const eventTypes = eventTypesOf(input.eventTypes);
      if ((await repo.countFor(caller.institution)) >= MAX_SUBSCRIPTIONS_PER_INSTITUTION) {
        throw new LimitExceededError(
          `An institution can have at most ${MAX_SUBSCRIPTIONS_PER_INSTITUTION} webhook subscriptions.`,
        );
      }
      const secret = newSigningSecret();
      const now = deps.clock.now();
      const created = await repo.insert({
        id: uuidv7(),
        institution: caller.institution,
        url,
        eventTypes,
        description: input.description ?? null,
        secret,
        now,
      });
      await audited(caller, 'webhooks.subscription.create');
      return { ...toSubscriptionView(created, now), secret };
    },

    async list(caller: Caller): Promise<SubscriptionView[]> {
      const now = deps.clock.now();
      return (await repo.listFor(caller.institution)).map((s) => toSubscriptionView(s, now));
    },

    async get(caller: Caller, id: string): Promise<SubscriptionView> {
      return toSubscriptionView(await found(caller, id), deps.clock.now());
    },

    async update(caller: Caller, id: string, input: SubscriptionUpdate): Promise<SubscriptionView> {
      const patch: SubscriptionPatch = {
        ...(input.url === undefined
          ? {}
          : { url: await checkEndpointUrl(input.url, deps.endpoints, 'body.url') }),
        ...(input.eventTypes === undefined ? {} : { eventTypes: eventTypesOf(input.eventTypes) }),
        ...(input.description === undefined ? {} : { description: input.description }),
        ...(input.enabled === undefined ? {} : { enabled: input.enabled }),
      };
      const now = deps.clock.now();
      const updated = await repo.update(caller.institution, id, patch, now);
      if (updated === undefined) throw notFound(id);
      await audited(caller, 'webhooks.subscription.update');
      return toSubscriptionView(updated, now);
    },

    /** Deletes the subscription and its attempts; returns it as it was. */
    async delete(caller: Caller, id: string): Promise<SubscriptionView> {
      const before = await found(caller, id);
      if (!(await repo.delete(caller.institution, id))) throw notFound(id);
      await audited(caller, 'webhooks.subscription.delete');
      return toSubscriptionView(before, deps.clock.now());
    },

    async rotateSecret(caller: Caller, id: string): Promise<SubscriptionView & { secret: string }> {
      const secret = newSigningSecret();
      const now = deps.clock.now();
      const rotated = await repo.rotate(
        caller.institution,
        id,
        secret,
        new Date(now.getTime() + ROTATION_OVERLAP_MS),
        now,
      );
      if (rotated === undefined) throw notFound(id);
      await audited(caller, 'webhooks.subscription.rotate-secret');
      return { ...toSubscriptionView(rotated, now), secret };
    },

    /**
     * Sends a `webhook.test` event to the subscription now, signed like every delivery, once (no
     * retry), and answers with the attempt. It works on a disabled subscription too, to check a fix.
     */
    async sendTest(caller: Caller, id: string): Promise<AttemptView> {
      await found(caller, id);
      const now = deps.clock.now();
      const subscription = await repo.forSigning(id, now);
      if (subscription === undefined) throw notFound(id);
      const eventId = uuidv7();
      const record = await deps.deliver({
        subscription,
        attempt: 1,
        final: true,
        view: {
          id: eventId,
          type: TEST_EVENT_TYPE,
          occurredAt: now.toISOString(),
          referralId: '00000000-0000-0000-0000-000000000000',
          referralVersion: 1,
          institution: { idType: caller.institution.idType, id: caller.institution.id },
          system: caller.system,
          description: 'A test event from refhub: the subscription works.',
        },
      });
      await audited(caller, 'webhooks.subscription.test');
      return toAttemptView(record);
    },

    /** The subscription's latest attempts, newest first (of one event when `eventId` is given). */
    async attempts(caller: Caller, id: string, limit: number, eventId?: string): Promise<AttemptView[]> {
      await found(caller, id);
      return (await deps.stores.webhooks.attempts.latest(id, limit, eventId)).map(toAttemptView);
    },
  };
}

export type WebhookSubscriptions = ReturnType<typeof createWebhookSubscriptions>;
