// Everything that runs behind the API: the outbox relay, the webhooks relay, the forwarding,
// reminder, webhook, triage-overdue, wait-times, incidents and retention workers (and the attachment
// scanner's, where one is configured), the reconciler, and the queues' schedulers (set as it starts,
// and again if the queues lose them); as it starts it also makes the month partitions ahead
// (retention). `refhub all` and `refhub worker` start it; stopping it lets active jobs finish
// (worker.close()), then stops the relays and the reconciler and closes the connections it opened.
import type { Worker } from 'bullmq';
import type { AppContext } from './context.ts';
import { listenForChanges } from '../db/change-notifications.ts';
import { createEhrClient, type EhrClient } from '../workers/forwarding/ehr-client.ts';
import { createEhrCircuit, type CircuitSettings } from '../workers/forwarding/ehr-circuit.ts';
import { createOutboxRelay, type OutboxRelay } from '../queue/outbox-relay.ts';
import { outboxBatchHandlers, outboxHandlers } from '../queue/outbox-topics.ts';
import { createPeriodicLoop, errorCode, type PollLoop } from '../queue/poll-loop.ts';
import { createReconciler, type Reconciler } from '../queue/reconciler.ts';
import {
  ATTACHMENT_SCAN_QUEUE,
  FORWARD_QUEUE,
  INCIDENTS_QUEUE,
  REMINDERS_QUEUE,
  RETENTION_QUEUE,
  TRIAGE_OVERDUE_QUEUE,
  WAIT_TIMES_QUEUE,
  WEBHOOKS_QUEUE,
} from '../queue/registry.ts';
import { createWebhookRelay, type WebhookRelay } from '../queue/webhooks-relay.ts';
import { startEhrForwardWorker } from '../workers/forwarding/forwarding.worker.ts';
import { startReminderWorker } from '../workers/reminders.worker.ts';
import { startIncidentsWorker } from '../workers/incidents.worker.ts';
import { startRetentionWorker } from '../workers/retention.worker.ts';
import { startTriageOverdueWorker } from '../workers/triage-overdue.worker.ts';
import { startWaitTimesWorker } from '../workers/wait-times.worker.ts';
import { startWebhookWorker } from '../workers/webhooks/webhooks.worker.ts';
import { parseClamdAddress } from '../domain/attachments.ts';
import { createClamdClient } from '../workers/attachments/clamd-client.ts';
import { startAttachmentScanWorker } from '../workers/attachments/scan.worker.ts';

export interface BackgroundOptions {
  /** Where forms go: EHR_URL, or the in-process sandbox's address. */
  readonly ehrUrl: string;
  /**
   * How often the reconciler runs, and the wait-times scheduler is looked for; defaults to
   * RECONCILE_INTERVAL_SECONDS.
   */
  readonly reconcileEveryMs?: number;
}

export interface Background {
  readonly relay: OutboxRelay;
  /** Turns referral events into webhook delivery jobs. */
  readonly webhookRelay: WebhookRelay;
  readonly reconciler: Reconciler;
  readonly ehr: EhrClient;
  readonly workers: readonly Worker[];
  stop(): Promise<void>;
}

export function createReconcilerFor(ctx: AppContext): Reconciler {
  return createReconciler({
    stores: ctx.stores,
    clock: ctx.clock,
    logger: ctx.logger,
    producer: ctx.queues,
    metrics: ctx.metrics,
    reminderScheduleFor: (id) => ctx.reminders.scheduleFor(id),
    claim: () => ctx.claimQueues(),
    // The scan worker runs where a scanner is configured (startBackground), and only there.
    scansAttachments: ctx.config.attachmentScanner !== undefined,
  });
}

/**
 * Keeps the queues' four job schedulers in place: the wait-times computation (WAIT_TIMES_AT in
 * DISPLAY_TIME_ZONE, with a run asked for at once so that a fresh installation answers soon after it
 * starts), the triage-overdue sweep (every TRIAGE_OVERDUE_SWEEP_SECONDS), the incident sweep (every
 * INCIDENT_SWEEP_SECONDS) and the retention run (every RETENTION_SWEEP_SECONDS). The first pass sets
 * them all; then every `everyMs` each is set again if the queues lost it (Redis's data lost). Queues
 * out of reach at start do not stop it: the first pass is tried again on each pass until it is done.
 */
