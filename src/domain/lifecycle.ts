// The referral lifecycle as data (contract §4). Each operation names who may perform it from which
// statuses, where it leads, the timeline event it writes and the outbox topics it enqueues. The API,
// the web form, the workers and the tests all read this one table; nothing else decides transitions.
import { InvalidTransitionError, type RefusalReason } from '../errors.ts';
import { STATUSES, type AppointmentStatus, type Status } from './statuses.ts';

export type Actor = 'sender' | 'provider' | 'system';

/**
 * The system the timeline names for a step of the `system` actor (a delivery to the EHR recorded, a
 * reminder sent): refhub itself, never the sender's or the provider's system, which took no part.
 */
export const REFHUB_SYSTEM = 'refhub';

/**
 * Background work a change records in the outbox, each topic spelled here and nowhere else: a forward
 * that is now due (`forward`), an operator's retry of a forward that failed for good (`forwardAgain`:
 * the same version again, so what is left of its failed job is cleared first), the provider
 * reminders' schedule (`reminders`), and the malware scans of the referral's files that wait for one
 * (`attachmentScan`). The words are stored in outbox rows, so they never change; the forward, reminder
 * and scan queues take their names from them (queue/*.queue.ts).
 */
export const OUTBOX_TOPICS = {
  forward: 'ehr-forward',
  forwardAgain: 'ehr-forward-again',
  reminders: 'reminders',
  attachmentScan: 'attachment-scan',
} as const;

export type OutboxTopic = (typeof OUTBOX_TOPICS)[keyof typeof OUTBOX_TOPICS];

export type Target =
  | { readonly kind: 'status'; readonly status: Status }
  | { readonly kind: 'same' }
  | { readonly kind: 'deleted' }
  /** scheduled while any appointment is not cancelled, else accepted */
  | { readonly kind: 'by-appointments' };

export interface OperationRule {
  /** The statuses each actor may perform the operation from. An absent actor may never perform it. */
  readonly from: Readonly<Partial<Record<Actor, readonly Status[]>>>;
  readonly to: Target;
  /** The timeline event type, or null (delete writes none; appointments choose by their status). */
  readonly event: string | null;
  /** Work for the background, written to the outbox in the same transaction (see outboxTopics). */
  readonly outbox: readonly OutboxTopic[];
  /** The sender may perform it only while the offering is cancellable (isCancellable). */
  readonly senderNeedsCancellableOffering?: boolean;
}

const EDITABLE: readonly Status[] = ['draft', 'sender-action-required'];
const SUBMITTED: readonly Status[] = [
  'pending-acceptance',
  'accepted',
  'sender-action-required',
  'scheduled',
  'rejected',
  'cancelled',
  'completed',
  'outcome-acknowledged',
  'redirected',
];
const ALL: readonly Status[] = ['draft', ...SUBMITTED];

