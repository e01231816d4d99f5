// One webhook job: deliver one event to one subscription. It re-reads both first (the job may be late,
// repeated, or replayed): a subscription deleted or disabled meanwhile, an event past retention, or a
// type no longer wanted ends the job without an attempt. Otherwise it delivers (delivery.ts) and says
// what the queue should do: nothing more, retry, or stop for good (410 Gone).
import type { Logger } from '../../logger.ts';
import { audienceOf } from '../../queue/webhooks-relay.ts';
import type { SettledWebhook, WebhookPayload } from '../../queue/webhooks.queue.ts';
import { toEventView } from '../../domain/events.ts';
import { deliverOnce, failureCode, type DeliveryDeps } from './delivery.ts';

/** How a job ended without a retry, in words the dashboard may show. */

export type WebhookJobResult =
  | { readonly kind: 'settled'; readonly result: SettledWebhook }
  /** Failed; the queue retries it while attempts remain. `code` is `HTTP_503` or a network code. */
  | { readonly kind: 'retry'; readonly code: string }
  /** The receiver answered 410 Gone; the subscription is disabled and the job stops. */
  | { readonly kind: 'gone' };

export interface DeliverEventDeps extends DeliveryDeps {
  readonly logger: Logger;
}

export async function deliverEvent(
  deps: DeliverEventDeps,
  payload: WebhookPayload,
  attempt: number,
  maxAttempts: number,
): Promise<WebhookJobResult> {
  const settled = (result: SettledWebhook) => ({ kind: 'settled', result }) as const;
  const [subscription, event] = await Promise.all([
    deps.stores.webhooks.subscriptions.forSigning(payload.subscriptionId, deps.clock.now()),
    deps.stores.events.byId(payload.eventId),
  ]);
  if (subscription === undefined) return settled('subscription-deleted');
  if (subscription.disabledAt !== null) return settled('subscription-disabled');
  if (event === undefined) return settled('event-expired');
  const mine = (i: { idType: string; id: string }) =>
    i.idType === subscription.institution.idType && i.id === subscription.institution.id;
  if (
    !audienceOf(event).some(mine) ||
    (subscription.eventTypes !== null && !subscription.eventTypes.includes(event.type))
  ) {
    return settled('not-subscribed');
  }
  const record = await deliverOnce(deps, {
    subscription,
    view: toEventView(event, subscription.institution),
    attempt,
    final: attempt >= maxAttempts,
    ...(payload.replayOf === undefined ? {} : { replayOf: payload.replayOf }),
  });
  if (record.outcome === 'delivered') return settled('delivered');
  if (record.gone) {
    deps.logger.warn(
      { subscriptionId: subscription.id, eventId: event.id },
      'webhook receiver answered 410 Gone; the subscription is disabled',
    );
    return { kind: 'gone' };
  }
  if (record.disabledForFailing) {
    deps.logger.warn(
      { subscriptionId: subscription.id, failingSince: subscription.failingSince?.toISOString() },
      'webhook subscription kept failing; it is disabled',
    );
    return settled('subscription-disabled');
  }
  return { kind: 'retry', code: failureCode(record) };
}
