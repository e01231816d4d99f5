// An operator's replay: delivers one event again, or every event since a time, to the enabled
// subscriptions that may see it (or to one named subscription). Replayed deliveries are new jobs with
// the event's own `webhook-id`, so a receiver that already has the event recognises the duplicate.
import { v7 as uuidv7 } from 'uuid';
import { NotFoundError } from '../../errors.ts';
import type { ReferralEvent } from '../../db/events.repository.ts';
import { FEED_START } from '../../domain/events.ts';
import type { WebhookSubscription } from '../../db/webhooks/subscriptions.repository.ts';
import type { Stores } from '../../db/stores.ts';
import type { QueueProducer } from '../../queue/producer.ts';
import { audienceOf, subscribersOf } from '../../queue/webhooks-relay.ts';
import { institutionKey } from '../../queue/registry.ts';

export interface ReplayDeps {
  readonly stores: Pick<Stores, 'webhooks' | 'events'>;
  readonly queues: Pick<QueueProducer, 'enqueueWebhooks'>;
}

export interface ReplayResult {
  readonly events: number;
  readonly deliveries: number;
}

const BATCH = 500;

export function createWebhookReplay(deps: ReplayDeps) {
  const subscriptions = deps.stores.webhooks.subscriptions;
  const events = deps.stores.events;

  async function targets(batch: readonly ReferralEvent[], only: WebhookSubscription | undefined) {
    const candidates =
      only === undefined ? await subscriptions.enabledFor(batch.flatMap(audienceOf)) : [only];
    return batch.flatMap((event) =>
      subscribersOf(event, candidates).map((s) => ({
        eventId: event.id,
        subscriptionId: s.id,
        institution: institutionKey(s.institution),
      })),
    );
  }

  async function named(subscriptionId: string | undefined) {
    if (subscriptionId === undefined) return undefined;
    const found = (await subscriptions.all()).find((s) => s.id === subscriptionId);
    if (found === undefined) throw new NotFoundError(`No webhook subscription ${subscriptionId}.`);
    return found;
  }

  return {
    async replayEvent(eventId: string, subscriptionId?: string): Promise<ReplayResult> {
      const only = await named(subscriptionId);
      const event = await events.byId(eventId);
      if (event === undefined) throw new NotFoundError(`No event ${eventId} (it may be past retention).`);
      const jobs = await targets([event], only);
      await deps.queues.enqueueWebhooks(jobs, uuidv7());
      return { events: 1, deliveries: jobs.length };
    },

    /** `onProgress` hears, after each batch, how many of the events found at the start are done. */
    async replaySince(
      since: Date,
      subscriptionId?: string,
      onProgress?: (done: number, total: number) => void,
    ): Promise<ReplayResult> {
      const only = await named(subscriptionId);
      const replay = uuidv7();
      const expected = onProgress === undefined ? 0 : await events.countOccurredSince(since);
      let from = FEED_START;
      let total = { events: 0, deliveries: 0 };
      for (;;) {
        const batch = await events.occurredSince(since, from, BATCH);
        const last = batch.at(-1);
        if (last === undefined) return total;
        const jobs = await targets(batch, only);
        await deps.queues.enqueueWebhooks(jobs, replay);
        total = { events: total.events + batch.length, deliveries: total.deliveries + jobs.length };
        onProgress?.(total.events, expected);
        from = last.at;
      }
    },
  };
}

export type WebhookReplay = ReturnType<typeof createWebhookReplay>;
