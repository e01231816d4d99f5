// The database side of forwarding a referral's form to the EHR: what is due, and the record of each
// attempt. The forward worker asks `plan` what to send, makes the HTTP call outside any transaction,
// then hands the outcome to `recordAttempt`, which writes the ledger row, the referral's forwarding
// state, the timeline event and the audit row in one transaction, under a lock on the referral row
// (so a submit or cancel that lands meanwhile is never overwritten).
import { v7 as uuidv7 } from 'uuid';
import { SCAN_RECHECK_MS, SCAN_WAIT_BEFORE_FORWARD_MS, type FormAttachment } from '../domain/attachments.ts';
import type { Clock } from '../domain/clock.ts';
import { attachmentMessageIdOf } from '../domain/ids.ts';
import { LIFECYCLE, REFHUB_SYSTEM } from '../domain/lifecycle.ts';
import type { EhrFormSource } from '../domain/referral-view.ts';
import type { Caller } from './caller.ts';
import { timeline, type TimelineEntry } from '../domain/timeline.ts';
import { NotFoundError, ReferralNotFoundError } from '../errors.ts';
import type { RenderedEhrForm } from '../render/ehr-form.ts';
import { sha256Hex } from '../domain/forwarding/content-digest.ts';
import { auditEventOf, systemActor } from '../domain/audit.ts';
import type { EhrSubmission, SubmissionOutcome } from '../db/forwarding/ledger.ts';
import { type ReferralRecord } from '../db/referrals/rows.ts';
import type { CapabilityStores, Stores } from '../db/stores.ts';
import { ehrFormSourceFor } from './referrals/queries.ts';
import type { Metrics } from '../observability/metrics.ts';

export interface ForwardingDeps {
  readonly stores: Pick<Stores, 'referrals' | 'attachments' | 'forwarding' | 'audit' | 'transaction'>;
  readonly clock: Clock;
  readonly metrics: Pick<Metrics, 'observeEhrAttempt'>;
}

const LEDGER_READ = 'ehr.submissions.read';
const FORM_READ = 'ehr.submissions.form.read';

/** A form as it was sent: the bytes, the template names and the hex SHA-256 of the bytes. */
export interface KeptForm extends RenderedEhrForm {
  readonly sha256: string;
  /** The files the form lists, sent with it each as a document of its own. */
  readonly attachments: readonly FormAttachment[];
}

/** What `GET …/ehr-submissions/{attemptId}/form` answers. */
export interface SentFormView {
  readonly attemptId: string;
  readonly messageId: string;
  readonly version: number;
  readonly sha256: string;
  readonly ehrFormType: string;
  readonly ehrForm: string;
  /** The files sent with the form, each under its own message ID. */
  readonly attachments: SentAttachmentView[];
}

/** A file sent with a form, as the proof of an attempt shows it. */
export interface SentAttachmentView {
  readonly messageId: string;
  readonly attachmentId: string;
  readonly number: number;
  readonly fileName: string;
  readonly mediaType: string;
  readonly sizeBytes: number;
  readonly sha256: string;
}

export type ForwardPlan =
  | { readonly kind: 'nothing-to-send' }
  /** Due, but the referral went back to draft (or was deleted) before anything was sent. */
  | { readonly kind: 'withdrawn' }
  /** Not in this database: the job is another installation's (workers/foreign-job.ts). */
  | { readonly kind: 'unknown-referral' }
  /** A file of the referral still waits for its malware scan: look again then, without an attempt. */
  | { readonly kind: 'waiting-for-scan'; readonly until: Date }
  | { readonly kind: 'send'; readonly record: ReferralRecord; readonly source: EhrFormSource };

export interface AttemptOutcome {
  readonly referralId: string;
  readonly messageId: string;
  /** The version that was rendered and sent. */
  readonly version: number;
  readonly attempt: number;
  readonly startedAt: Date;
  readonly durationMs: number;
  readonly sha256: string | null;
  readonly outcome: SubmissionOutcome;
  readonly httpStatus: number | null;
  readonly errorCode: string | null;
  readonly reference: string | null;
  /** For a failure: why, in words for the timeline ("the EHR refused it (HTTP 422)"). */
  readonly reason?: string;
  readonly requestId: string;
}

export interface SubmissionView {
  readonly id: string;
  readonly messageId: string;
  readonly version: number;
  readonly attempt: number;
  readonly attemptedAt: string;
  readonly outcome: SubmissionOutcome;
  readonly httpStatus?: number;
  readonly errorCode?: string;
  readonly sha256?: string;
  readonly ehrReference?: string;
  readonly durationMs: number;
}

/**
 * Who asks for a referral's ledger: a caller acting for an institution that can see the referral, or
 * an ops key, which sees any referral's ledger (it holds IDs, hashes and outcomes, no patient data).
 */
export type LedgerReader = Caller | OpsReader;

export interface OpsReader {
  readonly role: 'ops';
  readonly apiKeyId: string;
  readonly system: string;
  readonly requestId: string;
}

/** Failed forwards an operator's retry queues in one transaction. */
const RETRY_BATCH = 500;

