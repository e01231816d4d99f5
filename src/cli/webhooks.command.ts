// `refhub webhooks list` and `refhub webhooks replay`: what an operator sees of webhook subscriptions
// (IDs, state and the receiver's host, never a secret or a full URL), and a replay of deliveries
// after a receiver's outage.
import { InvalidArgumentError } from 'commander';
import type { WebhookSubscription } from '../db/webhooks-subscription.repository.ts';
import type { WebhookReplay } from '../services/webhooks-replay.service.ts';

export interface ListWebhooksDeps {
  /** Every subscription, enabled or not. */
  readonly allSubscriptions: () => Promise<readonly WebhookSubscription[]>;
}

export async function listWebhooks(deps: ListWebhooksDeps): Promise<void> {
  for (const s of await deps.allSubscriptions()) {
    const state =
      s.disabledAt === null
        ? 'enabled'
        : `disabled (${s.disabledReason ?? 'by-institution'}) ${s.disabledAt.toISOString()}`;
    const failing = s.failingSince === null ? '' : `failing since ${s.failingSince.toISOString()}`;
    process.stdout.write(
      [s.id, `${s.institution.idType}:${s.institution.id}`, state, failing, new URL(s.url).host].join('\t') +
        '\n',
    );
  }
}

export interface ReplayWebhooksDeps {
  readonly webhookReplay: Pick<WebhookReplay, 'replayEvent' | 'replaySince'>;
}

export interface ReplayOptions {
  readonly event?: string;
  readonly since?: Date;
  readonly subscription?: string;
}

export async function replayWebhooks(deps: ReplayWebhooksDeps, options: ReplayOptions): Promise<void> {
  if ((options.event === undefined) === (options.since === undefined)) {
    throw new InvalidArgumentError('name an event with --event, or a time with --since (not both)');
  }
  const result =
    options.event === undefined
      ? await deps.webhookReplay.replaySince(options.since ?? new Date(), options.subscription)
      : await deps.webhookReplay.replayEvent(options.event, options.subscription);
  process.stdout.write(
    `Queued ${result.deliveries} deliveries of ${result.events} events again; receivers see each event's own webhook-id.\n`,
  );
}
