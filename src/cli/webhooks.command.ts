// `refhub webhooks list` and `refhub webhooks replay`: what an operator sees of webhook subscriptions
// (IDs, state and the receiver's host, never a secret or a full URL), and a replay of deliveries
// after a receiver's outage. A replay since a time shows how far it is on a terminal.
import { InvalidArgumentError } from 'commander';
import type { WebhookSubscription } from '../db/webhooks/subscriptions.repository.ts';
import type { DisplayTime } from '../domain/display-time.ts';
import type { WebhookReplay } from '../services/webhooks/replay.service.ts';
import { plural } from './plural.ts';
import { withProgress } from './progress.ts';

export interface ListWebhooksDeps {
  /** Every subscription, enabled or not. */
  readonly allSubscriptions: () => Promise<readonly WebhookSubscription[]>;
  /** Times are written as the pages write them: in the display zone, with the zone named. */
  readonly displayTime: Pick<DisplayTime, 'dateTime'>;
}

/** The listing's first line: the names of its tab-separated columns. */
export const WEBHOOKS_HEADER = ['ID', 'INSTITUTION', 'STATE', 'FAILING SINCE', 'HOST'].join('\t');

export async function listWebhooks(deps: ListWebhooksDeps): Promise<void> {
  const subscriptions = await deps.allSubscriptions();
  if (subscriptions.length === 0) {
    process.stdout.write('No webhook subscriptions.\n');
    return;
  }
  process.stdout.write(`${WEBHOOKS_HEADER}\n`);
  for (const s of subscriptions) {
    const state =
      s.disabledAt === null
        ? 'enabled'
        : `disabled (${s.disabledReason ?? 'by-institution'}) ${deps.displayTime.dateTime(s.disabledAt)}`;
    const failing = s.failingSince === null ? '-' : deps.displayTime.dateTime(s.failingSince);
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
      ? await withProgress('Delivering events again', (report) =>
          deps.webhookReplay.replaySince(options.since ?? new Date(), options.subscription, report),
        )
      : await deps.webhookReplay.replayEvent(options.event, options.subscription);
  const events = plural(result.events, 'event');
  process.stdout.write(
    result.events === 0
      ? 'No events occurred since then: nothing was queued.\n'
      : result.deliveries === 0
        ? `No enabled subscription may see ${result.events === 1 ? 'that event' : `those ${events}`}: nothing was queued.\n`
        : `Queued ${plural(result.deliveries, 'delivery', 'deliveries')} of ${events} again; receivers see each event's own webhook-id.\n`,
  );
}