export function createEhrForwarding(deps: ForwardingDeps) {
  /** Queues the failed forwards among `ids` again, with their outbox rows and one audit row. */
  async function requeue(
    tx: Pick<CapabilityStores, 'forwarding' | 'referrals'>,
    ids: readonly string[],
    requestId: string,
  ) {
    const requeued = await tx.forwarding.ledger.requeueFailed(ids);
    const now = deps.clock.now();
    if (requeued.length > 0) {
      await tx.referrals.recordChange({
        timeline: [],
        outbox: requeued.map((r) => ({
          topic: 'ehr-forward-again',
          referralId: r.id,
          version: r.version,
          requestId,
          at: now,
        })),
        audit: auditEventOf(
          systemActor(requestId),
          'ehr.forward.retry-failed',
          requeued.map((r) => r.id),
          now,
        ),
      });
    }
    return requeued.map((r) => r.id);
  }

  return {
    /** What to do for a forward job, read fresh (the job may be late, repeated or coalesced). */
    async plan(referralId: string): Promise<ForwardPlan> {
      // The parts come in the same statement: most referrals a job reads are due to be sent.
      const { referrals } = deps.stores;
      const found = await referrals.findForSystemWithParts(referralId);
      // Deleted (only a draft can be) or never known: nothing goes to the EHR. A referral is never
      // removed, so one without a sender was never in this database.
      if (found === undefined) {
        return (await referrals.senderOf(referralId)) === undefined
          ? { kind: 'unknown-referral' }
          : { kind: 'withdrawn' };
      }
      const { record } = found;
      if (record.ehr.state !== 'queued' && record.ehr.state !== 'failed') {
        return { kind: 'nothing-to-send' };
      }
      if (record.status === 'draft') return { kind: 'withdrawn' };
      // A file waiting for its scan goes with the form once it is clean, if that is soon enough.
      const { attachments } = deps.stores;
      const now = deps.clock.now();
      if (
        now.getTime() < record.updatedAt.getTime() + SCAN_WAIT_BEFORE_FORWARD_MS &&
        (await attachments.pendingScanOf(record.id)).length > 0
      ) {
        return { kind: 'waiting-for-scan', until: new Date(now.getTime() + SCAN_RECHECK_MS) };
      }
      return {
        kind: 'send',
        record,
        source: { ...ehrFormSourceFor(found), attachments: await attachments.readable(record.id) },
      };
    },

    /**
     * An operator's decision, after fixing what made the EHR refuse: forwards that failed are due
     * again, each at its referral's current version, through the outbox like any other trigger.
     * `referralIds` undefined retries every forward failed when the call starts. Returns the
     * referrals queued again. They are queued RETRY_BATCH at a time, one transaction each, and
     * `onProgress` hears after each batch: a retry that stops half-way has queued whole batches,
     * and running it again queues the rest.
     */
    async retryFailed(
      referralIds: readonly string[] | undefined,
      requestId: string,
      onProgress?: (done: number, total: number) => void,
    ): Promise<string[]> {
      const ids = referralIds ?? (await deps.stores.forwarding.ledger.failedIds());
      const requeuedIds: string[] = [];
      for (let start = 0; start < ids.length; start += RETRY_BATCH) {
        const batch = ids.slice(start, start + RETRY_BATCH);
        requeuedIds.push(...(await deps.stores.transaction((tx) => requeue(tx, batch, requestId))));
        onProgress?.(start + batch.length, ids.length);
      }
      return requeuedIds;
    },

    /** A file's bytes, read for sending with its form. */
    async attachmentContent(file: FormAttachment): Promise<Buffer> {
      // Opened a chunk at a time: the EHR gets the plaintext, whose digest the form lists.
      const content = deps.stores.attachments.content(file.id, file.sizeBytes);
      const pieces: Buffer[] = [];
      for await (const piece of content) {
        pieces.push(piece);
      }
      return Buffer.concat(pieces);
    },

    async withdraw(referralId: string): Promise<void> {
      await deps.stores.forwarding.ledger.withdrawForward(referralId);
    },

    async recordAttempt(a: AttemptOutcome): Promise<void> {
      const now = deps.clock.now();
      const event = eventOf(a);
      const operation = a.outcome === 'delivered' ? 'ehr-forwarded' : 'ehr-forward-failed';
      const found = await deps.stores.forwarding.ledger.recordAttempt({
        submission: {
          id: uuidv7(),
          referralId: a.referralId,
          messageId: a.messageId,
          version: a.version,
          attempt: a.attempt,
          attemptedAt: a.startedAt,
          outcome: a.outcome,
          httpStatus: a.httpStatus,
          errorCode: a.errorCode,
          sha256: a.sha256,
          ehrReference: a.reference,
          durationMs: a.durationMs,
          requestId: a.requestId,
        },
        // This attempt settles the due forward only if it carried the due version or a later one; a
        // submit or cancel that landed while it was in flight keeps the referral queued for its own.
        settlesAs: a.outcome === 'retrying' ? undefined : a.outcome === 'delivered' ? 'forwarded' : 'failed',
        delivered: a.outcome === 'delivered',
        // The lifecycle table says from which statuses the system writes the event. refhub delivered
        // the form, so the timeline names refhub, not the sender's system.
        event: event && {
          id: uuidv7(),
          referralId: a.referralId,
          type: event.type,
          system: REFHUB_SYSTEM,
          description: event.description,
          eventDescription: event.eventDescription,
          producedAt: now,
          fromStatuses: LIFECYCLE[operation].from.system,
        },
        audit: auditEventOf(systemActor(a.requestId), `ehr.forward.${a.outcome}`, [a.referralId], now),
      });
      if (!found) throw new ReferralNotFoundError(a.referralId);
      deps.metrics.observeEhrAttempt(a.outcome, a.httpStatus, a.durationMs / 1000);
    },

    /**
     * Keeps the bytes of a message the first time they are sent, and returns the bytes to send: the
     * kept ones. `changed` says the version now renders to other bytes than were first sent.
     */
    async keepForm(
      messageId: string,
      referralId: string,
      version: number,
      rendered: RenderedEhrForm,
      attachments: readonly FormAttachment[],
    ): Promise<{ readonly form: KeptForm; readonly changed: boolean }> {
      const fresh = {
        messageId,
        referralId,
        version,
        ...rendered,
        attachments,
        sha256: sha256Hex(rendered.html),
      };
      const kept = await deps.stores.forwarding.forms.keep(fresh, deps.clock.now());
      return {
        form: {
          html: kept.html,
          formType: kept.formType,
          sha256: kept.sha256,
          attachments: kept.attachments,
        },
        changed: kept.sha256 !== fresh.sha256,
      };
    },

    /**
     * The exact form one attempt sent, with its hash, for an institution that can see the referral
     * (the form is patient data: ops keys do not read it). Audited as a read of the form.
     */
    async formOfAttempt(caller: Caller, referralId: string, attemptId: string): Promise<SentFormView> {
      return deps.stores.transaction(async (tx) => {
        const record = await tx.referrals.findVisible(referralId, caller.institution);
        if (record === undefined) throw new ReferralNotFoundError(referralId);
        const attempt = (await tx.forwarding.ledger.list(referralId)).find((s) => s.id === attemptId);
        const form =
          attempt === undefined ? undefined : await tx.forwarding.forms.byMessageId(attempt.messageId);
        if (attempt === undefined || form === undefined) {
          throw new NotFoundError(`Referral ${referralId} has no EHR attempt ${attemptId} that sent a form.`);
        }
        await tx.audit.record(auditEventOf(caller, FORM_READ, [referralId], deps.clock.now()));
        return {
          attemptId,
          messageId: form.messageId,
          version: form.version,
          sha256: form.sha256,
          ehrFormType: form.formType,
          ehrForm: form.html,
          attachments: form.attachments.map((a) => ({
            messageId: attachmentMessageIdOf(form.referralId, form.version, a.number),
            attachmentId: a.id,
            number: a.number,
            fileName: a.fileName,
            mediaType: a.mediaType,
            sizeBytes: a.sizeBytes,
            sha256: a.sha256,
          })),
        };
      });
    },

    /** The ledger of a referral, oldest attempt first; 404 for an institution that cannot see it. */
    async submissions(reader: LedgerReader, referralId: string): Promise<SubmissionView[]> {
      return deps.stores.transaction(async (tx) => {
        const record =
          reader.role === 'ops'
            ? await tx.referrals.findForSystem(referralId)
            : await tx.referrals.findVisible(referralId, reader.institution);
        if (record === undefined) throw new ReferralNotFoundError(referralId);
        const now = deps.clock.now();
        if (reader.role !== 'ops')
          await tx.audit.record(auditEventOf(reader, LEDGER_READ, [referralId], now));
        else {
          // An ops key reads for no institution, and no person is named with it.
          const actor = { ...reader, institution: null, requesterIdentifier: null };
          await tx.audit.record(auditEventOf(actor, LEDGER_READ, [referralId], now));
        }
        return (await tx.forwarding.ledger.list(referralId)).map(toSubmissionView);
      });
    },
  };
}

function eventOf(a: AttemptOutcome): TimelineEntry | undefined {
  if (a.outcome === 'delivered') return timeline.ehrForwarded(a.reference);
  if (a.outcome === 'failed') return timeline.ehrForwardFailed(a.reason ?? 'the EHR did not accept it');
  return undefined;
}

function toSubmissionView(s: EhrSubmission): SubmissionView {
  return {
    id: s.id,
    messageId: s.messageId,
    version: s.version,
    attempt: s.attempt,
    attemptedAt: s.attemptedAt.toISOString(),
    outcome: s.outcome,
    ...(s.httpStatus === null ? {} : { httpStatus: s.httpStatus }),
    ...(s.errorCode === null ? {} : { errorCode: s.errorCode }),
    ...(s.sha256 === null ? {} : { sha256: s.sha256 }),
    ...(s.ehrReference === null ? {} : { ehrReference: s.ehrReference }),
    durationMs: s.durationMs,
  };
}

export type EhrForwarding = ReturnType<typeof createEhrForwarding>;
