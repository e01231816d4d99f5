// The sentences the timeline shows. Clients display `description` and never branch on `type`, so
// each one is a complete sentence a person can read (contract §6). A time in a sentence is written
// in the installation's display zone, by the formatter the service passes in (display-time.ts).
// Each event's type is the one the lifecycle table names for its operation: the table alone says
// which operation emits which event.
//
// Each entry has two sentences, made here together. The timeline's quotes what a person typed (a
// cancel note, a rejection, a request to act, an appointment's location), which may name the patient:
// it is read only through the referral, and stored sealed. The event's, for the event feed and
// webhooks, is the same sentence without the quote: they carry no patient data (domain/events.ts).
import type { DisplayTime } from './display-time.ts';
import { APPOINTMENT_EVENTS, LIFECYCLE } from './lifecycle.ts';
import type { ReasonView } from './reasons.ts';
import type { AppointmentStatus } from './statuses.ts';

export interface TimelineEntry {
  readonly type: string;
  /** The timeline's sentence: it may quote what a person typed. */
  readonly description: string;
  /** The sentence of the event feed and webhooks: the same, without any free text. */
  readonly eventDescription: string;
  /** The coded reason the step was given for: its words are in both sentences, its code beside them. */
  readonly reason?: ReasonView;
}

function quote(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > 300 ? `${oneLine.slice(0, 297)}...` : oneLine;
}

/** An entry that quotes nothing: both sentences are the same. */
function entry(type: string, description: string): TimelineEntry {
  return { type, description, eventDescription: description };
}

/** An entry whose timeline sentence is `said` with `text` quoted after it, and whose event's ends there. */
function quoting(type: string, said: string, text: string): TimelineEntry {
  return { type, description: `${said}: ${quote(text)}`, eventDescription: `${said}.` };
}

/**
 * An entry for a step given for a reason: the catalog's words in parentheses after what was done (in
 * both sentences: they are not patient data), and the comment, when there is one, quoted in the
 * timeline's alone. A step without a code quotes its comment as before reasons had codes.
 */
function reasoned(
  type: string,
  said: string,
  reason: ReasonView | undefined,
  comment: string | undefined,
): TimelineEntry {
  const saidWithReason = reason === undefined ? said : `${said} (${quote(reason.display)})`;
  const hasComment = comment !== undefined && comment.trim() !== '';
  const base = hasComment ? quoting(type, saidWithReason, comment) : entry(type, `${saidWithReason}.`);
  return reason === undefined ? base : { ...base, reason };
}

/** Why a step was taken: a code of the catalog's reasons and what the person wrote beside it. */
export interface GivenReason {
  readonly reason?: ReasonView | undefined;
  readonly comment?: string | undefined;
}

