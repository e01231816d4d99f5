// Prometheus metrics (prom-client) on a registry of the process's own: no module-level state, so a
// test can build as many contexts as it likes. Every label is a bounded set of values (route patterns,
// status classes, queue names, outcomes): never an ID, never patient data. Gauges whose truth lives
// elsewhere (queue depths in Redis, the outbox backlog in the database) are read when Prometheus
// scrapes, through `sources`, so they are never stale.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { OUTBOX_TOPICS } from '../domain/lifecycle.ts';

/** `2xx`, `4xx`, … for a status code; `error` when there was no answer. */
export function statusClass(status: number | null): string {
  return status === null ? 'error' : `${Math.floor(status / 100)}xx`;
}

export interface MetricSources {
  /** Job counts per queue and state. */
  queueCounts(): Promise<Readonly<Record<string, Readonly<Record<string, number>>>>>;
  outboxBacklog(): Promise<{ count: number; oldestAgeSeconds: number | null }>;
  /** Whether the EHR's circuit is open. */
  ehrCircuitOpen(): Promise<boolean>;
  /** Webhook subscriptions disabled now, by why (`by-institution`, `gone`, `failing`). */
  disabledWebhookSubscriptions?(): Promise<Readonly<Record<string, number>>>;
  /**
   * Whether the attachment scanner (clamd) answers a PING now; only where ATTACHMENT_SCANNER is set,
   * and `refhub_scanner_up` is exposed only there.
   */
  scannerReachable?(): Promise<boolean>;
  /** The incidents open now, by condition (services/incidents.service.ts). */
  openIncidents?(): Promise<readonly string[]>;
}

