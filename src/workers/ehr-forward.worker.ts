// Forwards a submitted referral's form to the national EHR (contract §7).
//
// Each run re-reads the referral and stops early when nothing is due, so a job that is late, repeated
// or coalesced with others sends the latest state once. The form is rendered now, never from a cache,
// checked to be self-contained, and sent as the exact bytes that were hashed. Every attempt becomes a
// ledger row; the one that delivers, or the one that gives up, also writes its timeline event, in the
// same transaction. 408, 429, 5xx and network errors are retried with exponential backoff and jitter,
// honouring Retry-After; any other answer outside 2xx is final. The EHR deduplicates on the message ID
// (`<referralId>.v<version>`), so a retry after a crash between the send and the record is harmless.
import { performance } from 'node:perf_hooks';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Clock } from '../domain/clock.ts';
import type { EhrFormSource } from '../domain/referral-view.ts';
import { sha256Hex } from '../ehr/content-digest.ts';
import type { EhrAnswer, EhrClient } from '../ehr/ehr-client.ts';
import { messageIdOf, type EhrForwardRequest } from '../ehr/forward-request.ts';
import type { Logger } from '../logger.ts';
import { logWorkerErrors } from './worker-errors.ts';
import { EHR_BACKOFF } from '../queue/producer.ts';
import type { QueuePayloads } from '../queue/registry.ts';
import { assertSelfContained, NotSelfContainedError } from '../render/self-contained.ts';
import type { RenderedEhrForm } from '../render/ehr-form.ts';
import type { AttemptOutcome, EhrForwarding } from '../services/ehr-forwarding.service.ts';

export type EhrForwardPayload = QueuePayloads['ehr-forward'];

export interface EhrForwardDeps {
  readonly forwarding: EhrForwarding;
  readonly ehr: EhrClient;
  readonly renderEhrForm: (source: EhrFormSource) => RenderedEhrForm;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly maxAttempts: number;
}

export type ForwardResult = 'delivered' | 'nothing-to-send' | 'withdrawn';

