// The reconciler on both engines, with real Redis under a queue prefix of its own. The database says
// what is due; Redis may have lost it. A forward that is due, quiet, and has no live job is enqueued
// again; one whose job waits, runs or whose outbox row is not dispatched yet is left alone. A pending
// referral's missing reminder schedule is rebuilt from its timeline. A repair is counted (metric and
// log) only for work that was really missing: not for a referral whose outbox rows the relay has yet to
// dispatch or is dispatching, nor for a forward a worker finished while the run looked at it.
import { randomUUID } from 'node:crypto';
import { UnrecoverableError } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OutboxMessage } from '../../src/db/outbox.repository.ts';
import { ehrSubmissionRepository } from '../../src/db/forwarding-ledger.repository.ts';
import { systemClock } from '../../src/domain/clock.ts';
import type { Logger } from '../../src/logger.ts';
import { createOutboxRelay } from '../../src/queue/outbox-relay.ts';
import { createReconciler } from '../../src/queue/reconciler.ts';
import type { QueueProducer } from '../../src/queue/producer.ts';
import { forwardJobId, QUEUE_NAMES } from '../../src/queue/registry.ts';
import { outboxHandlers } from '../../src/queue/outbox-topics.ts';
import { createQueueApp, manualForwardWorker, type QueueApp } from '../support/bridge.ts';
import { ENGINES } from '../support/engines.ts';
import { call, createDraft, type ReferralJson } from '../support/scenarios.ts';

const LIVE_STATES = ['wait', 'delayed', 'active', 'prioritized'] as const;