export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'refhub_process_' });
  let sources: MetricSources | undefined;

  const httpDuration = new Histogram({
    name: 'refhub_http_request_duration_seconds',
    help: 'HTTP request duration, by route pattern, method and status class',
    labelNames: ['route', 'method', 'status_class'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'refhub_rate_limit_rejections_total',
    help:
      'Requests answered 429 because their client went over its rate limit, by the kind of client: ' +
      '`api-key`, or `client` (signed client credentials); never by client, which would be a series each',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const rateLimitFallbacks = new Counter({
    name: 'refhub_rate_limit_fallbacks_total',
    help:
      'Requests limited by this process alone because the shared rate-limit store (Redis, or the ' +
      'database) did not answer',
    registers: [registry],
  });
  const responseBytes = new Gauge({
    name: 'refhub_http_response_bytes_in_flight',
    help: 'Bytes of answers handed to Node and not yet to the network (RESPONSES_IN_FLIGHT_MIB)',
    registers: [registry],
  });
  const responsesShed = new Counter({
    name: 'refhub_http_responses_shed_total',
    help: 'Reads answered 503 because their answer did not fit RESPONSES_IN_FLIGHT_MIB',
    registers: [registry],
  });
  const uploadBytes = new Gauge({
    name: 'refhub_upload_bytes_in_flight',
    help:
      'Bytes uploads hold in this process: bodies as they arrive, and bodies being checked and stored ' +
      '(ATTACHMENT_UPLOADS_IN_FLIGHT_MIB)',
    registers: [registry],
  });
  const uploadsWaiting = new Gauge({
    name: 'refhub_uploads_waiting',
    help: 'Uploads waiting for room in this process (ATTACHMENT_UPLOAD_WAIT_MS at most, then 503)',
    registers: [registry],
  });
  const uploadsRefused = new Counter({
    name: 'refhub_uploads_refused_total',
    help:
      'Uploads answered 503 because they found no room within ATTACHMENT_UPLOAD_WAIT_MS, by the room ' +
      'they lacked: `credential` or `institution` (its share), or `server`',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const circuitTransitions = new Counter({
    name: 'refhub_ehr_circuit_transitions_total',
    help: "Transitions of the EHR's circuit made by this process, by the state it went to",
    labelNames: ['to'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'refhub_ehr_circuit_open',
    help: "1 while the EHR's circuit is open (forwarding paused, probing), else 0",
    registers: [registry],
    async collect() {
      const open = await sources?.ehrCircuitOpen().catch(() => undefined);
      if (open !== undefined) this.set(open ? 1 : 0);
    },
  });
  const stalledJobs = new Counter({
    name: 'refhub_jobs_stalled_total',
    help: 'Jobs found stalled (their worker died or hung) and given back to the queue, by queue',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const foreignJobs = new Counter({
    name: 'refhub_jobs_foreign_total',
    help:
      "Jobs for a referral this installation's database does not have (another installation shares " +
      'the queue prefix), failed without acting, by queue',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const setAsideJobs = new Counter({
    name: 'refhub_jobs_set_aside_total',
    help:
      'Jobs set aside for fair delivery (their institution already had its share of the process’s ' +
      'slots) and moved back to wait, by queue',
    labelNames: ['queue'] as const,
    registers: [registry],
  });
  const authFailures = new Counter({
    name: 'refhub_auth_failures_total',
    help:
      'Failed authentications (wrong API keys or access tokens, refused client assertions, unknown link ' +
      'tokens), refused or throttled, by kind',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  });
  const dataKeyLoads = new Counter({
    name: 'refhub_data_key_loads_total',
    help:
      'Times this process looked up the data keys in the database: on first use, once per ' +
      'DATA_KEY_REFRESH_SECONDS while it seals or opens, and for a key another process made',
    registers: [registry],
  });
  const ehrAttempts = new Counter({
    name: 'refhub_ehr_forward_attempts_total',
    help: 'Attempts to forward a referral form to the EHR, by outcome and the EHR answer’s status class',
    labelNames: ['outcome', 'status_class'] as const,
    registers: [registry],
  });
  const ehrLatency = new Histogram({
    name: 'refhub_ehr_forward_attempt_duration_seconds',
    help: 'Duration of one attempt to forward a form to the EHR (render, send, answer)',
    labelNames: ['outcome'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const webhookAttempts = new Counter({
    name: 'refhub_webhook_delivery_attempts_total',
    help: 'Attempts to deliver an event to a webhook subscription, by outcome and the answer’s status class',
    labelNames: ['outcome', 'status_class'] as const,
    registers: [registry],
  });
  const webhookLatency = new Histogram({
    name: 'refhub_webhook_delivery_duration_seconds',
    help: 'Duration of one webhook delivery attempt, from connecting to the answer',
    labelNames: ['outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
    registers: [registry],
  });
  const webhookDisabled = new Counter({
    name: 'refhub_webhook_subscriptions_disabled_total',
    help: 'Webhook subscriptions refhub disabled, by why (`gone`: the receiver answered 410; `failing`)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'refhub_webhook_subscriptions_disabled',
    help: 'Webhook subscriptions disabled now, by why, read from the database at scrape time',
    labelNames: ['reason'] as const,
    registers: [registry],
    async collect() {
      const counts = await sources?.disabledWebhookSubscriptions?.().catch(() => undefined);
      if (counts === undefined) return;
      this.reset();
      for (const reason of ['by-institution', 'gone', 'failing']) this.set({ reason }, counts[reason] ?? 0);
    },
  });
  const remindersSent = new Counter({
    name: 'refhub_reminders_sent_total',
    help: 'Reminders sent to providers to create the patient record',
    registers: [registry],
  });
  const triageOverdue = new Counter({
    name: 'refhub_triage_overdue_total',
    help: 'Referrals said to be overdue for triage (referral.triage-overdue), once per due time.',
    registers: [registry],
  });
  const reconcilerRepairs = new Counter({
    name: 'refhub_reconciler_repairs_total',
    help: 'Queue state the reconciler put back from the database, by kind',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'refhub_queue_jobs',
    help: 'Jobs per queue and state, read from the queues at scrape time',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      if (sources === undefined) return;
      this.reset();
      const counts = await sources.queueCounts().catch(() => undefined);
      if (counts === undefined) return;
      for (const [queue, byState] of Object.entries(counts)) {
        for (const state of QUEUE_STATES) this.set({ queue, state }, byState[state] ?? 0);
      }
    },
  });
  const backlog = async () =>
    sources === undefined ? undefined : sources.outboxBacklog().catch(() => undefined);
  new Gauge({
    name: 'refhub_outbox_backlog',
    help: 'Outbox rows not yet dispatched to the queues',
    registers: [registry],
    async collect() {
      const b = await backlog();
      if (b !== undefined) this.set(b.count);
    },
  });
  new Gauge({
    name: 'refhub_outbox_oldest_age_seconds',
    help: 'Age of the oldest outbox row not yet dispatched (0 when there is none)',
    registers: [registry],
    async collect() {
      const b = await backlog();
      if (b !== undefined) this.set(b.oldestAgeSeconds ?? 0);
    },
  });

  // Registered by `setSources`, and only where a scanner is configured: a process without one must not
  // say 0, which reads as "unreachable".
  const scannerUp = new Gauge({
    name: 'refhub_scanner_up',
    help: 'Whether the attachment scanner (clamd, ATTACHMENT_SCANNER) answered a PING at scrape time: 1 or 0',
    registers: [],
    async collect() {
      const up = await sources?.scannerReachable?.().catch(() => false);
      if (up !== undefined) this.set(up ? 1 : 0);
    },
  });
  new Gauge({
    name: 'refhub_incidents_open',
    help: 'Incidents refhub holds open now (docs/operations.md, "Alerts"), by condition',
    labelNames: ['condition'] as const,
    registers: [registry],
    async collect() {
      const open = await sources?.openIncidents?.().catch(() => undefined);
      if (open === undefined) return;
      this.reset();
      for (const condition of open) this.set({ condition }, 1);
    },
  });
  const auditCheckpointFailures = new Counter({
    name: 'refhub_audit_checkpoint_failures_total',
    help: "Rounds of this process's audit sealer (chaining the trail and its signed checkpoint) that failed",
    registers: [registry],
  });
  const auditCheckpointAt = new Gauge({
    name: 'refhub_audit_checkpoint_last_success_timestamp_seconds',
    help: "When a round of this process's audit sealer last succeeded (Unix time; 0 before it has)",
    registers: [registry],
  });

  const waitTimesRuns = new Counter({
    name: 'refhub_wait_times_computations_total',
    help: "Computations of the offerings' wait times by this process, by outcome (`success`, `failure`)",
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const retentionRuns = new Counter({
    name: 'refhub_retention_runs_total',
    help: 'Retention runs (partitions made ahead, aged months archived and dropped) by this process, by outcome (`succeeded`, `failed`)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const retentionSucceededAt = new Gauge({
    name: 'refhub_retention_last_success_timestamp_seconds',
    help: 'When this process last ended a retention run that succeeded (Unix time; 0 before it has)',
    registers: [registry],
  });
  const retentionDropped = new Counter({
    name: 'refhub_retention_partitions_dropped_total',
    help: 'Month partitions archived, verified and dropped by retention, by table',
    labelNames: ['table'] as const,
    registers: [registry],
  });
  const waitTimesComputedAt = new Gauge({
    name: 'refhub_wait_times_last_success_timestamp_seconds',
    help: "When this process last computed the offerings' wait times (Unix time; 0 before it has)",
    registers: [registry],
  });
  const waitTimesSeconds = new Gauge({
    name: 'refhub_wait_times_last_duration_seconds',
    help: "How long this process's last computation of the offerings' wait times took",
    registers: [registry],
  });

  return {
    registry,
    /** Where the scrape-time gauges read from (set once the queues and the store exist). */
    setSources(s: MetricSources): void {
      sources = s;
      if (s.scannerReachable !== undefined && registry.getSingleMetric('refhub_scanner_up') === undefined) {
        registry.registerMetric(scannerUp);
      }
    },
    observeRequest(route: string, method: string, status: number, seconds: number): void {
      httpDuration.observe({ route, method, status_class: statusClass(status) }, seconds);
    },
    /** The EHR's circuit opened or closed, by this process. */
    ehrCircuitChanged(to: 'open' | 'closed'): void {
      circuitTransitions.inc({ to });
    },
    /** A job this process found stalled (another worker's lock expired) and gave back. */
    jobStalled(queue: string): void {
      stalledJobs.inc({ queue });
    },
    /** A job for a referral this installation does not have (queue/prefix-claim.ts), by queue. */
    foreignJob(queue: string): void {
      foreignJobs.inc({ queue });
    },
    /** A job set aside for fair delivery (workers/fair-share.ts), by queue. */
    jobSetAside(queue: string): void {
      setAsideJobs.inc({ queue });
    },
    /** A failed authentication: answered 401/404 (`refused`) or, past the limit, 429 (`throttled`). */
    authFailure(
      kind: 'api-key' | 'access-token' | 'client-assertion' | 'link-token',
      outcome: 'refused' | 'throttled',
    ): void {
      authFailures.inc({ kind, outcome });
    },
    /** The data keys were looked up in the database. */
    dataKeysLoaded(): void {
      dataKeyLoads.inc();
    },
    /** A request was answered 429 for its client's rate limit. */
    rateLimited(kind: 'api-key' | 'client'): void {
      rateLimited.inc({ kind });
    },
    /** A request was limited by this process alone: the shared store did not answer. */
    rateLimitFallback(): void {
      rateLimitFallbacks.inc();
    },
    /** The bytes of answers not yet handed to the network, after each change. */
    responseBytesInFlight(bytes: number): void {
      responseBytes.set(bytes);
    },
    responseShed(): void {
      responsesShed.inc();
    },
    /** The bytes uploads hold, and the uploads waiting for room, after each change. */
    uploadRoom(bytes: number, waiting: number): void {
      uploadBytes.set(bytes);
      uploadsWaiting.set(waiting);
    },
    uploadRefused(reason: 'credential' | 'institution' | 'server'): void {
      uploadsRefused.inc({ reason });
    },
    observeEhrAttempt(outcome: string, status: number | null, seconds: number): void {
      ehrAttempts.inc({ outcome, status_class: statusClass(status) });
      ehrLatency.observe({ outcome }, seconds);
    },
    observeWebhookAttempt(outcome: string, status: number | null, seconds: number): void {
      webhookAttempts.inc({ outcome, status_class: statusClass(status) });
      webhookLatency.observe({ outcome }, seconds);
    },
    webhookSubscriptionDisabled(reason: 'gone' | 'failing'): void {
      webhookDisabled.inc({ reason });
    },
    /** A computation of the wait times ended: when it did, and how long it took when it succeeded. */
    waitTimesComputed(outcome: 'success' | 'failure', at: Date, seconds: number): void {
      waitTimesRuns.inc({ outcome });
      if (outcome === 'success') {
        waitTimesComputedAt.set(at.getTime() / 1000);
        waitTimesSeconds.set(seconds);
      }
    },
    /** A round of the audit sealer ended (services/audit/audit-chain.service.ts, `start`). */
    auditSealed(outcome: 'succeeded' | 'failed', at: Date): void {
      if (outcome === 'failed') auditCheckpointFailures.inc();
      else auditCheckpointAt.set(at.getTime() / 1000);
    },
    /** A retention run ended: with what outcome, and when. */
    retentionRun(outcome: 'succeeded' | 'failed', at: Date): void {
      retentionRuns.inc({ outcome });
      if (outcome === 'succeeded') retentionSucceededAt.set(at.getTime() / 1000);
    },
    /** A month of `table` was archived, verified and dropped. */
    retentionPartitionDropped(table: string): void {
      retentionDropped.inc({ table });
    },
    reminderSent(): void {
      remindersSent.inc();
    },
    triageOverdue(count: number): void {
      triageOverdue.inc(count);
    },
    reconcilerRepaired(
      kind: 'forward' | typeof OUTBOX_TOPICS.attachmentScan | 'reminder-schedule',
      count: number,
    ): void {
      if (count > 0) reconcilerRepairs.inc({ kind }, count);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
