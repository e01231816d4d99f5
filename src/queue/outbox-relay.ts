// The outbox relay: turns outbox rows into queue work. It claims due rows in batches (FOR UPDATE
// SKIP LOCKED under a lease, so several relays share the work and a dead one's rows come back),
// dispatches each through its topic's handler, and deletes it. Handlers are idempotent
// (deterministic job IDs, deduplication, schedulers upserted by ID), so a row dispatched twice after
// a crash does no harm. While Redis is down, dispatch fails fast, the rows wait with a growing delay,
// and API writes go on succeeding.
import type { OutboxMessage } from '../db/outbox.repository.ts';
import type { Stores } from '../db/stores.ts';
import type { Clock } from '../domain/clock.ts';
import type { OutboxTopic } from '../domain/lifecycle.ts';
import type { Logger } from '../logger.ts';
import { QUEUE_UNAVAILABLE } from './connections.ts';
import { createPollLoop, errorCode } from './poll-loop.ts';

export type OutboxHandlers = Readonly<Record<OutboxTopic, (message: OutboxMessage) => Promise<void>>>;

/**
 * Topics whose rows are dispatched together: every claimed row of the topic in one call, in the order
 * they were written (the forward jobs of a batch go to Redis in one round trip). A topic without one
 * is dispatched row by row through its handler.
 */
export type OutboxBatchHandlers = Readonly<
  Partial<Record<OutboxTopic, (messages: readonly OutboxMessage[]) => Promise<void>>>
>;

export interface RelayDeps {
  readonly stores: Pick<Stores, 'outbox'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly handlers: OutboxHandlers;
  readonly batchHandlers?: OutboxBatchHandlers;
  readonly batchSize?: number;
  /** How long a claimed row stays invisible to other relays. */
  readonly leaseMs?: number;
  readonly idleMs?: number;
  /** A dispatch that takes longer fails (a producer may wait for a Redis that is not there). */
  readonly dispatchTimeoutMs?: number;
  /** How many referrals' rows are dispatched at once. */
  readonly concurrency?: number;
}

export interface OutboxRelay {
  /** Claims and dispatches one batch; returns how many rows were dispatched. */
  drainOnce(): Promise<{ dispatched: number; failed: number }>;
  /** Polls until stopped; a full batch is followed at once by the next. */
  start(): void;
  /** Resolves when the batch in progress has finished. */
  stop(): Promise<void>;
  /** Rows were written: claim them now instead of at the next poll. */
  wake(): void;
}

/** Short, so that work resumes soon after Redis comes back. */
const MAX_RETRY_DELAY_MS = 10_000;

export function createOutboxRelay(deps: RelayDeps): OutboxRelay {
  const batchSize = deps.batchSize ?? 100;
  const leaseMs = deps.leaseMs ?? 30_000;
  const idleMs = deps.idleMs ?? 200;
  const dispatchTimeoutMs = deps.dispatchTimeoutMs ?? 5_000;
  const concurrency = deps.concurrency ?? 32;

  function withinTimeout(work: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        reject(Object.assign(new Error('dispatch timed out'), { code: 'DISPATCH_TIMEOUT' }));
      }, dispatchTimeoutMs);
    });
    return Promise.race([work, timeout]).finally(() => {
      clearTimeout(timer);
    });
  }
  const dispatch = (message: OutboxMessage) => withinTimeout(deps.handlers[message.topic](message));

  async function drainOnce() {
    const now = deps.clock.now();
    const outbox = deps.stores.outbox;
    const claimed = await outbox.claim(batchSize, now, new Date(now.getTime() + leaseMs));
    const done: string[] = [];
    let failed = 0;
    // Once the queues are unreachable, the rest of the batch would only wait for the same answer.
    let unavailable: string | undefined;
    const handle = async (message: (typeof claimed)[number]) => {
      let code = unavailable;
      if (code === undefined) {
        try {
          await dispatch(message);
          done.push(message.id);
          return;
        } catch (error) {
          code = errorCode(error);
          if (code === QUEUE_UNAVAILABLE) unavailable = code;
        }
      }
      failed++;
      const delay = Math.min(1_000 * 2 ** Math.min(message.attempts - 1, 10), MAX_RETRY_DELAY_MS);
      await outbox.markFailed(message.id, code, new Date(deps.clock.now().getTime() + delay));
    };
    // Each dispatch waits on Redis (and a reminder's on the database too), so one at a time caps the
    // relay at a few hundred rows a second, and a burst of submits queues up in the outbox. Rows of
    // different referrals go out together; the rows of one referral still go one after another, in
    // the order they were written, because a later row may undo what an earlier one set up (a
    // reminder schedule removed after it was made).
    const lanes = new Map<string, (typeof claimed)[number][]>();
    const batches = new Map<OutboxTopic, (typeof claimed)[number][]>();
    for (const message of claimed) {
      if (deps.batchHandlers?.[message.topic] !== undefined) {
        batches.set(message.topic, [...(batches.get(message.topic) ?? []), message]);
        continue;
      }
      const lane = lanes.get(message.referralId);
      if (lane === undefined) lanes.set(message.referralId, [message]);
      else lane.push(message);
    }
    /** A topic's rows in one call: all dispatched, or all left for a later try with its code. */
    const handleBatch = async (topic: OutboxTopic, messages: (typeof claimed)[number][]) => {
      const send = deps.batchHandlers?.[topic];
      if (send === undefined) return;
      let code = unavailable;
      if (code === undefined) {
        try {
          await withinTimeout(send(messages));
          done.push(...messages.map((m) => m.id));
          return;
        } catch (error) {
          code = errorCode(error);
          if (code === QUEUE_UNAVAILABLE) unavailable = code;
        }
      }
      for (const message of messages) {
        failed++;
        const delay = Math.min(1_000 * 2 ** Math.min(message.attempts - 1, 10), MAX_RETRY_DELAY_MS);
        await outbox.markFailed(message.id, code, new Date(deps.clock.now().getTime() + delay));
      }
    };
    const queue = [...lanes.values()];
    await Promise.all([
      ...[...batches].map(([topic, messages]) => handleBatch(topic, messages)),
      ...Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
        for (let lane = queue.shift(); lane !== undefined; lane = queue.shift()) {
          for (const message of lane) await handle(message);
        }
      }),
    ]);
    await outbox.removeDispatched(done);
    if (failed > 0) {
      deps.logger.warn(
        { dispatched: done.length, failed },
        'outbox rows could not be dispatched; they will be retried',
      );
    }
    return { dispatched: done.length, failed };
  }

  const loop = createPollLoop(
    async () => {
      const { dispatched, failed } = await drainOnce();
      return dispatched + failed >= batchSize && failed === 0;
    },
    idleMs,
    (error) => {
      deps.logger.warn({ err: { code: errorCode(error) } }, 'outbox relay could not read the outbox');
    },
  );
  return { drainOnce, start: loop.start, stop: loop.stop, wake: loop.wake };
}