function keepSchedules(ctx: AppContext, everyMs: number): PollLoop {
  const waitTimes = { at: ctx.config.waitTimesAt, timeZone: ctx.config.displayTimeZone };
  const sweepEveryMs = ctx.config.triageOverdueSweepSeconds * 1000;
  const incidentsEveryMs = ctx.config.incidentSweepSeconds * 1000;
  const retentionEveryMs = ctx.config.retentionSweepSeconds * 1000;
  let started = false;
  const pass = async () => {
    if (!started) {
      await ctx.queues.scheduleWaitTimes(waitTimes);
      await ctx.queues.ensureTriageOverdueSweep(sweepEveryMs);
      await ctx.queues.ensureIncidentsSweep(incidentsEveryMs);
      await ctx.queues.ensureRetentionSchedule(retentionEveryMs);
      started = true;
      return;
    }
    if (await ctx.queues.ensureWaitTimesSchedule(waitTimes)) {
      ctx.logger.warn({ queue: WAIT_TIMES_QUEUE }, 'the wait-times scheduler was missing and is set again');
    }
    if (await ctx.queues.ensureTriageOverdueSweep(sweepEveryMs)) {
      ctx.logger.warn(
        { queue: TRIAGE_OVERDUE_QUEUE },
        'the triage-overdue sweep was missing and is set again',
      );
    }
    if (await ctx.queues.ensureIncidentsSweep(incidentsEveryMs)) {
      ctx.logger.warn({ queue: INCIDENTS_QUEUE }, 'the incident sweep was missing and is set again');
    }
    if (await ctx.queues.ensureRetentionSchedule(retentionEveryMs)) {
      ctx.logger.warn({ queue: RETENTION_QUEUE }, 'the retention run was missing and is set again');
    }
  };
  const onError = (error: unknown) => {
    ctx.logger.warn(
      { code: errorCode(error) },
      'the queues’ schedules could not be set; tried again on the next pass',
    );
  };
  const loop = createPeriodicLoop(pass, everyMs, onError);
  // The first pass at once (the loop's own begins after an interval).
  const first = pass().catch(onError);
  return {
    ...loop,
    stop: async () => {
      await first;
      await loop.stop();
    },
  };
}

/** The EHR circuit's settings from the configuration; a probe may take one attempt and a margin. */
export function circuitSettings(config: AppContext['config']): CircuitSettings {
  return {
    failures: config.ehrCircuitFailures,
    windowMs: config.ehrCircuitWindowSeconds * 1000,
    probeBaseMs: config.ehrCircuitProbeSeconds * 1000,
    probeMaxMs: 10 * 60_000,
    probeLeaseMs: (config.ehrAttemptTimeoutSeconds + 5) * 1000,
  };
}

