// The reconciler on both engines, with real Redis under a queue prefix of its own. The database says
// what is due; Redis may have lost it. A forward that is due, quiet, and has no live job is enqueued
// again; one whose job waits, runs or whose outbox row is not dispatched yet is left alone. A pending
// referral's missing reminder schedule is rebuilt from its timeline. A repair is counted (metric and
// log) only for work that was really missing: not for a referral whose outbox rows the relay has yet to
// dispatch or is dispatching, nor for a forward a worker finished while the run looked at it.
// Where attachments are scanned, an attachment still waiting for its scan with no live scan job (a
// crash between the upload and its enqueue, or a loss of Redis's data) gets its scan job back, under
// its own ID and with IDs only; one whose job is queued, or that was just added, is left alone.
import { randomUUID } from 'node:crypto';
import { UnrecoverableError } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { attachmentRepository, type AttachmentRecord } from '../../src/db/attachments.repository.ts';
import type { OutboxMessage } from '../../src/db/outbox.repository.ts';
import { ehrSubmissionRepository } from '../../src/db/forwarding/ledger.ts';
import { systemClock } from '../../src/domain/clock.ts';
import type { Logger } from '../../src/logger.ts';
import { createOutboxRelay } from '../../src/queue/outbox-relay.ts';
import { createReconciler } from '../../src/queue/reconciler.ts';
import type { QueueProducer } from '../../src/queue/producer.ts';
import {
  attachmentScanJobId,
  forwardJobId,
  QUEUE_NAMES,
  type QueuePayloads,
} from '../../src/queue/registry.ts';
import { outboxHandlers } from '../../src/queue/outbox-topics.ts';
import { createQueueApp, manualForwardWorker, manualWorker, type QueueApp } from '../support/bridge.ts';
import { ENGINES } from '../support/engines.ts';
import { storedAttachment } from '../support/stored-attachments.ts';
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
    await t.ctx.db.deleteFrom('attachments').execute();
    await Promise.all(QUEUE_NAMES.map((name) => t.ctx.queues.queues[name].obliterate({ force: true })));
  });

  const forwards = () => t.ctx.queues.queues['ehr-forward'];
  const relay = () =>
    createOutboxRelay({
      stores: t.ctx.stores,
      clock: systemClock,
      logger: t.ctx.logger,
      handlers: outboxHandlers(t.ctx),
    });
  /**
   * A reconciler that sees every forward as quiet at once (`quietMs` 0), unless told otherwise; it
   * looks for lost scans only when told that attachments are scanned.
   */
  const reconciler = (
    quietMs = 0,
    pageSize?: number,
    producer: QueueProducer = t.ctx.queues,
    scansAttachments = false,
  ) =>
    createReconciler({
      stores: t.ctx.stores,
      clock: systemClock,
      logger: watchedLogger,
      producer,
      metrics: t.ctx.metrics,
      reminderScheduleFor: (id) => t.ctx.reminders.scheduleFor(id),
      quietMs,
      scansAttachments,
      ...(pageSize === undefined ? {} : { pageSize }),
    });
  /** The reconciler of an installation that scans attachments (ATTACHMENT_SCANNER set). */
  const scanningReconciler = (quietMs = 0, pageSize?: number, producer: QueueProducer = t.ctx.queues) =>
    reconciler(quietMs, pageSize, producer, true);
  /** `refhub_reconciler_repairs_total` of one kind, as Prometheus would scrape it. */
  const repairsCounted = async (
    kind: 'forward' | 'attachment-scan' | 'reminder-schedule',
  ): Promise<number> => {
    const metric = await t.ctx.metrics.registry.getSingleMetric('refhub_reconciler_repairs_total')?.get();
    return metric?.values.find((v) => v.labels.kind === kind)?.value ?? 0;
  };
  const submitted = async (): Promise<ReferralJson> => {
    const draft = await createDraft(t);
    return (await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {})) as ReferralJson;
  };
  const liveJobIds = async () => (await forwards().getJobs([...LIVE_STATES])).map((j) => j.id).sort();
  const due = () => ehrSubmissionRepository(t.ctx.db).dueWithoutProgress(new Date(Date.now() + 60_000), 100);

  const scans = () => t.ctx.queues.queues['attachment-scan'];
  const LETTER = Buffer.from('%PDF-1.7\nA consultation letter.\n');
  /** The name the file was uploaded under: it must never reach Redis. */
  const FILE_NAME = 'Letter for Dr Tan, Mdm Lim Siew Choo.pdf';
  /**
   * An attachment stored as an upload stores it, waiting for its scan, added `ageMs` ago, with no scan
   * job queued: as after a crash between the upload's statement and its enqueue.
   */
  const waitingForScan = (ageMs = 10 * 60_000): Promise<AttachmentRecord> =>
    storedAttachment(t, LETTER, { fileName: FILE_NAME, createdAt: new Date(Date.now() - ageMs) });
  const scanPayload = (a: AttachmentRecord): QueuePayloads['attachment-scan'] => ({
    attachmentId: a.id,
    referralId: a.referralId,
  });
  const scanState = async (a: AttachmentRecord) => {
    const job = await scans().getJob(attachmentScanJobId(a.id));
    return job === undefined ? 'none' : await job.getState();
  };

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
      // Waiting in the forward queue's order (queue/forward.queue.ts).
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
    expect(await reconciler().reconcileOnce()).toEqual({
      forwardsRequeued: 0,
      scansRequeued: 0,
      schedulersRebuilt: 0,
    });
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
      scansRequeued: 0,
      schedulersRebuilt: waiting.length,
    });
    expect(await t.ctx.queues.hasReminderSchedule(pending.id)).toBe(true);
    expect(await t.ctx.queues.hasReminderSchedule(accepted.id)).toBe(false);
    // The same schedule as before: it is derived from the database, not from what Redis held.
    const after = await t.ctx.queues.queues.reminders.getJobScheduler(`reminder.${pending.id}`);
    expect(after?.next).toBe(before?.next);
    expect(after?.every).toBe(before?.every);
    expect(await reconciler(60_000).reconcileOnce()).toEqual({
      forwardsRequeued: 0,
      scansRequeued: 0,
      schedulersRebuilt: 0,
    });
  });
  describe('puts back the scans of attachments that lost their job', () => {
    it('enqueues the scan of an attachment left waiting with no job, under its own ID, with IDs only', async () => {
      const before = await repairsCounted('attachment-scan');
      warnings.length = 0;
      const a = await waitingForScan();
      expect(await scanState(a)).toBe('none');

      expect(await scanningReconciler().reconcileOnce()).toMatchObject({ scansRequeued: 1 });
      const job = await scans().getJob(`scan.${a.id}`);
      expect(await job?.getState()).toBe('waiting');
      expect(job?.data).toEqual({ attachmentId: a.id, referralId: a.referralId });
      expect(JSON.stringify(job?.data)).not.toContain('Letter');
      expect(await repairsCounted('attachment-scan')).toBe(before + 1);
      expect(warnings).toContain('reconciler repaired queue state from the database');
      // Still waiting for its scan, but its job is queued: nothing more to do.
      expect(await scanningReconciler().reconcileOnce()).toMatchObject({ scansRequeued: 0 });
      expect(await scans().getJobCountByTypes('waiting', 'active', 'delayed', 'prioritized')).toBe(1);
    });

    it('leaves alone an attachment whose scan job is queued, and one the upload has only just added', async () => {
      const queued = await waitingForScan();
      await t.ctx.queues.enqueueScans([scanPayload(queued)]);
      const job = await scans().getJob(attachmentScanJobId(queued.id));
      expect(await scanningReconciler().reconcileOnce()).toMatchObject({ scansRequeued: 0 });
      // The same job, not one added again.
      expect((await scans().getJob(attachmentScanJobId(queued.id)))?.timestamp).toBe(job?.timestamp);
      expect(await scans().getJobCountByTypes('waiting', 'active', 'delayed', 'prioritized')).toBe(1);

      // Added within the quiet period: its upload is still to enqueue the scan.
      const fresh = await waitingForScan(0);
      expect(await scanningReconciler(60_000).reconcileOnce()).toMatchObject({ scansRequeued: 0 });
      expect(await scanState(fresh)).toBe('none');
      // Quiet, and still without a job: enqueued.
      expect(await scanningReconciler().reconcileOnce()).toMatchObject({ scansRequeued: 1 });
      expect(await scanState(fresh)).toBe('waiting');
    });

    it('leaves to the relay an attachment whose referral has a scan row in the outbox still to dispatch', async () => {
      const a = await waitingForScan();
      const now = new Date();
      await t.ctx.db
        .insertInto('outbox')
        .values({
          topic: 'attachment-scan',
          referral_id: a.referralId,
          version: 1,
          request_id: 'reconciler-test',
          created_at: now,
          available_at: now,
          last_error: null,
          processed_at: null,
        })
        .execute();
      expect(await scanningReconciler().reconcileOnce()).toMatchObject({ scansRequeued: 0 });
      expect(await scanState(a)).toBe('none');

      // Dispatched, and the job then lost with Redis's data: the reconciler's to put back.
      await t.ctx.db.deleteFrom('outbox').where('referral_id', '=', a.referralId).execute();
      expect(await scanningReconciler().reconcileOnce()).toMatchObject({ scansRequeued: 1 });
      expect(await scanState(a)).toBe('waiting');
    });

    it('enqueues again a scan whose job failed for good, not one that runs or a worker finished', async () => {
      const failing = await waitingForScan();
      const finished = await waitingForScan();
      await t.ctx.queues.enqueueScans([scanPayload(failing), scanPayload(finished)]);
      const manual = manualWorker(t, 'attachment-scan');
      try {
        const token = randomUUID();
        const first = await manual.worker.getNextJob(token);
        const second = await manual.worker.getNextJob(token);
        expect([first.id, second.id].sort()).toEqual(
          [attachmentScanJobId(failing.id), attachmentScanJobId(finished.id)].sort(),
        );
        const running = (a: AttachmentRecord) =>
          [first, second].find((job) => job.id === attachmentScanJobId(a.id));
        // Running: live.
        expect(await scanningReconciler().reconcileOnce()).toMatchObject({ scansRequeued: 0 });

        // The worker records the scan, then finishes the job: nothing is missing.
        await attachmentRepository(t.ctx.db).recordScan(finished.id, { kind: 'clean' }, new Date());
        await running(finished)?.moveToCompleted('available', token, false);
        // The scanner never answered, through every attempt: the attachment still waits.
        await running(failing)?.moveToFailed(new UnrecoverableError('scanner_unreachable'), token, false);
        expect(await scanState(failing)).toBe('failed');

        expect(await scanningReconciler().reconcileOnce()).toMatchObject({ scansRequeued: 1 });
        const again = await scans().getJob(attachmentScanJobId(failing.id));
        expect(await again?.getState()).toBe('waiting');
        expect(again?.attemptsMade).toBe(0);
        expect(again?.data).toEqual(scanPayload(failing));
        expect(await scanState(finished)).toBe('completed');
      } finally {
        await manual.close();
      }
    });

    it('looks at the oldest waiting attachments, a page of them per run', async () => {
      const [oldest, older, newest] = [
        await waitingForScan(30 * 60_000),
        await waitingForScan(20 * 60_000),
        await waitingForScan(10 * 60_000),
      ];
      expect(await scanningReconciler(0, 2).reconcileOnce()).toMatchObject({ scansRequeued: 2 });
      expect([await scanState(oldest), await scanState(older), await scanState(newest)]).toEqual([
        'waiting',
        'waiting',
        'none',
      ]);
      // The page's scans are queued; the newest waits for them to leave the page.
      expect(await scanningReconciler(0, 2).reconcileOnce()).toMatchObject({ scansRequeued: 0 });
      for (const a of [oldest, older]) {
        await attachmentRepository(t.ctx.db).recordScan(a.id, { kind: 'clean' }, new Date());
      }
      expect(await scanningReconciler(0, 2).reconcileOnce()).toMatchObject({ scansRequeued: 1 });
      expect(await scanState(newest)).toBe('waiting');
    });

    it('touches no scan where attachments are not scanned: no worker would take the job', async () => {
      const a = await waitingForScan();
      expect(await reconciler().reconcileOnce()).toMatchObject({ scansRequeued: 0 });
      expect(await scanState(a)).toBe('none');
      expect(await scans().getJobCountByTypes('waiting', 'active', 'delayed', 'prioritized')).toBe(0);
    });
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
      expect(await reconciler().reconcileOnce()).toEqual({
        forwardsRequeued: 0,
        scansRequeued: 0,
        schedulersRebuilt: 0,
      });
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
      expect(await reconciler().reconcileOnce()).toEqual({
        forwardsRequeued: 0,
        scansRequeued: 0,
        schedulersRebuilt: 0,
      });
      await expectNothingRepairedSince(before);
      expect(await t.ctx.queues.hasReminderSchedule(r.id)).toBe(false);
      expect(await liveJobIds()).toEqual([]);

      // The relay then does it, once.
      await relay().drainOnce();
      expect(await t.ctx.queues.hasReminderSchedule(r.id)).toBe(true);
      expect(await schedulers()).toBe(before.schedulers + 1);
      expect(await liveJobIds()).toEqual([forwardJobId(r.id, r.version)]);
      expect(await reconciler().reconcileOnce()).toEqual({
        forwardsRequeued: 0,
        scansRequeued: 0,
        schedulersRebuilt: 0,
      });
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
        stores: t.ctx.stores,
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

      expect(await reconciler().reconcileOnce()).toEqual({
        forwardsRequeued: 0,
        scansRequeued: 0,
        schedulersRebuilt: 0,
      });
      await expectNothingRepairedSince(before);

      release();
      expect(await draining).toEqual({ dispatched: 2, failed: 0 });
      expect(await t.ctx.queues.hasReminderSchedule(r.id)).toBe(true);
      expect(await schedulers()).toBe(before.schedulers + 1);
      expect(await liveJobIds()).toEqual([forwardJobId(r.id, r.version)]);
      expect(await reconciler().reconcileOnce()).toEqual({
        forwardsRequeued: 0,
        scansRequeued: 0,
        schedulersRebuilt: 0,
      });
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
        scansRequeued: 0,
        schedulersRebuilt: 0,
      });
      expect(finished).toBeDefined();
      await expectNothingRepairedSince(before);
      // Nothing was added for the delivered forward.
      expect(await liveJobIds()).toEqual([]);
      expect(await forwards().getJobState(forwardJobId(r.id, r.version))).toBe('completed');
    });

    it('not for an attachment whose scan a worker finishes while the run looks at it', async () => {
      const before = await settled();
      const scansBefore = await repairsCounted('attachment-scan');
      const a = await waitingForScan();
      await t.ctx.queues.enqueueScans([scanPayload(a)]);

      // When the run, having read the attachment as waiting, first asks Redis about it, a worker takes
      // the job, records the scan as the scan worker does, and completes it.
      let finished: Promise<void> | undefined;
      const finishTheScan = () =>
        (finished ??= (async () => {
          const manual = manualWorker(t, 'attachment-scan');
          try {
            const token = randomUUID();
            const job = await manual.worker.getNextJob(token);
            expect(job.id).toBe(attachmentScanJobId(a.id));
            await attachmentRepository(t.ctx.db).recordScan(a.id, { kind: 'clean' }, new Date());
            await job.moveToCompleted('available', token, false);
          } finally {
            await manual.close();
          }
        })());
      const queue = scans();
      const watchedQueue = new Proxy(queue, {
        get(target, property) {
          const value = Reflect.get(target, property, target) as unknown;
          if (typeof value !== 'function') return value;
          return async (...args: unknown[]) => {
            await finishTheScan();
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const producer: QueueProducer = {
        ...t.ctx.queues,
        queues: { ...t.ctx.queues.queues, 'attachment-scan': watchedQueue },
        ensureScan: async (payload) => {
          await finishTheScan();
          return t.ctx.queues.ensureScan(payload);
        },
      };

      expect(await scanningReconciler(0, undefined, producer).reconcileOnce()).toEqual({
        forwardsRequeued: 0,
        scansRequeued: 0,
        schedulersRebuilt: 0,
      });
      expect(finished).toBeDefined();
      await expectNothingRepairedSince(before);
      expect(await repairsCounted('attachment-scan')).toBe(scansBefore);
      // Nothing was added for the scanned attachment.
      expect(await scanState(a)).toBe('completed');
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