export const LIFECYCLE = {
  create: {
    from: {},
    to: { kind: 'status', status: 'draft' },
    event: 'referral.created',
    outbox: [],
  },
  update: {
    from: { sender: EDITABLE },
    to: { kind: 'same' },
    event: 'referral.updated',
    outbox: [],
  },
  submit: {
    from: { sender: EDITABLE },
    to: { kind: 'status', status: 'pending-acceptance' },
    event: 'referral.pending-acceptance',
    outbox: [OUTBOX_TOPICS.forward],
  },
  delete: {
    from: { sender: ['draft'] },
    to: { kind: 'deleted' },
    event: null,
    outbox: [],
  },
  cancel: {
    from: {
      sender: ['pending-acceptance', 'accepted', 'sender-action-required'],
      provider: ['pending-acceptance', 'accepted', 'sender-action-required', 'scheduled'],
    },
    to: { kind: 'status', status: 'cancelled' },
    event: 'referral.cancelled',
    outbox: [OUTBOX_TOPICS.forward],
    senderNeedsCancellableOffering: true,
  },
  'back-to-draft': {
    from: { sender: ['pending-acceptance', 'sender-action-required'] },
    to: { kind: 'status', status: 'draft' },
    event: 'referral.back-to-draft',
    outbox: [],
  },
  // The referral ends here and a successor carries it on at another offering (docs/api.md,
  // "Redirecting a referral"): the successor is a referral of its own, submitted, whose own opening
  // event is the submit's (`referral.pending-acceptance`). The EHR gets the final form of this one,
  // and the successor's first. The sender may redirect only while it may cancel.
  redirect: {
    from: { sender: ['pending-acceptance'], provider: ['pending-acceptance', 'accepted'] },
    to: { kind: 'status', status: 'redirected' },
    event: 'referral.redirected',
    outbox: [OUTBOX_TOPICS.forward],
    senderNeedsCancellableOffering: true,
  },
  accept: {
    from: { provider: ['pending-acceptance'] },
    to: { kind: 'status', status: 'accepted' },
    event: 'referral.accepted',
    outbox: [],
  },
  reject: {
    from: { provider: ['pending-acceptance', 'accepted'] },
    to: { kind: 'status', status: 'rejected' },
    event: 'referral.rejected',
    outbox: [],
  },
  'request-action': {
    from: { provider: ['pending-acceptance', 'accepted'] },
    to: { kind: 'status', status: 'sender-action-required' },
    event: 'referral.sender-action-required',
    outbox: [],
  },
  'upsert-appointment': {
    from: { provider: ['accepted', 'scheduled'] },
    to: { kind: 'by-appointments' },
    event: null,
    outbox: [],
  },
  // The provider closes the loop: what happened, in a code of the catalog's list and the consult
  // summary. The national record gets the form again, now with its Outcome section. The referral waits
  // for the sender to read the outcome (it is listed under sender-action-required until then).
  complete: {
    from: { provider: ['accepted', 'scheduled'] },
    to: { kind: 'status', status: 'completed' },
    event: 'referral.completed',
    outbox: [OUTBOX_TOPICS.forward],
  },
  'acknowledge-outcome': {
    from: { sender: ['completed'] },
    to: { kind: 'status', status: 'outcome-acknowledged' },
    event: 'referral.outcome-acknowledged',
    outbox: [],
  },
  'add-note': {
    from: { sender: ALL, provider: SUBMITTED },
    to: { kind: 'same' },
    event: 'note.created',
    outbox: [],
  },
  // The sender attaches files while it may change the referral; the provider once it took it on (a
  // letter, a result). Only the sender removes one, and only from a draft: once submitted, the
  // provider and the national record may have it.
  'add-attachment': {
    from: { sender: EDITABLE, provider: ['accepted', 'scheduled'] },
    to: { kind: 'same' },
    event: 'referral.attachment-added',
    outbox: [OUTBOX_TOPICS.attachmentScan],
  },
  'remove-attachment': {
    from: { sender: ['draft'] },
    to: { kind: 'same' },
    event: 'referral.attachment-removed',
    outbox: [],
  },
  'reminder-sent': {
    from: { system: ['pending-acceptance'] },
    to: { kind: 'same' },
    event: 'referral.provider-patient-create-reminder-sent',
    outbox: [],
  },
  // The provider's triage passed its due time (domain/worklists.ts): said once for each due time, by
  // refhub's scheduled sweep, while the referral still waits.
  'triage-overdue': {
    from: { system: ['pending-acceptance'] },
    to: { kind: 'same' },
    event: 'referral.triage-overdue',
    outbox: [],
  },
  // A forward can finish after the referral went back to draft: the EHR has the form all the same,
  // so the timeline says so.
  'ehr-forwarded': {
    from: { system: ALL },
    to: { kind: 'same' },
    event: 'ehr.forwarded',
    outbox: [],
  },
  'ehr-forward-failed': {
    from: { system: ALL },
    to: { kind: 'same' },
    event: 'ehr.forward-failed',
    outbox: [],
  },
  // Retention (services/retention/referrals-archive.ts): a referral that ended long ago is written to
  // an archive and its clinical content purged. Only from a final status (FINAL_STATUSES below, which
  // this list must equal: a test holds them together), and only by refhub itself.
  archive: {
    from: { system: ['rejected', 'cancelled', 'outcome-acknowledged', 'redirected'] },
    to: { kind: 'status', status: 'archived' },
    event: 'referral.archived',
    outbox: [],
  },
} as const satisfies Record<string, OperationRule>;