export function startBackground(ctx: AppContext, options: BackgroundOptions): Background {
  const { config, logger } = ctx;
  const backend = ctx.queueBackend('worker');
  const ehr = createEhrClient({
    url: options.ehrUrl,
    token: config.ehrToken,
    attemptTimeoutMs: config.ehrAttemptTimeoutSeconds * 1000,
  });
  const circuit = createEhrCircuit({
    stores: ctx.stores,
    clock: ctx.clock,
    logger: logger.child({ component: 'ehr-circuit' }),
    metrics: ctx.metrics,
    settings: circuitSettings(config),
    // The forwards that waited for the circuit go at once, rather than at their next probe time.
    onClosed: async () => {
      await ctx.queues.queues[FORWARD_QUEUE].promoteJobs();
    },
  });
  const workers: Worker[] = [
    startEhrForwardWorker(
      {
        forwarding: ctx.ehrForwarding,
        ehr,
        circuit,
        renderEhrForm: ctx.renderEhrForm,
        clock: ctx.clock,
        logger: logger.child({ worker: FORWARD_QUEUE }),
        metrics: ctx.metrics,
        maxAttempts: config.ehrMaxAttempts,
      },
      {
        backend,
        backlog: ctx.stores.forwarding.backlog,
        backoffBaseMs: config.ehrBackoffBaseMs,
        formBytes: config.ehrFormsInFlightMib * 1024 * 1024,
      },
    ),
    startReminderWorker(
      {
        reminders: ctx.reminders,
        removeSchedule: (id) => ctx.queues.removeReminders(id),
        logger: logger.child({ worker: REMINDERS_QUEUE }),
        metrics: ctx.metrics,
      },
      { backend },
    ),
    startWebhookWorker(
      { ...ctx.webhookDelivery(), logger: logger.child({ worker: WEBHOOKS_QUEUE }) },
      { backend, retryScheduleMs: config.webhookRetryScheduleMs },
    ),
    startTriageOverdueWorker(
      { triageOverdue: ctx.triageOverdue, logger: logger.child({ worker: TRIAGE_OVERDUE_QUEUE }) },
      { backend },
    ),
    startWaitTimesWorker(
      { waitTimes: ctx.waitTimes, logger: logger.child({ worker: WAIT_TIMES_QUEUE }) },
      { backend },
    ),
    startIncidentsWorker(
      { incidents: ctx.incidents, logger: logger.child({ worker: INCIDENTS_QUEUE }) },
      { backend },
    ),
    startRetentionWorker(
      { retention: ctx.retention, logger: logger.child({ worker: RETENTION_QUEUE }) },
      { backend },
    ),
  ];
  // Attachments are scanned where a scanner is configured; elsewhere none waits for a scan.
  const scanner =
    config.attachmentScanner === undefined ? undefined : parseClamdAddress(config.attachmentScanner);
  if (scanner !== undefined) {
    workers.push(
      startAttachmentScanWorker(
        {
          stores: ctx.stores,
          clock: ctx.clock,
          scanner: createClamdClient({ ...scanner, timeoutMs: config.attachmentScanTimeoutSeconds * 1000 }),
          logger: logger.child({ worker: ATTACHMENT_SCAN_QUEUE }),
        },
        { backend },
      ),
    );
  }
  for (const worker of workers) {
    worker.on('stalled', () => {
      ctx.metrics.jobStalled(worker.name);
    });
  }
  const relay = createOutboxRelay({
    stores: ctx.stores,
    clock: ctx.clock,
    logger: logger.child({ component: 'outbox-relay' }),
    handlers: outboxHandlers(ctx),
    batchHandlers: outboxBatchHandlers(ctx),
  });
  const webhookRelay = createWebhookRelay({
    stores: ctx.stores,
    clock: ctx.clock,
    logger: logger.child({ component: 'webhook-relay' }),
    enqueue: (jobs) => ctx.queues.enqueueWebhooks(jobs),
  });
  // On PostgreSQL a commit wakes the relays; they poll as well, which PGlite relies on alone.
  const changes =
    ctx.store.engine === 'postgres' && config.databaseUrl !== undefined
      ? listenForChanges(
          config.databaseUrl,
          {
            outbox: () => {
              relay.wake();
            },
            events: () => {
              webhookRelay.wake();
            },
          },
          { logger: logger.child({ component: 'change-listener' }) },
        )
      : undefined;
  const reconciler = createReconcilerFor(ctx);
  const reconcileEveryMs = options.reconcileEveryMs ?? config.reconcileIntervalSeconds * 1000;
  const schedules = keepSchedules(ctx, reconcileEveryMs);
  // The month partitions ahead, at once: inserts never wait for them (a DEFAULT partition takes a
  // month that has none), but the scheduled run may be a day away.
  const partitions = ctx.retention.makePartitions().catch((error: unknown) => {
    logger.warn(
      { code: errorCode(error) },
      'the month partitions could not be made; the retention run tries again',
    );
  });
  relay.start();
  webhookRelay.start();
  reconciler.start(reconcileEveryMs);
  schedules.start();

  return {
    relay,
    webhookRelay,
    reconciler,
    ehr,
    workers,
    async stop() {
      await partitions;
      await schedules.stop();
      await Promise.all(workers.map((w) => w.close()));
      await changes?.close();
      await relay.stop();
      await webhookRelay.stop();
      await reconciler.stop();
      await ehr.close();
      await backend.close();
    },
  };
}
