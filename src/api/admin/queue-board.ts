// bull-board over refhub's queues, served under /admin/queues. Its queues are attached on the
// first granted request, not when the app is built: the queue producer connects to Redis on first
// use, and an API process whose dashboard nobody opens should not hold a Redis connection for it.
// Every API answer of the board passes through the redaction hook (job-redaction.ts).
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import type { QueueAdapterOptions } from '@bull-board/api/typings/app';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyPluginCallback } from 'fastify';
import type { QueueProducer } from '../../queue/producer.ts';
import { QUEUE_NAMES, type QueueName } from '../../queue/registry.ts';
import { ADMIN_PATH, BOARD_PATH } from '../../render/pages/admin-overview.page.ts';
import { redactBoardBody } from './job-redaction.ts';

export interface QueueBoardDeps {
  /** The producer, asked for only when the board is first used. */
  readonly producer: () => QueueProducer;
  /** OPS_DASHBOARD_WRITE: without it the board is read-only (and the server refuses changes). */
  readonly writable: boolean;
}

export interface QueueBoard {
  /** The Fastify plugin, to register with `{ prefix: BOARD_PATH }`. */
  readonly plugin: FastifyPluginCallback;
  /** Attaches the queues; later calls do nothing. */
  attach(): void;
}

const DESCRIPTIONS: Readonly<Record<QueueName, { displayName: string; description: string }>> = {
  'ehr-forward': {
    displayName: 'EHR forwarding',
    description:
      'Sends submitted and cancelled referrals to the national EHR. Job: referral ID, version, request ID.',
  },
  reminders: {
    displayName: 'Provider reminders',
    description: 'Reminds providers of referrals waiting for acceptance. Job: referral ID.',
  },
  webhooks: {
    displayName: 'Webhook deliveries',
    description:
      'Delivers referral events to institutions’ webhook subscriptions. Job: event ID, subscription ID.',
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
