// The webhook relay: turns events into delivery jobs. The event feed is its outbox: it reads the
// events after its place, in the feed's gap-free order (db/events.repository.ts), finds the
// enabled subscriptions that may see each one (the sender's institution; the provider's once the
// referral left draft) and want its type, adds one job per (event, subscription) carrying the two IDs,
// and then moves its place forward. A crash between the two leaves the place where it was, so the
// batch is enqueued again under the same job IDs: deliveries are at least once, never skipped.
import type { ReferralEvent } from '../db/events.repository.ts';
import type { Stores } from '../db/stores.ts';
import type { WebhookSubscription } from '../db/webhooks/subscriptions.repository.ts';
import type { InstitutionRef } from '../domain/access.ts';
import type { Clock } from '../domain/clock.ts';
import type { Logger } from '../logger.ts';
import { institutionKey } from './job-settings.ts';
import { createPollLoop, errorCode } from './poll-loop.ts';
import type { WebhookPayload } from './webhooks.queue.ts';

export interface WebhookRelayDeps {
  /** The event feed, the relay's place in it, and the subscriptions. */
  readonly stores: Pick<Stores, 'events' | 'webhooks'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly enqueue: (jobs: readonly WebhookPayload[]) => Promise<void>;
  readonly batchSize?: number;
  readonly idleMs?: number;
}

export interface WebhookRelay {
  /** Relays one batch; returns how many events it moved past and how many jobs it added. */
  drainOnce(): Promise<{ events: number; jobs: number }>;
  start(): void;
  stop(): Promise<void>;
  /** Events were written: relay them now instead of at the next poll. */
  wake(): void;
}

const key = (i: InstitutionRef) => `${i.idType}:${i.id}`;

/** The institutions that may see an event: its sender, and its provider once out of draft. */
export function audienceOf(event: ReferralEvent): InstitutionRef[] {
  const provider = event.provider;
  return provider === null || key(provider) === key(event.sender) ? [event.sender] : [event.sender, provider];
}

/** The subscriptions an event goes to. */
export function subscribersOf(
  event: ReferralEvent,
  subscriptions: readonly WebhookSubscription[],
): WebhookSubscription[] {
  const audience = new Set(audienceOf(event).map(key));
  return subscriptions.filter(
    (s) =>
      s.disabledAt === null &&
      audience.has(key(s.institution)) &&
      (s.eventTypes === null || s.eventTypes.includes(event.type)),
  );
}

export function createWebhookRelay(deps: WebhookRelayDeps): WebhookRelay {
  const batchSize = deps.batchSize ?? 200;
  const idleMs = deps.idleMs ?? 200;

  async function drainOnce() {
    const place = deps.stores.webhooks.relay;
    const from = await place.read();
    const events = await deps.stores.events.pageAll(from, batchSize);
    const last = events.at(-1);
    if (last === undefined) return { events: 0, jobs: 0 };
    const institutions = new Map(events.flatMap(audienceOf).map((i) => [key(i), i]));
    const subscriptions = await deps.stores.webhooks.subscriptions.enabledFor([...institutions.values()]);
    const jobs = events.flatMap((event) =>
      subscribersOf(event, subscriptions).map((s) => ({
        eventId: event.id,
        subscriptionId: s.id,
        institution: institutionKey(s.institution),
      })),
    );
    if (jobs.length > 0) await deps.enqueue(jobs);
    await place.advance(from, last.at, deps.clock.now());
    return { events: events.length, jobs: jobs.length };
  }

  const loop = createPollLoop(
    async () => (await drainOnce()).events >= batchSize,
    idleMs,
    (error) => {
      deps.logger.warn(
        { err: { code: errorCode(error) } },
        'webhook relay could not relay events; it will retry',
      );
    },
  );
  return { drainOnce, start: loop.start, stop: loop.stop, wake: loop.wake };
}
