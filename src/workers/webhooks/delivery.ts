// One delivery of an event to one subscription: the body, the Standard Webhooks signature, the POST,
// and the attempt's record with what it means for the subscription (a success ends a failing
// streak; 410 Gone disables it; failing for WEBHOOK_DISABLE_AFTER_SECONDS disables it). The webhook
// worker and a subscription's test event both deliver through here.
import { v7 as uuidv7 } from 'uuid';
import type { Clock } from '../../domain/clock.ts';
import type { Stores } from '../../db/stores.ts';
import type { AttemptOutcome, WebhookAttempt } from '../../db/webhooks/attempts.repository.ts';
import type { SigningSubscription } from '../../db/webhooks/subscriptions.repository.ts';
import type { Metrics } from '../../observability/metrics.ts';
import type { EventView } from '../../domain/events.ts';
import { signedHeaders } from '../../domain/webhooks-signature.ts';
import type { WebhookAnswer, WebhookClient } from './webhooks-client.ts';

export interface DeliveryDeps {
  /** The subscriptions (read for signing, and where each attempt is recorded) and the event feed. */
  readonly stores: Pick<Stores, 'webhooks' | 'events'>;
  readonly clock: Clock;
  readonly client: WebhookClient;
  /** `jobSetAside` is the worker's (webhooks.worker.ts), which runs each delivery with these. */
  readonly metrics: Pick<Metrics, 'observeWebhookAttempt' | 'webhookSubscriptionDisabled' | 'jobSetAside'>;
  /** A subscription failing for this long without a success is disabled. */
  readonly disableAfterMs: number;
}

/** The body of a delivery, as Standard Webhooks lays it out: type, timestamp and the event as data. */
export function deliveryBody(view: EventView): string {
  return JSON.stringify({ type: view.type, timestamp: view.occurredAt, data: view });
}

/** The attempt as recorded, and what it meant for the subscription. */
export interface AttemptRecord extends Omit<WebhookAttempt, 'subscriptionId'> {
  /** The receiver answered 410 Gone: the subscription is now disabled. */
  readonly gone: boolean;
  /** This failure disabled the subscription (failing too long). */
  readonly disabledForFailing: boolean;
}

export interface DeliveryInput {
  readonly subscription: SigningSubscription;
  readonly view: EventView;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** No retry follows a failure of this attempt. */
  readonly final: boolean;
  /** The attempt an operator's replay repeats, which this attempt names (ledger-search). */
  readonly replayOf?: string;
}

/** Sends one signed delivery and records it. Never throws for what the receiver answered. */
export async function deliverOnce(deps: DeliveryDeps, input: DeliveryInput): Promise<AttemptRecord> {
  const { subscription, view } = input;
  const body = deliveryBody(view);
  const attemptedAt = deps.clock.now();
  const headers = signedHeaders(
    subscription.secrets,
    view.id,
    Math.floor(attemptedAt.getTime() / 1000),
    body,
  );
  const started = performance.now();
  const answer = await deps.client.post({ url: subscription.url, body, headers });
  const durationMs = Math.max(0, Math.round(performance.now() - started));
  const delivered = answer.kind === 'response' && answer.status >= 200 && answer.status < 300;
  const gone = answer.kind === 'response' && answer.status === 410;
  const outcome: AttemptOutcome = delivered ? 'delivered' : gone || input.final ? 'failed' : 'retrying';
  const record = {
    id: uuidv7(),
    eventId: view.id,
    eventType: view.type,
    attempt: input.attempt,
    attemptedAt,
    outcome,
    httpStatus: answer.kind === 'response' ? answer.status : null,
    durationMs,
    errorCode: answer.kind === 'network-error' ? answer.code : null,
    replayOf: input.replayOf ?? null,
  };
  const disabledForFailing = await deps.stores.webhooks.subscriptions.recordAttempt(
    { ...record, subscriptionId: subscription.id },
    delivered ? 'delivered' : gone ? 'gone' : 'failed',
    deps.clock.now(),
    deps.disableAfterMs,
  );
  deps.metrics.observeWebhookAttempt(
    outcome,
    answer.kind === 'response' ? answer.status : null,
    durationMs / 1000,
  );
  if (gone) deps.metrics.webhookSubscriptionDisabled('gone');
  if (disabledForFailing) deps.metrics.webhookSubscriptionDisabled('failing');
  return { ...record, gone, disabledForFailing };
}

/** `HTTP_503`, or the network error's code: what a failed attempt leaves in Redis and logs. */
export function failureCode(answer: Pick<AttemptRecord, 'httpStatus' | 'errorCode'>): string {
  return answer.httpStatus !== null ? `HTTP_${answer.httpStatus}` : (answer.errorCode ?? 'NETWORK_ERROR');
}

export type { WebhookAnswer };
