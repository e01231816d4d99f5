// One attempt at forwarding a submitted referral's form to the national EHR (contract §7): the
// worker's processing function, callable from a test without a queue.
//
// It re-reads the referral first and stops early when nothing is due, so a job that is late, repeated
// or coalesced with others sends the latest state once. While the EHR's circuit is open it defers the
// job without an attempt. The form is rendered now, never from a cache, and checked to be
// self-contained; the bytes of a version are kept the first time they are sent, so every retry of one
// message ID carries one body. Every attempt becomes a ledger row; the one that delivers, or the one
// that gives up, also writes its timeline event, in the same transaction. The EHR deduplicates on the
// message ID (`<referralId>.v<version>`), so a retry after a crash between the send and the record is
// harmless.
import { performance } from 'node:perf_hooks';
import { UnrecoverableError } from 'bullmq';
import type { Clock } from '../../domain/clock.ts';
import type { EhrFormSource } from '../../domain/referral-view.ts';
import type { Logger } from '../../logger.ts';
import type { ForwardPayload, SettledForward } from '../../queue/forward.queue.ts';
import type { RenderedEhrForm } from '../../render/ehr-form.ts';
import { assertSelfContained, NotSelfContainedError } from '../../render/self-contained.ts';
import type { EhrCircuit } from './ehr-circuit.ts';
import { FORM_COPIES_IN_FLIGHT, type FormBudget } from './form-budget.ts';
import type { EhrAnswer, EhrClient } from './ehr-client.ts';
import type { FormAttachment } from '../../domain/attachments.ts';
import type { EhrAttachmentRequest, EhrForwardRequest } from '../../domain/forwarding/forward-request.ts';
import { sha256Hex } from '../../domain/forwarding/content-digest.ts';
import { attachmentMessageIdOf, messageIdOf } from '../../domain/ids.ts';
import { judge, RetryableForwardError } from './forward-policy.ts';
import type { AttemptOutcome, EhrForwarding, KeptForm } from '../../services/forwarding.service.ts';

export type EhrForwardPayload = ForwardPayload;

/** A file's copies a forward holds at once: its bytes, their base64, and the request body. */
const ATTACHMENT_COPIES_IN_FLIGHT = 4;

export interface EhrForwardDeps {
  readonly forwarding: EhrForwarding;
  readonly ehr: EhrClient;
  readonly circuit: EhrCircuit;
  readonly renderEhrForm: (source: EhrFormSource) => RenderedEhrForm;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly maxAttempts: number;
  /** The bytes of forms this process's jobs hold at once (form-budget.ts). */
  readonly formBudget: FormBudget;
}

export type ForwardResult =
  | SettledForward
  /** No such referral in this installation's database: the worker fails the job (foreign-job.ts). */
  | 'unknown-referral'
  /** The EHR's circuit is open: try again then, without counting this as an attempt. */
  | { readonly deferredUntil: Date };

/** What a finished forward job returns (a deferred one goes back to the queue instead). */

/** Thrown for an answer that will not get better by retrying; the job fails for good. */
export class FinalForwardError extends UnrecoverableError {
  override readonly name = 'FinalForwardError';
  readonly code: string;
  constructor(code: string) {
    // The message is the code alone: it is the job's failedReason, which the dashboard shows only
    // when it is a code (api/admin/job-redaction.ts).
    super(code);
    this.code = code;
  }
}