export const timeline = {
  created: (actor: string): TimelineEntry =>
    entry(LIFECYCLE.create.event, `${actor} created the referral as a draft.`),
  updated: (actor: string, fields: readonly string[]): TimelineEntry =>
    entry(
      LIFECYCLE.update.event,
      fields.length === 0
        ? `${actor} updated the referral.`
        : `${actor} updated the referral (${fields.join(', ')}).`,
    ),
  submitted: (actor: string, provider: string): TimelineEntry =>
    entry(
      LIFECYCLE.submit.event,
      `${actor} submitted the referral to ${provider}; it is awaiting acceptance.`,
    ),
  cancelled: (actor: string, given: GivenReason): TimelineEntry =>
    reasoned(LIFECYCLE.cancel.event, `${actor} cancelled the referral`, given.reason, given.comment),
  backToDraft: (actor: string, given: GivenReason = {}): TimelineEntry =>
    reasoned(
      LIFECYCLE['back-to-draft'].event,
      `${actor} returned the referral to draft`,
      given.reason,
      given.comment,
    ),
  /** The referral ends here: `to` (the provider and its offering) has its successor. */
  redirected: (actor: string, to: string, given: GivenReason): TimelineEntry =>
    reasoned(
      LIFECYCLE.redirect.event,
      `${actor} redirected the referral to ${to}`,
      given.reason,
      given.comment,
    ),
  /**
   * A redirect's successor opens with it (after the steps copied from `from`, its predecessor's
   * provider and offering): it is submitted, as a submit leaves a referral, so its event is the
   * submit's.
   */
  redirectedHere: (actor: string, from: string, to: string, given: GivenReason): TimelineEntry =>
    reasoned(
      LIFECYCLE.submit.event,
      `${actor} redirected the referral from ${from} to ${to}, where it is awaiting acceptance`,
      given.reason,
      given.comment,
    ),
  accepted: (actor: string): TimelineEntry =>
    entry(LIFECYCLE.accept.event, `${actor} accepted the referral.`),
  /** Triage accepted it with another priority: from what (null: none set) to what, and why. */
  acceptedWithPriority: (actor: string, from: string | null, to: string, comment: string): TimelineEntry =>
    quoting(
      LIFECYCLE.accept.event,
      from === null
        ? `${actor} accepted the referral with the priority ${quote(to)}`
        : `${actor} accepted the referral, changing its priority from ${quote(from)} to ${quote(to)}`,
      comment,
    ),
  rejected: (actor: string, given: GivenReason): TimelineEntry =>
    reasoned(LIFECYCLE.reject.event, `${actor} rejected the referral`, given.reason, given.comment),
  actionRequested: (actor: string, given: GivenReason): TimelineEntry =>
    reasoned(
      LIFECYCLE['request-action'].event,
      `${actor} asked the sender to act on the referral`,
      given.reason,
      given.comment,
    ),
  // The location is quoted on the timeline only; the event keeps the time, which names no one.
  appointment: (
    actor: string,
    status: AppointmentStatus,
    startAt: Date,
    location: string,
    display: DisplayTime,
  ): TimelineEntry => {
    const when = display.dateTime(startAt);
    const sentence = (where: string): string => {
      switch (status) {
        case 'scheduled':
          return `${actor} scheduled an appointment for ${when}${where}.`;
        case 'actualized':
          return `The appointment on ${when}${where} took place.`;
        case 'no-show':
          return `The patient missed the appointment on ${when}${where}.`;
        case 'cancelled':
          return `The appointment on ${when}${where} was cancelled.`;
      }
    };
    return {
      type: APPOINTMENT_EVENTS[status],
      description: sentence(` at ${quote(location)}`),
      eventDescription: sentence(''),
    };
  },
  // The consult summary is never quoted: it is clinical, and the referral's outcome carries it. The
  // outcome's words are the catalog's.
  completed: (actor: string, outcome: string, files: number): TimelineEntry =>
    entry(
      LIFECYCLE.complete.event,
      `${actor} completed the referral: ${outcome}.` +
        (files === 0 ? '' : ` ${files === 1 ? 'One file is' : `${files} files are`} part of the outcome.`),
    ),
  outcomeAcknowledged: (actor: string): TimelineEntry =>
    entry(LIFECYCLE['acknowledge-outcome'].event, `${actor} acknowledged the outcome of the referral.`),
  noteAdded: (actor: string): TimelineEntry => entry(LIFECYCLE['add-note'].event, `${actor} added a note.`),
  // The file's name is never quoted: it may name the patient. Its type and size say which file it was.
  attachmentAdded: (actor: string, type: string, size: string): TimelineEntry =>
    entry(LIFECYCLE['add-attachment'].event, `${actor} attached a file (${type}, ${size}).`),
  attachmentRemoved: (actor: string, type: string, size: string): TimelineEntry =>
    entry(LIFECYCLE['remove-attachment'].event, `${actor} removed a file (${type}, ${size}).`),
  reminderSent: (provider: string): TimelineEntry =>
    entry(LIFECYCLE['reminder-sent'].event, `Reminder sent to ${provider} to create the patient record.`),
  // The archive's name is no patient data: the feed's sentence may say it too.
  archived: (archive: string): TimelineEntry =>
    entry(
      LIFECYCLE.archive.event,
      `refhub archived the referral: its record is in archive ${archive}, and its clinical content was removed.`,
    ),
  triageOverdue: (provider: string, due: string): TimelineEntry =>
    entry(
      LIFECYCLE['triage-overdue'].event,
      `Triage is overdue: ${provider} was to accept or decline the referral by ${due}.`,
    ),
  ehrForwarded: (reference: string | null): TimelineEntry =>
    entry(
      LIFECYCLE['ehr-forwarded'].event,
      reference === null
        ? 'The referral form was delivered to the national health record.'
        : `The referral form was delivered to the national health record (reference ${reference}).`,
    ),
  // The reason is refhub's own words about the EHR's answer (workers/forwarding), never typed text.
  ehrForwardFailed: (reason: string): TimelineEntry =>
    entry(
      LIFECYCLE['ehr-forward-failed'].event,
      `The referral form could not be delivered to the national health record: ${reason}.`,
    ),
} as const;