export type Operation = keyof typeof LIFECYCLE;
export const OPERATIONS = Object.keys(LIFECYCLE) as Operation[];

export const OPERATION_VERBS: Readonly<Record<Operation, string>> = {
  create: 'create',
  update: 'update',
  submit: 'submit',
  delete: 'delete',
  cancel: 'cancel',
  'back-to-draft': 'return to draft',
  redirect: 'redirect',
  accept: 'accept',
  reject: 'reject',
  'request-action': 'request sender action on',
  'upsert-appointment': 'change appointments of',
  complete: 'complete',
  'acknowledge-outcome': 'acknowledge the outcome of',
  'add-note': 'add a note to',
  'add-attachment': 'attach a file to',
  'remove-attachment': 'remove a file from',
  'reminder-sent': 'send a reminder for',
  'triage-overdue': 'record that triage is overdue for',
  'ehr-forwarded': 'record an EHR forward for',
  'ehr-forward-failed': 'record an EHR forward failure for',
  archive: 'archive',
};

export interface Decision {
  readonly rule: OperationRule;
  /** The status after the operation; undefined when the referral is deleted. */
  readonly next: Status | undefined;
}

export interface DecisionInput {
  readonly status: Status;
  readonly offeringCancellable: boolean;
  /** Appointment statuses after the change, for `upsert-appointment`. */
  readonly appointmentStatuses?: readonly AppointmentStatus[];
}

/** Why an actor may not perform an operation now: a stable code and a sentence for people. */
export interface Refusal {
  readonly reason: Extract<RefusalReason, 'not-in-status' | 'offering-not-cancellable'>;
  readonly detail: string;
}

/** The statuses of a list, as a sentence reads them: "draft or sender-action-required". */
function statusWords(statuses: readonly Status[]): string {
  return statuses.length <= 1
    ? (statuses[0] ?? 'no status')
    : `${statuses.slice(0, -1).join(', ')} or ${statuses.at(-1) ?? ''}`;
}

/**
 * Why `actor` may not perform `operation` now, or undefined when it may, as the table says. The
 * commands refuse with this (decide), and the views list it under blockedActions (actions.ts), so a
 * client reads the same reason before and after it tries. It does not check roles (see access.ts).
 */
export function refusalOf(operation: Operation, actor: Actor, input: DecisionInput): Refusal | undefined {
  const rule: OperationRule = LIFECYCLE[operation];
  const from = rule.from[actor] ?? [];
  if (!from.includes(input.status)) {
    return {
      reason: 'not-in-status',
      detail:
        `Cannot ${OPERATION_VERBS[operation]} a referral whose status is ${input.status}` +
        (from.length === 0 ? '.' : `; the ${actor} may do so when it is ${statusWords(from)}.`),
    };
  }
  if (actor === 'sender' && rule.senderNeedsCancellableOffering === true && !input.offeringCancellable) {
    return {
      reason: 'offering-not-cancellable',
      detail: `This referral's offering cannot be cancelled by the sender (isCancellable is false).`,
    };
  }
  return undefined;
}

/** Whether `actor` may perform `operation` now; it does not check roles (see access.ts). */
export function isAllowed(operation: Operation, actor: Actor, input: DecisionInput): boolean {
  return refusalOf(operation, actor, input) === undefined;
}

/** Decides an operation or throws InvalidTransitionError with the refusal's reason and status. */
export function decide(operation: Operation, actor: Actor, input: DecisionInput): Decision {
  const refusal = refusalOf(operation, actor, input);
  if (refusal !== undefined) throw new InvalidTransitionError(input.status, refusal.reason, refusal.detail);
  const rule: OperationRule = LIFECYCLE[operation];
  return { rule, next: nextStatus(rule.to, input) };
}

function nextStatus(target: Target, input: DecisionInput): Status | undefined {
  switch (target.kind) {
    case 'status':
      return target.status;
    case 'same':
      return input.status;
    case 'deleted':
      return undefined;
    case 'by-appointments':
      return (input.appointmentStatuses ?? []).some((s) => s !== 'cancelled') ? 'scheduled' : 'accepted';
  }
}

