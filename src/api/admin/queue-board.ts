// bull-board over refhub's queues, served under /admin/queues. Its queues are attached on the
// first granted request, not when the app is built: the queue producer connects to Redis on first
// use, and an API process whose dashboard nobody opens should not hold a Redis connection for it.
// Every API answer of the board passes through the redaction hook (job-redaction.ts). The board's
// page formats job times in the browser; it is told the display zone and the nearest format to the
// one refhub writes everywhere else (display-time.ts).
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { QueueAdapterOptions } from '@bull-board/api/typings/app';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyPluginCallback } from 'fastify';
import { BROWSER_TIME_LOCALE, browserDateTimeFormat } from '../../domain/display-time.ts';
import type { QueueProducer } from '../../queue/producer.ts';
import {
  ATTACHMENT_SCAN_QUEUE,
  WAIT_TIMES_QUEUE,
  INCIDENTS_QUEUE,
  FORWARD_QUEUE,
  QUEUE_NAMES,
  REMINDERS_QUEUE,
  RETENTION_QUEUE,
  TRIAGE_OVERDUE_QUEUE,
  WEBHOOKS_QUEUE,
  type QueueName,
} from '../../queue/registry.ts';
import { ADMIN_PATH, BOARD_PATH } from '../../render/pages/admin-overview.page.ts';
import { redactBoardBody } from './job-redaction.ts';

export interface QueueBoardDeps {
  /** The producer, asked for only when the board is first used. */
  readonly producer: () => QueueProducer;
  /** OPS_DASHBOARD_WRITE: without it the board is read-only (and the server refuses changes). */
  readonly writable: boolean;
  /** DISPLAY_TIME_ZONE: the board shows job times in it, as every other page does. */
  readonly timeZone: string;
}

/**
 * What the board's page is told about times: the locale it formats them in and, for each of its
 * three cases (a time today, this year, or earlier), the same format, so that every time on it is
 * written one way, with its zone, whatever the zone of the browser that shows it.
 */
export function boardTimeConfig(timeZone: string) {
  const format = browserDateTimeFormat(timeZone);
  return {
    locale: { lng: BROWSER_TIME_LOCALE },
    dateFormats: { short: format, common: format, full: format },
  };
}

export interface QueueBoard {
  /** The Fastify plugin, to register with `{ prefix: BOARD_PATH }`. */
  readonly plugin: FastifyPluginCallback;
  /** Attaches the queues; later calls do nothing. */
  attach(): void;
}

const DESCRIPTIONS: Readonly<Record<QueueName, { displayName: string; description: string }>> = {
  [FORWARD_QUEUE]: {
    displayName: 'EHR forwarding',
    description:
      'Sends submitted and cancelled referrals to the national EHR. Job: referral ID, version, request ID.',
  },
  [REMINDERS_QUEUE]: {
    displayName: 'Provider reminders',
    description: 'Reminds providers of referrals waiting for acceptance. Job: referral ID.',
  },
  [WEBHOOKS_QUEUE]: {
    displayName: 'Webhook deliveries',
    description:
      'Delivers referral events to institutions’ webhook subscriptions. Job: event ID, subscription ID.',
  },
  [TRIAGE_OVERDUE_QUEUE]: {
    displayName: 'Triage overdue',
    description:
      'Sweeps the referrals whose triage passed its due time and says so on their timelines. Job: none.',
  },
  [ATTACHMENT_SCAN_QUEUE]: {
    displayName: 'Attachment scans',
    description:
      'Scans each attachment for malware before anyone may read it. Job: attachment ID, referral ID.',
  },
  [RETENTION_QUEUE]: {
    displayName: 'Retention',
    description:
      'Makes the month partitions ahead, and archives, verifies and drops each month past its retention. ' +
      'Job: none.',
  },
  [WAIT_TIMES_QUEUE]: {
    displayName: 'Wait times',
    description:
      "Recomputes every offering's wait times from the timeline, nightly and once as a worker starts. " +
      'Job: what asked for the run (schedule or start).',
  },
  [INCIDENTS_QUEUE]: {
    displayName: 'Incidents',
    description:
      'Looks at the conditions an operator must act on, opens and resolves incidents, and sends the ' +
      'ops webhooks. Job: none.',
  },
};

export function createQueueBoard(deps: QueueBoardDeps): QueueBoard {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  const board = createBullBoard({
    queues: [],
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: 'refhub queues',
        hideDocsLink: true,
        miscLinks: [{ text: 'Ops overview', url: ADMIN_PATH }],
        ...boardTimeConfig(deps.timeZone),
      },
      handlerHooks: {
        // The hook may reshape a body, which bull-board types as its declared response.
        after: (context, result) =>
          ({ ...result, body: redactBoardBody(context.route, result.status, result.body) }) as typeof result,
      },
    },
  });
  let attached = false;
  return {
    plugin: serverAdapter.registerPlugin(),
    attach() {
      if (attached) return;
      attached = true;
      const producer = deps.producer();
      board.setQueues(
        QUEUE_NAMES.map((name) => {
          // BaseAdapter reads allowCompletedRetries, but BullMQAdapter's signature leaves it out.
          const options: Partial<QueueAdapterOptions> & { allowCompletedRetries: boolean } = {
            readOnlyMode: !deps.writable,
            allowCompletedRetries: false,
            ...DESCRIPTIONS[name],
          };
          return new BullMQAdapter(producer.queues[name], options);
        }),
      );
    },
  };
}
