// The sentences the timeline shows. Clients display `description` and never branch on `type`, so
// each one is a complete sentence a person can read (contract §6). A time in a sentence is written
// in the installation's display zone, by the formatter the service passes in (display-time.ts).
// Each event's type is the one the lifecycle table names for its operation: the table alone says
// which operation emits which event.
import type { DisplayTime } from './display-time.ts';
import { APPOINTMENT_EVENTS, LIFECYCLE } from './lifecycle.ts';
import type { AppointmentStatus } from './statuses.ts';

export interface TimelineEntry {
  readonly type: string;
  readonly description: string;
}

function quote(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > 300 ? `${oneLine.slice(0, 297)}...` : oneLine;
}

export const timeline = {
  created: (actor: string): TimelineEntry => ({
    type: LIFECYCLE.create.event,
    description: `${actor} created the referral as a draft.`,
  }),
  updated: (actor: string, fields: readonly string[]): TimelineEntry => ({
    type: LIFECYCLE.update.event,
    description:
      fields.length === 0
        ? `${actor} updated the referral.`
        : `${actor} updated the referral (${fields.join(', ')}).`,
  }),
  submitted: (actor: string, provider: string): TimelineEntry => ({
    type: LIFECYCLE.submit.event,
    description: `${actor} submitted the referral to ${provider}; it is awaiting acceptance.`,
  }),
  cancelled: (actor: string, note: string): TimelineEntry => ({
    type: LIFECYCLE.cancel.event,
    description: `${actor} cancelled the referral: ${quote(note)}`,
  }),
  backToDraft: (actor: string): TimelineEntry => ({
    type: LIFECYCLE['back-to-draft'].event,
    description: `${actor} returned the referral to draft.`,
  }),
  accepted: (actor: string): TimelineEntry => ({
    type: LIFECYCLE.accept.event,
    description: `${actor} accepted the referral.`,
  }),
  rejected: (actor: string, reason: string): TimelineEntry => ({
    type: LIFECYCLE.reject.event,
    description: `${actor} rejected the referral: ${quote(reason)}`,
  }),
  actionRequested: (actor: string, reason: string): TimelineEntry => ({
    type: LIFECYCLE['request-action'].event,
    description: `${actor} asked the sender to act on the referral: ${quote(reason)}`,
  }),
  appointment: (
    actor: string,
    status: AppointmentStatus,
    startAt: Date,
    location: string,
    display: DisplayTime,
  ): TimelineEntry => {
    const when = display.dateTime(startAt);
    const where = quote(location);
    const type = APPOINTMENT_EVENTS[status];
    switch (status) {
      case 'scheduled':
        return {
          type,
          description: `${actor} scheduled an appointment for ${when} at ${where}.`,
        };
      case 'actualized':
        return { type, description: `The appointment on ${when} at ${where} took place.` };
      case 'no-show':
        return {
          type,
          description: `The patient missed the appointment on ${when} at ${where}.`,
        };
      case 'cancelled':
        return {
          type,
          description: `The appointment on ${when} at ${where} was cancelled.`,
        };
    }
  },
  // The consult summary is not quoted: it is clinical, and the timeline goes to webhooks and the
  // event feed. The outcome's words are the catalog's.
  completed: (actor: string, outcome: string, files: number): TimelineEntry => ({
    type: LIFECYCLE.complete.event,
    description:
      `${actor} completed the referral: ${outcome}.` +
      (files === 0 ? '' : ` ${files === 1 ? 'One file is' : `${files} files are`} part of the outcome.`),
  }),
  outcomeAcknowledged: (actor: string): TimelineEntry => ({
    type: LIFECYCLE['acknowledge-outcome'].event,
    description: `${actor} acknowledged the outcome of the referral.`,
  }),
  noteAdded: (actor: string): TimelineEntry => ({
    type: LIFECYCLE['add-note'].event,
    description: `${actor} added a note.`,
  }),
  // The file's name is not quoted: it may name the patient, and the timeline goes to webhooks and the
  // event feed. Its type and size say which file it was.
  attachmentAdded: (actor: string, type: string, size: string): TimelineEntry => ({
    type: LIFECYCLE['add-attachment'].event,
    description: `${actor} attached a file (${type}, ${size}).`,
  }),
  attachmentRemoved: (actor: string, type: string, size: string): TimelineEntry => ({
    type: LIFECYCLE['remove-attachment'].event,
    description: `${actor} removed a file (${type}, ${size}).`,
  }),
  reminderSent: (provider: string): TimelineEntry => ({
    type: LIFECYCLE['reminder-sent'].event,
    description: `Reminder sent to ${provider} to create the patient record.`,
  }),
  ehrForwarded: (reference: string | null): TimelineEntry => ({
    type: LIFECYCLE['ehr-forwarded'].event,
    description:
      reference === null
        ? 'The referral form was delivered to the national health record.'
        : `The referral form was delivered to the national health record (reference ${reference}).`,
  }),
  ehrForwardFailed: (reason: string): TimelineEntry => ({
    type: LIFECYCLE['ehr-forward-failed'].event,
    description: `The referral form could not be delivered to the national health record: ${reason}.`,
  }),
} as const;
