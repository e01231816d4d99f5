// What each outbox topic becomes on the queues: a forward (one at a time or a batch), a forward made
// sure of again, a provider's reminder schedule set or removed, or the scans of a referral's files.
// The outbox relay claims the rows and calls these; the lifecycle table decides which topics a change
// writes.
import type { OutboxMessage } from '../db/outbox.repository.ts';
import type { Stores } from '../db/stores.ts';
import { OUTBOX_TOPICS } from '../domain/lifecycle.ts';
import type { QueuedForward } from './forward.queue.ts';
import type { OutboxBatchHandlers, OutboxHandlers } from './outbox-relay.ts';
import type { QueueProducer, ReminderSchedule } from './producer.ts';
import { institutionKey } from './registry.ts';

export interface OutboxTopicDeps {
  readonly queues: Pick<
    QueueProducer,
    | 'enqueueForward'
    | 'enqueueForwards'
    | 'ensureForward'
    | 'scheduleReminders'
    | 'removeReminders'
    | 'enqueueScans'
  >;
  /** The referral's reminder schedule now, or null when it should have none. */
  readonly reminders: { scheduleFor(referralId: string): Promise<ReminderSchedule | null> };
  /** Where the files that wait for a scan are read. */
  readonly stores: Pick<Stores, 'attachments'>;
}

/** The forward an outbox row asks for, in its sender's backlog. */
function forwardOf(m: OutboxMessage): QueuedForward {
  return {
    referralId: m.referralId,
    version: m.version,
    requestId: m.requestId,
    institution: institutionKey(m.sender),
  };
}

/** Outbox topics whose rows go to the queues a batch at a time. */
export function outboxBatchHandlers(deps: Pick<OutboxTopicDeps, 'queues'>): OutboxBatchHandlers {
  return {
    [OUTBOX_TOPICS.forward]: (messages) => deps.queues.enqueueForwards(messages.map(forwardOf)),
  };
}

/** The handlers that turn outbox rows into queue work. */
export function outboxHandlers(deps: OutboxTopicDeps): OutboxHandlers {
  return {
    [OUTBOX_TOPICS.forward]: (m) => deps.queues.enqueueForward(forwardOf(m)),
    [OUTBOX_TOPICS.forwardAgain]: async (m) => {
      await deps.queues.ensureForward(forwardOf(m));
    },
    [OUTBOX_TOPICS.reminders]: async (m) => {
      const schedule = await deps.reminders.scheduleFor(m.referralId);
      if (schedule === null) await deps.queues.removeReminders(m.referralId);
      else await deps.queues.scheduleReminders(m.referralId, schedule);
    },
    // Every file of the referral that waits, read when the row is relayed: a file added by a change
    // whose row is relayed later is queued by that row too, and a job already queued is not added
    // twice (enqueueScans). Where nothing scans, no file waits and nothing is queued.
    [OUTBOX_TOPICS.attachmentScan]: async (m) => {
      await deps.queues.enqueueScans(await deps.stores.attachments.pendingScanOf(m.referralId));
    },
  };
}