/** One attempt at forwarding `payload.referralId`; `attempt` counts from 1. */
export async function forwardReferral(
  deps: EhrForwardDeps,
  payload: EhrForwardPayload,
  attempt: number,
): Promise<ForwardResult> {
  const plan = await deps.forwarding.plan(payload.referralId);
  if (plan.kind === 'nothing-to-send' || plan.kind === 'unknown-referral') return plan.kind;
  if (plan.kind === 'withdrawn') {
    await deps.forwarding.withdraw(payload.referralId);
    return 'withdrawn';
  }
  if (plan.kind === 'waiting-for-scan') return { deferredUntil: plan.until };
  const admission = await deps.circuit.admit();
  if (admission.kind === 'wait') return { deferredUntil: admission.until };

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

  // The form's bytes are held from its rendering until the attempt is recorded (form-budget.ts).
  let release: () => void = () => undefined;
  try {
    let form: KeptForm;
    try {
      const rendered = await renderWithin(deps, source, (taken) => {
        release = taken;
      });
      assertSelfContained(rendered.html);
      const kept = await deps.forwarding.keepForm(
        messageId,
        record.id,
        record.version,
        rendered,
        source.attachments ?? [],
      );
      if (kept.changed) {
        // The same version rendered to other bytes (the catalog's names changed, or the templates did
        // in an upgrade): the EHR may hold the first bytes under this message ID, so they go again.
        deps.logger.warn({ referralId: record.id, messageId }, 'ehr form changed within one version');
      }
      form = kept.form;
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
      throw new FinalForwardError(code);
    }

    const body = Buffer.from(
      JSON.stringify(forwardRequest(messageId, record.id, record.version, source, form)),
    );
    const sent = await deps.ehr.send(body, messageId);
    // The form's bytes are no longer needed: its budget is given back before any file takes its own,
    // so that no two jobs each hold a form while waiting for room for a file.
    release();
    release = () => undefined;
    // The files the kept form lists go once the form is delivered, each as a document of its own; the
    // attempt is delivered when all of them are, and a retry sends them all again (the EHR keeps one
    // of each message ID).
    let answer = sent;
    let judgement = judge(sent, attempt, deps.maxAttempts);
    let failedFile: number | undefined;
    for (const file of judgement.outcome === 'delivered' ? form.attachments : []) {
      const fileAnswer = await sendAttachment(deps, record, file);
      if (fileAnswer === 'changed') {
        // The store holds other bytes than the file's SHA-256 was taken of: never sent, and no retry
        // makes them right.
        await deps.forwarding.recordAttempt({
          ...base,
          durationMs: elapsed(started),
          sha256: form.sha256,
          outcome: 'failed',
          httpStatus: null,
          errorCode: 'attachment_changed',
          reference: null,
          reason: `file ${file.number} is not the file that was added`,
        });
        throw new FinalForwardError('attachment_changed');
      }
      answer = fileAnswer;
      judgement = judge(answer, attempt, deps.maxAttempts);
      if (judgement.outcome !== 'delivered') {
        failedFile = file.number;
        break;
      }
    }
    const recorded: AttemptOutcome = {
      ...base,
      durationMs: elapsed(started),
      sha256: form.sha256,
      outcome: judgement.outcome,
      httpStatus: answer.kind === 'response' ? answer.status : null,
      errorCode: answer.kind === 'network-error' ? answer.code : null,
      reference: sent.kind === 'response' && judgement.outcome === 'delivered' ? sent.reference : null,
      ...(judgement.reason === undefined
        ? {}
        : {
            reason: failedFile === undefined ? judgement.reason : `file ${failedFile}: ${judgement.reason}`,
          }),
    };
    await deps.forwarding.recordAttempt(recorded);
    await deps.circuit.observe(answer, admission.kind === 'probe');
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
    switch (judgement.outcome) {
      case 'delivered':
        return 'delivered';
      case 'retrying':
        throw new RetryableForwardError(
          recorded.errorCode ?? `HTTP_${recorded.httpStatus}`,
          answer.kind === 'response' ? answer.retryAfterMs : undefined,
        );
      case 'failed':
        throw new FinalForwardError(recorded.errorCode ?? `HTTP_${recorded.httpStatus}`);
    }
  } finally {
    release();
  }
}

/**
 * Sends one file of the form: its bytes read from the database and checked against the SHA-256 the
 * form lists, within the forms' budget (the bytes, their base64 and the request body).
 */
async function sendAttachment(
  deps: EhrForwardDeps,
  record: { readonly id: string; readonly version: number },
  file: FormAttachment,
): Promise<EhrAnswer | 'changed'> {
  const release = await deps.formBudget.take(ATTACHMENT_COPIES_IN_FLIGHT * file.sizeBytes);
  try {
    const content = await deps.forwarding.attachmentContent(file);
    if (sha256Hex(content) !== file.sha256) return 'changed';
    const request: EhrAttachmentRequest = {
      messageId: attachmentMessageIdOf(record.id, record.version, file.number),
      formMessageId: messageIdOf(record.id, record.version),
      referralId: record.id,
      version: record.version,
      document: {
        number: file.number,
        fileName: file.fileName,
        mediaType: file.mediaType,
        sizeBytes: file.sizeBytes,
        sha256: file.sha256,
        contentBase64: content.toString('base64'),
      },
    };
    return await deps.ehr.send(Buffer.from(JSON.stringify(request)), request.messageId);
  } finally {
    release();
  }
}

/**
 * Renders the form within the budget. One that does not fit now is dropped while it waits for room,
 * and rendered again once there is: rendering is deterministic, so the bytes are the same.
 */
async function renderWithin(
  deps: EhrForwardDeps,
  source: EhrFormSource,
  hold: (release: () => void) => void,
): Promise<RenderedEhrForm> {
  const rendered = deps.renderEhrForm(source);
  const bytes = FORM_COPIES_IN_FLIGHT * rendered.html.length;
  const now = deps.formBudget.tryTake(bytes);
  if (now !== undefined) {
    hold(now);
    return rendered;
  }
  hold(await deps.formBudget.take(bytes));
  return deps.renderEhrForm(source);
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
