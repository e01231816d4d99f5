// The parts of a referral that accumulate after it is written (appointments, notes, timeline). Every
// letter template ends with them, so the EHR copy carries the referral's clinical history.
//
// The timeline shows what people did (domain/clinical-events.ts), never refhub's own bookkeeping: a
// forward or a reminder being recorded must not change the document the forwarder hashes.
import { isClinicalEvent } from '../../domain/clinical-events.ts';
import type { DisplayTime } from '../../domain/display-time.ts';
import { mediaTypeWords, sizeWords } from '../../domain/attachments.ts';
import { APPOINTMENT_STATUS_LABELS, systemLabel } from '../../domain/labels.ts';
import type { EhrFormSource } from '../../domain/referral-view.ts';
import { html, type SafeHtml } from '../html.ts';
import { STYLE, blockField, field, heading, labelField, listTable, timestampField } from './ehr-parts.ts';

function appointments(source: EhrFormSource, display: DisplayTime): SafeHtml {
  return html`${heading('Appointments')}
  ${listTable(
    ['Date and time', 'Status', 'Location'],
    source.appointments.map((a) => [
      timestampField('appointment.startAt', a.startAt, display),
      labelField('appointment.status', a.status, APPOINTMENT_STATUS_LABELS),
      field('appointment.location', a.location),
    ]),
    'No appointments yet.',
  )}`;
}

function notes(source: EhrFormSource, display: DisplayTime): SafeHtml {
  const items = source.notes.map(
    (n) =>
      html`<article style="${STYLE.note}">
        <p style="${STYLE.noteMeta}">
          ${field('note.authorName', n.authorName)} ·
          ${field('note.authorInstitution', n.authorInstitution.name)} ·
          ${timestampField('note.createdAt', n.createdAt, display)}
        </p>
        ${blockField('note.content', n.content)}
      </article>`,
  );
  return html`${heading('Notes')}
  ${items.length === 0 ? html`<p style="${STYLE.empty}">No notes.</p>` : items}`;
}

function timeline(source: EhrFormSource, display: DisplayTime): SafeHtml {
  return html`${heading('Timeline')}
  ${listTable(
    ['Time', 'Recorded by', 'Event'],
    source.timelineEvents
      .filter((e) => isClinicalEvent(e.type))
      .map((e) => [
        timestampField('timeline.producedAt', e.producedAt, display),
        field('timeline.system', systemLabel(e.system)),
        field('timeline.description', e.description),
      ]),
    'No events recorded.',
  )}`;
}

/**
 * The files sent with this form, each as a document of its own: enough to match each to what the
 * record received (its number, name, type, size and SHA-256). A referral without files has no section,
 * so its form is what it was before files existed.
 */
function attachments(source: EhrFormSource): SafeHtml {
  const files = source.attachments ?? [];
  if (files.length === 0) return html``;
  return html`${heading('Attachments')}
  ${listTable(
    ['No.', 'File', 'Type', 'Size', 'SHA-256'],
    files.map((a) => [
      field('attachment.number', a.number),
      field('attachment.fileName', a.fileName),
      field('attachment.mediaType', mediaTypeWords(a.mediaType)),
      field('attachment.size', sizeWords(a.sizeBytes)),
      field('attachment.sha256', a.sha256),
    ]),
    'No files.',
  )}`;
}

export function referralRecord(source: EhrFormSource, display: DisplayTime): SafeHtml {
  return html`${appointments(source, display)} ${notes(source, display)} ${attachments(source)}
  ${timeline(source, display)}`;
}