/**
 * The outbox topics a decided operation writes: the rule's own, plus the reminders' whenever the status
 * enters or leaves pending-acceptance, so that the provider's reminder schedule follows the status.
 */
export function outboxTopics(decision: Decision, from: Status): OutboxTopic[] {
  const topics = [...decision.rule.outbox];
  if ((from === 'pending-acceptance') !== (decision.next === 'pending-acceptance'))
    topics.push(OUTBOX_TOPICS.reminders);
  return topics;
}

/**
 * The bridge's own bookkeeping (a delivery recorded, a failure, a reminder sent): operations the
 * system performs. They go on the timeline and the ledger, but they are not a change to the
 * referral: they leave its version, its ETag and its ehrForm as they are, so a client's If-Match
 * never goes stale by itself. Only the commands of people and clinic systems change the version.
 */
export function isBookkeeping(operation: Operation): boolean {
  return Object.hasOwn(LIFECYCLE[operation].from, 'system');
}

/** The status a referral is in once archived (the target of `archive`). */
export const ARCHIVED: Status = LIFECYCLE.archive.to.status;

/**
 * The final statuses: those a referral never leaves by anyone's step (no operation of a person that
 * leads to another status may start from them; notes aside, which change nothing), read from the
 * table. `completed` is not one: the sender still acknowledges its outcome. `archived` is past them.
 */
export const FINAL_STATUSES: readonly Status[] = STATUSES.filter(
  (status) =>
    status !== ARCHIVED &&
    Object.values(LIFECYCLE as Record<string, OperationRule>).every(
      (rule) =>
        rule.to.kind === 'same' ||
        (['sender', 'provider'] as const).every((actor) => !(rule.from[actor] ?? []).includes(status)),
    ),
);

/** The status a referral is in before it is first submitted (the target of `create`). */
export const DRAFT: Status = LIFECYCLE.create.to.status;
/** The status in which the provider waits for the sender (the target of `request-action`). */
const AWAITING_SENDER: Status = LIFECYCLE['request-action'].to.status;
/** The status in which the provider's outcome waits for the sender to read it (the target of `complete`). */
export const OUTCOME_TO_ACKNOWLEDGE: Status = LIFECYCLE.complete.to.status;

/**
 * The statuses in which the sender must act (the list's `sender-action-required`): those from which
 * the sender may answer the provider's request, or acknowledge its outcome.
 */
export const SENDER_ACTS_IN: readonly Status[] = [AWAITING_SENDER, OUTCOME_TO_ACKNOWLEDGE];

export type SenderActionReason = 'provider-request' | 'outcome-to-acknowledge';

/** Why the sender must act, in words for the sender's worklist. */
export const SENDER_ACTION_WORDS: Readonly<Record<SenderActionReason, string>> = {
  'provider-request':
    'The provider asked you to act on the referral (the timeline gives its reason): update it and submit it again.',
  'outcome-to-acknowledge':
    'The provider completed the referral and reported its outcome: read it and acknowledge it.',
};

/** Why the sender must act on a referral in `status`, or undefined when it need not. */
export function senderActionReason(status: Status): SenderActionReason | undefined {
  if (status === AWAITING_SENDER) return 'provider-request';
  if (status === OUTCOME_TO_ACKNOWLEDGE) return 'outcome-to-acknowledge';
  return undefined;
}

/**
 * How the sender may change the referral now, as the lifecycle table allows `update`: complete a
 * draft (`edit`), or answer the provider's request (`respond`); undefined when it may not.
 */
export function senderChangeMode(status: Status): 'edit' | 'respond' | undefined {
  if (!isAllowed('update', 'sender', { status, offeringCancellable: true })) return undefined;
  return status === AWAITING_SENDER ? 'respond' : 'edit';
}

/** isCancellable as shown to the sender (contract §4). */
export function isCancellable(status: Status, offeringCancellable: boolean): boolean {
  return isAllowed('cancel', 'sender', { status, offeringCancellable });
}

/** The timeline event of an appointment change, by the appointment's new status. */
export const APPOINTMENT_EVENTS: Readonly<Record<AppointmentStatus, string>> = {
  scheduled: 'appt.scheduled',
  actualized: 'appt.actualized',
  'no-show': 'appt.no-show',
  cancelled: 'appt.cancelled',
};
