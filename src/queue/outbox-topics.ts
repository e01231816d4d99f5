// What each outbox topic becomes on the queues: a forward (one at a time or a batch), a forward made
// sure of again, or a provider's reminder schedule set or removed. The outbox relay claims the rows
// and calls these; the lifecycle table decides which topics a change writes.
import type { OutboxBatchHandlers, OutboxHandlers } from './outbox-relay.ts';
import type { QueueProducer, ReminderSchedule } from './producer.ts';

export interface OutboxTopicDeps {
  readonly queues: Pick<
    QueueProducer,
    'enqueueForward' | 'enqueueForwards' | 'ensureForward' | 'scheduleReminders' | 'removeReminders'
  >;
  /** The referral's reminder schedule now, or null when it should have none. */
  readonly reminders: { scheduleFor(referralId: string): Promise<ReminderSchedule | null> };
}

/** Outbox topics whose rows go to the queues a batch at a time. */
export function outboxBatchHandlers(deps: Pick<OutboxTopicDeps, 'queues'>): OutboxBatchHandlers {
  return {
    'ehr-forward': (messages) =>
      deps.queues.enqueueForwards(
        messages.map((m) => ({ referralId: m.referralId, version: m.version, requestId: m.requestId })),
      ),
  };
}

/** The handlers that turn outbox rows into queue work. */
export function outboxHandlers(deps: OutboxTopicDeps): OutboxHandlers {
  return {
    'ehr-forward': (m) =>
      deps.queues.enqueueForward({ referralId: m.referralId, version: m.version, requestId: m.requestId }),
    'ehr-forward-again': async (m) => {
      await deps.queues.ensureForward({
        referralId: m.referralId,
        version: m.version,
        requestId: m.requestId,
      });
    },
    reminders: async (m) => {
      const schedule = await deps.reminders.scheduleFor(m.referralId);
      if (schedule === null) await deps.queues.removeReminders(m.referralId);
      else await deps.queues.scheduleReminders(m.referralId, schedule);
    },
  };
}