/** A failure worth another try; `retryAfterMs` is the EHR's own wish (Retry-After). */
export class RetryableForwardError extends Error {
  override readonly name = 'RetryableForwardError';
  readonly code: string;
  readonly retryAfterMs: number | undefined;
  constructor(code: string, retryAfterMs: number | undefined) {
    super(`EHR forward failed (${code}); it will be retried`);
    this.code = code;
    this.retryAfterMs = retryAfterMs;
  }
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** One attempt at forwarding `payload.referralId`; `attempt` counts from 1. */
export async function forwardReferral(
  deps: EhrForwardDeps,
  payload: EhrForwardPayload,
  attempt: number,
): Promise<ForwardResult> {
  const plan = await deps.forwarding.plan(payload.referralId);
  if (plan.kind === 'nothing-to-send') return 'nothing-to-send';
  if (plan.kind === 'withdrawn') {
    await deps.forwarding.withdraw(payload.referralId);
    return 'withdrawn';
  }
  const { record, source } = plan;
  const messageId = messageIdOf(record.id, record.version);
  const startedAt = deps.clock.now();
  const started = performance.now();
  const base = {
    referralId: record.id,
    messageId,
    version: record.version,
    attempt,
    startedAt,
    requestId: payload.requestId,
  };

  let form: RenderedEhrForm;
  let body: Uint8Array;
  try {
    form = deps.renderEhrForm(source);
    assertSelfContained(form.html);
    body = Buffer.from(JSON.stringify(forwardRequest(messageId, record.id, record.version, source, form)));
  } catch (error) {
    // A form that cannot be rendered or is not self-contained is a defect, not a passing outage:
    // retrying would send nothing better. It is recorded and the job fails for good.
    const code = error instanceof NotSelfContainedError ? 'not_self_contained' : 'render_failed';
    await deps.forwarding.recordAttempt({
      ...base,
      durationMs: elapsed(started),
      sha256: null,
      outcome: 'failed',
      httpStatus: null,
      errorCode: code,
      reference: null,
      reason: 'the form could not be prepared',
    });
    throw new UnrecoverableError(code);
  }

  const sha256 = sha256Hex(form.html);
  const answer = await deps.ehr.send(body, messageId);
  const outcome = judge(answer, attempt, deps.maxAttempts);
  const recorded: AttemptOutcome = {
    ...base,
    durationMs: elapsed(started),
    sha256,
    outcome: outcome.outcome,
    httpStatus: answer.kind === 'response' ? answer.status : null,
    errorCode: answer.kind === 'network-error' ? answer.code : null,
    reference: answer.kind === 'response' && outcome.outcome === 'delivered' ? answer.reference : null,
    ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
  };
  await deps.forwarding.recordAttempt(recorded);
  deps.logger.info(
    {
      referralId: record.id,
      messageId,
      attempt,
      outcome: recorded.outcome,
      httpStatus: recorded.httpStatus,
      errorCode: recorded.errorCode,
      ms: recorded.durationMs,
    },
    'ehr forward attempt',
  );
  switch (outcome.outcome) {
    case 'delivered':
      return 'delivered';
    case 'retrying':
      throw new RetryableForwardError(
        recorded.errorCode ?? `HTTP_${recorded.httpStatus}`,
        answer.kind === 'response' ? answer.retryAfterMs : undefined,
      );
    case 'failed':
      throw new UnrecoverableError(recorded.errorCode ?? `HTTP_${recorded.httpStatus}`);
  }
}

function judge(
  answer: EhrAnswer,
  attempt: number,
  maxAttempts: number,
): { outcome: AttemptOutcome['outcome']; reason?: string } {
  if (answer.kind === 'response' && answer.status >= 200 && answer.status < 300)
    return { outcome: 'delivered' };
  const retryable = answer.kind === 'network-error' || isRetryableStatus(answer.status);
  if (retryable && attempt < maxAttempts) return { outcome: 'retrying' };
  const what =
    answer.kind === 'network-error'
      ? `the EHR could not be reached (${answer.code})`
      : `the EHR answered HTTP ${answer.status}`;
  return {
    outcome: 'failed',
    reason: retryable ? `${what}, and ${attempt} attempts were made` : `${what}, which is final`,
  };
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}

/** The request of contract §7, built from the source the form was rendered from. */
export function forwardRequest(
  messageId: string,
  referralId: string,
  version: number,
  source: EhrFormSource,
  form: RenderedEhrForm,
): EhrForwardRequest {
  return {
    messageId,
    referralId,
    version,
    patient: { uin: source.patient.uin ?? '', name: source.patient.name ?? '', dob: source.patient.dob },
    referralRequest: {
      specialty: { code: source.offering?.ehrCode ?? '', textDescription: source.offering?.specialty ?? '' },
      type: { textDescription: form.formType },
    },
    notesItem: { text: form.html },
  };
}

const MAX_BACKOFF_MS = 15 * 60_000;
const MAX_RETRY_AFTER_MS = 60 * 60_000;

/**
 * The delay before attempt `attemptsMade + 1`: the EHR's Retry-After when it sent one (capped at an
 * hour), else exponential from `baseMs` with full jitter in its upper half, capped at 15 minutes.
 */
export function ehrBackoff(baseMs: number, random: () => number = Math.random) {
  return (attemptsMade: number, _type?: string, error?: Error): number => {
    if (error instanceof RetryableForwardError && error.retryAfterMs !== undefined) {
      return Math.min(error.retryAfterMs, MAX_RETRY_AFTER_MS);
    }
    const ceiling = Math.min(baseMs * 2 ** Math.max(0, attemptsMade - 1), MAX_BACKOFF_MS);
    return Math.round(ceiling / 2 + (random() * ceiling) / 2);
  };
}

export interface WorkerSettings {
  /** A worker connection (see queue/connections.ts); BullMQ adds its own blocking one from it. */
  readonly connection: Redis;
  readonly queuePrefix: string;
  readonly backoffBaseMs: number;
  readonly concurrency?: number;
}

export function startEhrForwardWorker(
  deps: EhrForwardDeps,
  settings: WorkerSettings,
): Worker<EhrForwardPayload> {
  const worker = new Worker<EhrForwardPayload, ForwardResult>(
    'ehr-forward',
    // Every line the job logs carries its job ID.
    (job: Job<EhrForwardPayload>) =>
      forwardReferral(
        { ...deps, logger: deps.logger.child({ jobId: job.id }) },
        job.data,
        job.attemptsMade + 1,
      ),
    {
      connection: settings.connection,
      prefix: settings.queuePrefix,
      concurrency: settings.concurrency ?? 16,
      // A worker that dies (a crash, a SIGKILL, a lost machine) leaves its active jobs behind. BullMQ
      // gives them back through its stalled check: a job still active whose lock has expired
      // (lockDuration, renewed every half of it while the job runs) returns to wait. The check needs
      // two passes and runs at most once per stalledInterval across all workers, so with BullMQ's
      // default of 30 s a forward waited up to about 90 s after its worker died; at 10 s it waits
      // about lockDuration + 20 s. Checking more often costs one short script run; a job counts as
      // stalled only once its lock is gone, so no job is taken from a worker that is alive.
      lockDuration: 30_000,
      stalledInterval: 10_000,
      // A job that stalls a second time fails ("job stalled more than allowable limit"). Its referral
      // is still queued in the database, so the reconciler enqueues it afresh.
      maxStalledCount: 1,
      settings: {
        backoffStrategy: (attemptsMade, type, error) =>
          type === EHR_BACKOFF ? ehrBackoff(settings.backoffBaseMs)(attemptsMade, type, error) : 1_000,
      },
    },
  );
  logWorkerErrors(worker, settings.connection, deps.logger);
  worker.on('failed', (job, error) => {
    // Messages of unexpected errors are not logged: a driver's message may quote a value.
    if (job !== undefined && !(error instanceof RetryableForwardError)) {
      deps.logger.warn(
        { referralId: job.data.referralId, jobId: job.id, attemptsMade: job.attemptsMade, error: error.name },
        'ehr forward job failed',
      );
    }
  });
  return worker;
}
