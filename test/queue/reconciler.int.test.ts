// The reconciler on both engines, with real Redis under a queue prefix of its own. The database says
// what is due; Redis may have lost it. A forward that is due, quiet, and has no live job is enqueued
// again; one whose job waits, runs or whose outbox row is not dispatched yet is left alone. A pending
// referral's missing reminder schedule is rebuilt from its timeline.
import { randomUUID } from 'node:crypto';
import { UnrecoverableError } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ehrSubmissionRepository } from '../../src/db/forwarding-ledger.repository.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { createOutboxRelay } from '../../src/queue/outbox-relay.ts';
import { createReconciler } from '../../src/queue/reconciler.ts';
import { forwardJobId, QUEUE_NAMES } from '../../src/queue/registry.ts';
import { outboxHandlers } from '../../src/queue/outbox-topics.ts';
import { createQueueApp, manualForwardWorker, type QueueApp } from '../support/bridge.ts';
import { ENGINES } from '../support/engines.ts';
import { call, createDraft, type ReferralJson } from '../support/scenarios.ts';

const LIVE_STATES = ['wait', 'delayed', 'active', 'prioritized'] as const;

describe.each(ENGINES)('the reconciler on %s', (engine) => {
  let t: QueueApp;

  beforeAll(async () => {
    t = await createQueueApp(engine, { env: { REMINDER_AFTER_SECONDS: '3600' } });
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
  const reconciler = (quietMs = 0, pageSize?: number) =>
    createReconciler({
      db: t.ctx.db,
      clock: systemClock,
      logger: t.ctx.logger,
      producer: t.ctx.queues,
      metrics: t.ctx.metrics,
      reminderScheduleFor: (id) => t.ctx.reminders.scheduleFor(id),
      quietMs,
      ...(pageSize === undefined ? {} : { pageSize }),
    });
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
    const payload = { referralId: r.id, version: r.version, requestId: 'reconcile-test' };
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
      expect(await forwards().getJobState(jobId)).toBe('waiting');
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
        await t.ctx.queues.ensureForward({ referralId: r.id, version: r.version, requestId: 'still-live' }),
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
});
