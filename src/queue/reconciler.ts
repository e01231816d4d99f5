// The reconciler: Postgres is the truth and Redis only a work queue, so losing Redis's data must be
// a delay, not a loss. Every minute (and once with `refhub reconcile`) it re-enqueues each referral
// whose forward is due but has no live job, re-enqueues the scan of each attachment still waiting for
// one with no live job (where a scanner is configured), and rebuilds each missing reminder schedule
// from the database. Everything it calls is idempotent, so several reconcilers may run at once.
//
// It counts (metric and log) a repair only for work that was really missing, never for work the outbox
// relay or a worker is about to do or has just done. A referral with an outbox row of the topic still
// to dispatch is the relay's (it marks a row dispatched only after the job or schedule is in Redis), so
// it is left out. And because the database is read a page ahead of Redis, each referral Redis has
// nothing for is read again after Redis was asked: the relay sets a schedule, and a worker records an
// attempt, before the row is marked or the job finishes, so what Redis no longer shows the database
// already does. Only a referral still due after that is repaired.
//
// A scan job lost with Redis's data, or never added (a crash between storing the upload and queueing
// its scan), leaves an attachment waiting for a scan no job will make. The same rules hold: an
// attachment added within the quiet period, or whose referral has a scan outbox row still to
// dispatch, is left to whatever is queueing its scan; and one with no live job is read again
// before its scan is enqueued, since a worker records the scan before its job finishes. A scan job
// that failed for good (the scanner unreachable through every attempt) is not live either, as a
// forward's is not: the attachment still waits, so its scan is enqueued again.
import type { DueForward } from '../db/forwarding/ledger.ts';
import type { Stores } from '../db/stores.ts';
import type { Clock } from '../domain/clock.ts';
import { messageIdOf } from '../domain/ids.ts';
import { failureReport, type Logger } from '../logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import { ATTACHMENT_SCAN_QUEUE, scanIsLive } from './attachment-scan.queue.ts';
import { FORWARD_QUEUE, forwardIsLive } from './forward.queue.ts';
import { institutionKey } from './job-settings.ts';
import { createPeriodicLoop, type PollLoop } from './poll-loop.ts';
import type { QueueProducer } from './producer.ts';
import { QueuePrefixTakenError } from './prefix-claim.ts';
import type { ReminderSchedule } from './reminders.queue.ts';

export interface ReconcilerDeps {
  /** The truth it repairs Redis from: the due forwards, the files waiting for a scan, the pending referrals. */
  readonly stores: Pick<Stores, 'forwarding' | 'attachments' | 'reminders'>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly producer: QueueProducer;
  /** The schedule a referral should have now (the reminder service's). */
  readonly reminderScheduleFor: (referralId: string) => Promise<ReminderSchedule | null>;
  readonly metrics: Pick<Metrics, 'reconcilerRepaired'>;
  /**
   * Claims the queue prefix for this installation before each pass (prefix-claim.ts), so that a claim
   * lost with Redis's data is put back, and a prefix another installation holds stops the pass.
   */
  readonly claim?: () => Promise<void>;
  /**
   * Moves what an earlier release queued under the installation's one tag to each queue's own
   * (legacy-queues.ts), after the claim and before the repairs: what it moves is not missing.
   */
  readonly moveLegacy?: () => Promise<unknown>;
  /**
   * Whether this installation scans attachments (ATTACHMENT_SCANNER): only then does a worker take
   * the attachment-scan queue's jobs, and only then are lost scans enqueued again.
   */
  readonly scansAttachments?: boolean;
  /**
   * A forward untouched for this long, or an attachment waiting this long for its scan, with no live
   * job, is re-enqueued.
   */
  readonly quietMs?: number;
  /**
   * How many referrals one read of the database returns; also how many attachments waiting for a
   * scan one run looks at, the oldest first.
   */
  readonly pageSize?: number;
}

export interface Repairs {
  readonly forwardsRequeued: number;
  /** Attachments waiting for their scan whose scan job was missing, or had failed for good. */
  readonly scansRequeued: number;
  readonly schedulersRebuilt: number;
}

