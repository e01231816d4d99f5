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
// attachment added within the quiet period, or whose referral has an `attachment-scan` outbox row
// still to dispatch, is left to whatever is queueing its scan; and one with no live job is read again
// before its scan is enqueued, since a worker records the scan before its job finishes. A scan job
// that failed for good (the scanner unreachable through every attempt) is not live either, as a
// forward's is not: the attachment still waits, so its scan is enqueued again.
import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { messageIdOf } from '../domain/ids.ts';
import { attachmentRepository } from '../db/attachments.repository.ts';
import { ehrSubmissionRepository, type DueForward } from '../db/forwarding/ledger.ts';
import { reminderRepository } from '../db/reminders.repository.ts';
import type { Database } from '../db/schema.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { QueueProducer, ReminderSchedule } from './producer.ts';
import { QueuePrefixTakenError } from './prefix-claim.ts';
import { attachmentScanJobId, forwardJobId, institutionKey } from './registry.ts';

/** The job states in which a job is still to run or running (as `ensureForward` and `ensureScan` see them). */
const LIVE = new Set<string>(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

export interface ReconcilerDeps {
  readonly db: Kysely<Database>;
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

  /** Whether a job for the referral's forward waits, is delayed or runs; it only reads. */
  async function forwardIsLive(referralId: string, version: number): Promise<boolean> {
    const queue = deps.producer.queues['ehr-forward'];
    const current = await queue.getDeduplicationJobId(referralId);
    if (current !== null && LIVE.has(await queue.getJobState(current))) return true;
    const job = await queue.getJob(forwardJobId(referralId, version));
    return job !== undefined && LIVE.has(await job.getState());
  }

  /**
   * Every due forward without a live job, oldest first, a page at a time: one run puts back all that
   * Redis lost, and the referrals whose jobs are still queued never hide the ones after them.
   */
  async function requeueForwards(): Promise<number> {
    let requeued = 0;
    const since = new Date(deps.clock.now().getTime() - quietMs);
    const ledger = ehrSubmissionRepository(deps.db);
    let after: DueForward | undefined;
    for (;;) {
      const due = await ledger.dueWithoutProgress(since, PAGE, after);
      for (const { id, dueVersion, sender } of due) {
        if (await forwardIsLive(id, dueVersion)) continue;
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

  /** Whether the attachment's scan job waits, is delayed or runs; it only reads. */
  async function scanIsLive(attachmentId: string): Promise<boolean> {
    const job = await deps.producer.queues['attachment-scan'].getJob(attachmentScanJobId(attachmentId));
    return job !== undefined && LIVE.has(await job.getState());
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
    const attachments = attachmentRepository(deps.db);
    for (const { id, referralId } of await attachments.pendingScan(since, PAGE)) {
      if (await scanIsLive(id)) continue;
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
    const reminders = reminderRepository(deps.db);
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

  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<unknown> | undefined;

  const reconciler = {
    async reconcileOnce(): Promise<Repairs> {
      await deps.claim?.();
      const repairs = {
        forwardsRequeued: await requeueForwards(),
        scansRequeued: await requeueScans(),
        schedulersRebuilt: await rebuildSchedulers(),
      };
      deps.metrics.reconcilerRepaired('forward', repairs.forwardsRequeued);
      deps.metrics.reconcilerRepaired('attachment-scan', repairs.scansRequeued);
      deps.metrics.reconcilerRepaired('reminder-schedule', repairs.schedulersRebuilt);
      if (repairs.forwardsRequeued + repairs.scansRequeued + repairs.schedulersRebuilt > 0) {
        deps.logger.warn(repairs, 'reconciler repaired queue state from the database');
      }
      return repairs;
    },

    start(intervalMs: number): void {
      if (timer !== undefined) return;
      timer = setInterval(() => {
        if (inFlight !== undefined) return;
        inFlight = reconciler
          .reconcileOnce()
          .catch((error: unknown) => {
            if (error instanceof QueuePrefixTakenError) {
              // Its message names the prefix and the two installations, nothing else.
              deps.logger.error({ err: { name: error.name, code: error.code } }, error.message);
              return;
            }
            deps.logger.warn(
              { err: { name: (error as Error).name } },
              'reconciler run failed; it will run again',
            );
          })
          .finally(() => {
            inFlight = undefined;
          });
      }, intervalMs);
      timer.unref();
    },

    async stop(): Promise<void> {
      clearInterval(timer);
      timer = undefined;
      await inFlight;
    },
  };
  return reconciler;
}

export type Reconciler = ReturnType<typeof createReconciler>;