describe.each(ENGINES)('the reconciler on %s', (engine) => {
  let t: QueueApp;
  /** The app's logger, keeping the message of each warning the reconciler logs. */
  let watchedLogger: Logger;
  const warnings: string[] = [];

  beforeAll(async () => {
    t = await createQueueApp(engine, { env: { REMINDER_AFTER_SECONDS: '3600' } });
    const logger = t.ctx.logger;
    watchedLogger = new Proxy(logger, {
      get(target, property, receiver) {
        if (property !== 'warn') return Reflect.get(target, property, receiver) as unknown;
        return (fields: object, message: string) => {
          warnings.push(message);
          logger.warn(fields, message);
        };
      },
    });
  });
  afterAll(async () => {
    await t.close();
  });
  afterEach(async () => {
    // Each test starts from a clean slate: nothing due, nothing queued.
    await t.ctx.db.updateTable('referrals').set({ ehr_state: 'forwarded' }).execute();
    await t.ctx.db.deleteFrom('outbox').execute();
    await Promise.all(QUEUE_NAMES.map((name) => t.ctx.queues.queues[name].obliterate({ force: true })));
  });

  const forwards = () => t.ctx.queues.queues['ehr-forward'];
  const relay = () =>
    createOutboxRelay({
      db: t.ctx.db,
      clock: systemClock,
      logger: t.ctx.logger,
      handlers: outboxHandlers(t.ctx),
    });
  /** A reconciler that sees every forward as quiet at once (`quietMs` 0), unless told otherwise. */
  const reconciler = (quietMs = 0, pageSize?: number, producer: QueueProducer = t.ctx.queues) =>
    createReconciler({
      db: t.ctx.db,
      clock: systemClock,
      logger: watchedLogger,
      producer,
      metrics: t.ctx.metrics,
      reminderScheduleFor: (id) => t.ctx.reminders.scheduleFor(id),
      quietMs,
      ...(pageSize === undefined ? {} : { pageSize }),
    });
  /** `refhub_reconciler_repairs_total` of one kind, as Prometheus would scrape it. */
  const repairsCounted = async (kind: 'forward' | 'reminder-schedule'): Promise<number> => {
    const metric = await t.ctx.metrics.registry.getSingleMetric('refhub_reconciler_repairs_total')?.get();
    return metric?.values.find((v) => v.labels.kind === kind)?.value ?? 0;
  };
  const submitted = async (): Promise<ReferralJson> => {
    const draft = await createDraft(t);
    return (await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {})) as ReferralJson;
  };
  const liveJobIds = async () => (await forwards().getJobs([...LIVE_STATES])).map((j) => j.id).sort();
  const due = () => ehrSubmissionRepository(t.ctx.db).dueWithoutProgress(new Date(Date.now() + 60_000), 100);

  it('lists no due forward whose outbox row is still undispatched, nor one that is not quiet', async () => {
    const r = await submitted();
    expect(await due()).toEqual([]);
    await relay().drainOnce();
    expect((await due()).map(({ id, dueVersion }) => ({ id, dueVersion }))).toEqual([
      { id: r.id, dueVersion: r.version },
    ]);
    // Touched within the quiet period: the relay and the worker get time to act first.
    expect(
      await ehrSubmissionRepository(t.ctx.db).dueWithoutProgress(new Date(Date.now() - 60_000), 100),
    ).toEqual([]);
  });

  it('makes sure of a forward job: nothing while one is live, a new one after it vanished or failed', async () => {
    const r = await submitted();
    const payload = {
      referralId: r.id,
      version: r.version,
      requestId: 'reconcile-test',
      institution: 'hci:S1234A',
    };
    const jobId = forwardJobId(r.id, r.version);

    expect(await t.ctx.queues.ensureForward(payload)).toBe(true);
    expect(await t.ctx.queues.ensureForward(payload)).toBe(false);
    expect(await liveJobIds()).toEqual([jobId]);

    // Running: still live.
    const manual = manualForwardWorker(t);
    try {
      const token = randomUUID();
      const running = await manual.worker.getNextJob(token);
      expect(running.id).toBe(jobId);
      expect(await t.ctx.queues.ensureForward(payload)).toBe(false);
      expect(await forwards().getJobCounts('active', 'wait')).toEqual({ active: 1, wait: 0 });

      // Failed for good (as after stalling more than allowed): a new job under the same ID.
      await running.moveToFailed(
        new UnrecoverableError('job stalled more than allowable limit'),
        token,
        false,
      );
      expect(await forwards().getJobState(jobId)).toBe('failed');
      expect(await t.ctx.queues.ensureForward(payload)).toBe(true);
      // Waiting in the forward queue's order (queue/forward-order.ts).
      expect(await forwards().getJobState(jobId)).toBe('prioritized');
      expect(await forwards().getDeduplicationJobId(r.id)).toBe(jobId);
    } finally {
      await manual.close();
    }

    // Gone with Redis's data: added again.
    await forwards().obliterate({ force: true });
    expect(await t.ctx.queues.ensureForward(payload)).toBe(true);
    expect(await liveJobIds()).toEqual([jobId]);
  });

  it('re-enqueues due forwards that lost their jobs, and leaves live ones alone', async () => {
    const [a, b] = [await submitted(), await submitted()];
    await relay().drainOnce();
    expect(await reconciler().reconcileOnce()).toMatchObject({ forwardsRequeued: 0 });

    await forwards().obliterate({ force: true });
    // Within the quiet period nothing is touched.
    expect(await reconciler(60_000).reconcileOnce()).toMatchObject({ forwardsRequeued: 0 });
    expect(await liveJobIds()).toEqual([]);

    expect(await reconciler().reconcileOnce()).toMatchObject({ forwardsRequeued: 2 });
    expect(await liveJobIds()).toEqual([forwardJobId(a.id, a.version), forwardJobId(b.id, b.version)].sort());
    const job = await forwards().getJob(forwardJobId(a.id, a.version));
    expect(job?.data).toEqual({
      referralId: a.id,
      version: a.version,
      requestId: `reconcile.${a.id}.v${a.version}`,
      institution: 'hci:S1234A',
    });
    // Repaired: a second run finds nothing to do.
    expect(await reconciler().reconcileOnce()).toEqual({ forwardsRequeued: 0, schedulersRebuilt: 0 });
  });

  it('puts back every lost forward in one run, page after page, past the ones still queued', async () => {
    const referrals: ReferralJson[] = [];
    for (let i = 0; i < 8; i++) referrals.push(await submitted());
    await relay().drainOnce();
    await forwards().obliterate({ force: true });
    // The three oldest still have their jobs (a page's worth): the run must look past them.
    for (const r of referrals.slice(0, 3)) {
      expect(
        await t.ctx.queues.ensureForward({
          referralId: r.id,
          version: r.version,
          requestId: 'still-live',
          institution: 'hci:S1234A',
        }),
      ).toBe(true);
    }
    expect(await reconciler(0, 3).reconcileOnce()).toMatchObject({ forwardsRequeued: 5 });
    expect(await liveJobIds()).toEqual(referrals.map((r) => forwardJobId(r.id, r.version)).sort());
    expect(await reconciler(0, 3).reconcileOnce()).toMatchObject({ forwardsRequeued: 0 });
  });

  it('rebuilds the lost reminder schedule of a pending referral, from its timeline', async () => {
    const pending = await submitted();
    const accepted = await submitted();
    await call(t, t.provider, 'POST', `/api/v1/referrals/${accepted.id}/accept`, {});
    await relay().drainOnce();
    expect(await t.ctx.queues.hasReminderSchedule(pending.id)).toBe(true);
    expect(await t.ctx.queues.hasReminderSchedule(accepted.id)).toBe(false);
    const before = await t.ctx.queues.queues.reminders.getJobScheduler(`reminder.${pending.id}`);

    await t.ctx.queues.queues.reminders.obliterate({ force: true });
    expect(await t.ctx.queues.hasReminderSchedule(pending.id)).toBe(false);
    // Every referral still in pending-acceptance (earlier tests left some) gets its schedule back.
    const waiting = await t.ctx.db
      .selectFrom('referrals')
      .select('id')
      .where('status', '=', 'pending-acceptance')
      .execute();
    expect(waiting.length).toBeGreaterThanOrEqual(1);
    expect(await reconciler(60_000).reconcileOnce()).toEqual({
      forwardsRequeued: 0,
      schedulersRebuilt: waiting.length,
    });
    expect(await t.ctx.queues.hasReminderSchedule(pending.id)).toBe(true);
    expect(await t.ctx.queues.hasReminderSchedule(accepted.id)).toBe(false);
    // The same schedule as before: it is derived from the database, not from what Redis held.
    const after = await t.ctx.queues.queues.reminders.getJobScheduler(`reminder.${pending.id}`);
    expect(after?.next).toBe(before?.next);
    expect(after?.every).toBe(before?.every);
    expect(await reconciler(60_000).reconcileOnce()).toEqual({ forwardsRequeued: 0, schedulersRebuilt: 0 });
  });
  describe('counts a repair only for work that was really missing', () => {
    const REPAIRED = 'reconciler repaired queue state from the database';
    const schedulers = () => t.ctx.queues.queues.reminders.getJobSchedulersCount();
    /**
     * Puts back what earlier tests left without a schedule (the clean slate obliterates the queues), so
     * that what follows is measured from nothing to repair.
     */
    const settled = async () => {
      await reconciler(60_000).reconcileOnce();
      expect(await reconciler().reconcileOnce()).toEqual({ forwardsRequeued: 0, schedulersRebuilt: 0 });
      warnings.length = 0;
      return {
        forward: await repairsCounted('forward'),
        schedule: await repairsCounted('reminder-schedule'),
        schedulers: await schedulers(),
      };
    };
    const expectNothingRepairedSince = async (before: { forward: number; schedule: number }) => {
      expect(await repairsCounted('forward')).toBe(before.forward);
      expect(await repairsCounted('reminder-schedule')).toBe(before.schedule);
      expect(warnings).not.toContain(REPAIRED);
    };

    it('not for a submitted referral whose outbox rows the relay has not dispatched yet', async () => {
      const before = await settled();
      const r = await submitted();
      expect(
        (await t.ctx.db.selectFrom('outbox').select('topic').where('referral_id', '=', r.id).execute())
          .map((o) => o.topic)
          .sort(),
      ).toEqual(['ehr-forward', 'reminders']);

      // The relay has not run: it will set the schedule and add the forward, so nothing is missing.
      expect(await reconciler().reconcileOnce()).toEqual({ forwardsRequeued: 0, schedulersRebuilt: 0 });
      await expectNothingRepairedSince(before);
      expect(await t.ctx.queues.hasReminderSchedule(r.id)).toBe(false);
      expect(await liveJobIds()).toEqual([]);

      // The relay then does it, once.
      await relay().drainOnce();
      expect(await t.ctx.queues.hasReminderSchedule(r.id)).toBe(true);
      expect(await schedulers()).toBe(before.schedulers + 1);
      expect(await liveJobIds()).toEqual([forwardJobId(r.id, r.version)]);
      expect(await reconciler().reconcileOnce()).toEqual({ forwardsRequeued: 0, schedulersRebuilt: 0 });
      await expectNothingRepairedSince(before);
    });

    it('not for a referral whose rows the relay is dispatching while the run looks', async () => {
      const before = await settled();
      const r = await submitted();
      // The relay claims the rows and is held inside the reminders row's dispatch: the forward row
      // may have gone to Redis already, but neither row is marked dispatched.
      let dispatching!: () => void;
      const inDispatch = new Promise<void>((resolve) => (dispatching = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const handlers = outboxHandlers(t.ctx);
      const heldRelay = createOutboxRelay({
        db: t.ctx.db,
        clock: systemClock,
        logger: t.ctx.logger,
        handlers: {
          ...handlers,
          reminders: async (m: OutboxMessage) => {
            dispatching();
            await released;
            await handlers.reminders(m);
          },
        },
      });
      const draining = heldRelay.drainOnce();
      await inDispatch;

      expect(await reconciler().reconcileOnce()).toEqual({ forwardsRequeued: 0, schedulersRebuilt: 0 });
      await expectNothingRepairedSince(before);

      release();
      expect(await draining).toEqual({ dispatched: 2, failed: 0 });
      expect(await t.ctx.queues.hasReminderSchedule(r.id)).toBe(true);
      expect(await schedulers()).toBe(before.schedulers + 1);
      expect(await liveJobIds()).toEqual([forwardJobId(r.id, r.version)]);
      expect(await reconciler().reconcileOnce()).toEqual({ forwardsRequeued: 0, schedulersRebuilt: 0 });
      await expectNothingRepairedSince(before);
    });

    it('not for a forward whose job a worker finishes while the run looks at it', async () => {
      const before = await settled();
      const r = await submitted();
      await relay().drainOnce();
      expect(await liveJobIds()).toEqual([forwardJobId(r.id, r.version)]);

      // When the run, having read the forward as due, first asks Redis about it, a worker takes the job,
      // records the delivery as the forward worker does, and completes it.
      let finished: Promise<void> | undefined;
      const finishTheJob = () =>
        (finished ??= (async () => {
          const manual = manualForwardWorker(t);
          try {
            const token = randomUUID();
            const job = await manual.worker.getNextJob(token);
            expect(job.id).toBe(forwardJobId(r.id, r.version));
            await t.ctx.db
              .updateTable('referrals')
              .set({
                ehr_state: 'forwarded',
                ehr_forwarded_version: r.version,
                ehr_last_attempt_at: new Date(),
              })
              .where('id', '=', r.id)
              .execute();
            await job.moveToCompleted({ kind: 'delivered' }, token, false);
          } finally {
            await manual.close();
          }
        })());
      const queue = t.ctx.queues.queues['ehr-forward'];
      const watchedQueue = new Proxy(queue, {
        get(target, property) {
          const value = Reflect.get(target, property, target) as unknown;
          if (typeof value !== 'function') return value;
          return async (...args: unknown[]) => {
            await finishTheJob();
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const producer: QueueProducer = {
        ...t.ctx.queues,
        queues: { ...t.ctx.queues.queues, 'ehr-forward': watchedQueue },
        ensureForward: async (payload) => {
          await finishTheJob();
          return t.ctx.queues.ensureForward(payload);
        },
      };

      expect(await reconciler(0, undefined, producer).reconcileOnce()).toEqual({
        forwardsRequeued: 0,
        schedulersRebuilt: 0,
      });
      expect(finished).toBeDefined();
      await expectNothingRepairedSince(before);
      // Nothing was added for the delivered forward.
      expect(await liveJobIds()).toEqual([]);
      expect(await forwards().getJobState(forwardJobId(r.id, r.version))).toBe('completed');
    });

    it('still for a forward and a schedule that Redis lost', async () => {
      const before = await settled();
      const r = await submitted();
      await relay().drainOnce();
      await Promise.all(QUEUE_NAMES.map((name) => t.ctx.queues.queues[name].obliterate({ force: true })));

      expect(await reconciler().reconcileOnce()).toMatchObject({ forwardsRequeued: 1 });
      expect(await repairsCounted('forward')).toBe(before.forward + 1);
      expect(await repairsCounted('reminder-schedule')).toBeGreaterThan(before.schedule);
      expect(warnings).toContain(REPAIRED);
      expect(await t.ctx.queues.hasReminderSchedule(r.id)).toBe(true);
      expect(await liveJobIds()).toEqual([forwardJobId(r.id, r.version)]);
    });
  });
});