export function createReconciler(deps: ReconcilerDeps) {
  const quietMs = deps.quietMs ?? 5_000;
  const PAGE = deps.pageSize ?? 500;

  /**
   * Every due forward without a live job, oldest first, a page at a time: one run puts back all that
   * Redis lost, and the referrals whose jobs are still queued never hide the ones after them.
   */
  async function requeueForwards(): Promise<number> {
    let requeued = 0;
    const since = new Date(deps.clock.now().getTime() - quietMs);
    const ledger = deps.stores.forwarding.ledger;
    let after: DueForward | undefined;
    for (;;) {
      const due = await ledger.dueWithoutProgress(since, PAGE, after);
      for (const { id, dueVersion, sender } of due) {
        if (await forwardIsLive(deps.producer.queues[FORWARD_QUEUE], id, dueVersion)) continue;
        // Read again: a worker that finished the job since the page was read has recorded it by now.
        if (!(await ledger.isDueWithoutProgress(id, dueVersion, since))) continue;
        const added = await deps.producer.ensureForward({
          referralId: id,
          version: dueVersion,
          requestId: `reconcile.${messageIdOf(id, dueVersion)}`,
          institution: institutionKey(sender),
        });
        if (added) requeued++;
      }
      if (due.length < PAGE) return requeued;
      after = due.at(-1);
    }
  }

  /**
   * The oldest attachments waiting for a scan since before the quiet period, at most a page of them
   * per run, each enqueued again under its own job ID when no live job scans it. Those whose jobs are
   * still queued are scanned in their turn and leave the page, so one behind a page of them waits
   * for the next runs, never for ever.
   */
  async function requeueScans(): Promise<number> {
    // Nothing takes the scan queue's jobs without a scanner, and no attachment waits for one.
    if (deps.scansAttachments !== true) return 0;
    let requeued = 0;
    const since = new Date(deps.clock.now().getTime() - quietMs);
    const attachments = deps.stores.attachments;
    for (const { id, referralId } of await attachments.pendingScan(since, PAGE)) {
      if (await scanIsLive(deps.producer.queues[ATTACHMENT_SCAN_QUEUE], id)) continue;
      // Read again: a worker that finished the scan since the page was read has recorded it by now,
      // and a relay queueing it has not yet marked its outbox row.
      if (!(await attachments.awaitsScan(id, since))) continue;
      if (await deps.producer.ensureScan({ attachmentId: id, referralId })) requeued++;
    }
    return requeued;
  }

  /** Every pending-acceptance referral whose reminder schedule is missing, with no relay to set it. */
  async function rebuildSchedulers(): Promise<number> {
    let rebuilt = 0;
    let after: string | null = null;
    const reminders = deps.stores.reminders;
    for (;;) {
      const ids = await reminders.pendingAcceptance(after, PAGE);
      for (const id of ids) {
        if (await deps.producer.hasReminderSchedule(id)) continue;
        // Read again: a relay that set the schedule since the page was read, or is setting it, or a
        // referral that left pending-acceptance, shows here.
        if (!(await reminders.awaitsSchedule(id))) continue;
        const schedule = await deps.reminderScheduleFor(id);
        if (schedule === null) continue;
        await deps.producer.scheduleReminders(id, schedule);
        rebuilt++;
      }
      if (ids.length < PAGE) return rebuilt;
      after = ids[ids.length - 1] ?? null;
    }
  }

  let loop: PollLoop | undefined;
  const reconciler = {
    async reconcileOnce(): Promise<Repairs> {
      await deps.claim?.();
      // Before the repairs: what an earlier release queued is moved first, so it is not queued twice,
      // and the reminder schedules it had are rebuilt below (legacy-queues.ts).
      await deps.moveLegacy?.();
      const repairs = {
        forwardsRequeued: await requeueForwards(),
        scansRequeued: await requeueScans(),
        schedulersRebuilt: await rebuildSchedulers(),
      };
      deps.metrics.reconcilerRepaired('forward', repairs.forwardsRequeued);
      deps.metrics.reconcilerRepaired(ATTACHMENT_SCAN_QUEUE, repairs.scansRequeued);
      deps.metrics.reconcilerRepaired('reminder-schedule', repairs.schedulersRebuilt);
      if (repairs.forwardsRequeued + repairs.scansRequeued + repairs.schedulersRebuilt > 0) {
        deps.logger.warn(repairs, 'reconciler repaired queue state from the database');
      }
      return repairs;
    },

    /** Runs `reconcileOnce` every `intervalMs` (poll-loop.ts) until stopped. */
    start(intervalMs: number): void {
      loop ??= createPeriodicLoop(
        () => reconciler.reconcileOnce(),
        intervalMs,
        (error) => {
          if (error instanceof QueuePrefixTakenError) {
            // Its message names the prefix and the two installations, nothing else.
            deps.logger.error({ err: { name: error.name, code: error.code } }, error.message);
            return;
          }
          deps.logger.warn({ failure: failureReport(error) }, 'reconciler run failed; it will run again');
        },
      );
      loop.start();
    },

    /** Resolves when the run in progress has finished. */
    async stop(): Promise<void> {
      await loop?.stop();
      loop = undefined;
    },
  };
  return reconciler;
}

export type Reconciler = ReturnType<typeof createReconciler>;
