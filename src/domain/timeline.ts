// The sentences the timeline shows. Clients display `description` and never branch on `type`, so
// each one is a complete sentence a person can read (contract §6). A time in a sentence is written
// in the installation's display zone, by the formatter the service passes in (display-time.ts).
import type { DisplayTime } from './display-time.ts';
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
    type: 'referral.created',
    description: `${actor} created the referral as a draft.`,
  }),
  updated: (actor: string, fields: readonly string[]): TimelineEntry => ({
    type: 'referral.updated',
    description:
      fields.length === 0
        ? `${actor} updated the referral.`
        : `${actor} updated the referral (${fields.join(', ')}).`,
  }),
  submitted: (actor: string, provider: string): TimelineEntry => ({
    type: 'referral.pending-acceptance',
    description: `${actor} submitted the referral to ${provider}; it is awaiting acceptance.`,
  }),
  cancelled: (actor: string, note: string): TimelineEntry => ({
    type: 'referral.cancelled',
    description: `${actor} cancelled the referral: ${quote(note)}`,
  }),
  backToDraft: (actor: string): TimelineEntry => ({
    type: 'referral.back-to-draft',
    description: `${actor} returned the referral to draft.`,
  }),
  accepted: (actor: string): TimelineEntry => ({
    type: 'referral.accepted',
    description: `${actor} accepted the referral.`,
  }),
  rejected: (actor: string, reason: string): TimelineEntry => ({
    type: 'referral.rejected',
    description: `${actor} rejected the referral: ${quote(reason)}`,
  }),
  actionRequested: (actor: string, reason: string): TimelineEntry => ({
    type: 'referral.sender-action-required',
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
    switch (status) {
      case 'scheduled':
        return {
          type: 'appt.scheduled',
          description: `${actor} scheduled an appointment for ${when} at ${where}.`,
        };
      case 'actualized':
        return { type: 'appt.actualized', description: `The appointment on ${when} at ${where} took place.` };
      case 'no-show':
        return {
          type: 'appt.no-show',
          description: `The patient missed the appointment on ${when} at ${where}.`,
        };
      case 'cancelled':
        return {
          type: 'appt.cancelled',
          description: `The appointment on ${when} at ${where} was cancelled.`,
        };
    }
  },
  noteAdded: (actor: string): TimelineEntry => ({
    type: 'note.created',
    description: `${actor} added a note.`,
  }),
  reminderSent: (provider: string): TimelineEntry => ({
    type: 'referral.provider-patient-create-reminder-sent',
    description: `Reminder sent to ${provider} to create the patient record.`,
  }),
  ehrForwarded: (reference: string | null): TimelineEntry => ({
    type: 'ehr.forwarded',
    description:
      reference === null
        ? 'The referral form was delivered to the national health record.'
        : `The referral form was delivered to the national health record (reference ${reference}).`,
  }),
  ehrForwardFailed: (reason: string): TimelineEntry => ({
    type: 'ehr.forward-failed',
    description: `The referral form could not be delivered to the national health record: ${reason}.`,
  }),
} as const;
