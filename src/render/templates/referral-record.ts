// The parts of a referral that accumulate after it is written (appointments, notes, timeline).
// Every letter template ends with them, so the EHR copy carries the referral's full history.
import type { EhrFormSource } from '../../domain/referral-view.ts';
import { html, type SafeHtml } from '../html.ts';
import { STYLE, blockField, field, heading, listTable, timestampField } from './ehr-parts.ts';

function appointments(source: EhrFormSource): SafeHtml {
  return html`${heading('Appointments')}
  ${listTable(
    ['Date and time', 'Status', 'Location'],
    source.appointments.map((a) => [
      timestampField('appointment.startAt', a.startAt),
      field('appointment.status', a.status),
      field('appointment.location', a.location),
    ]),
    'No appointments yet.',
  )}`;
}

function notes(source: EhrFormSource): SafeHtml {
  const items = source.notes.map(
    (n) =>
      html`<article style="${STYLE.note}">
        <p style="${STYLE.noteMeta}">
          ${field('note.authorName', n.authorName)} ·
          ${field('note.authorInstitution', n.authorInstitution.name)} ·
          ${timestampField('note.createdAt', n.createdAt)}
        </p>
        ${blockField('note.content', n.content)}
      </article>`,
  );
  return html`${heading('Notes')}
  ${items.length === 0 ? html`<p style="${STYLE.empty}">No notes.</p>` : items}`;
}

function timeline(source: EhrFormSource): SafeHtml {
  return html`${heading('Timeline')}
  ${listTable(
    ['Time', 'System', 'Event'],
    source.timelineEvents.map((e) => [
      timestampField('timeline.producedAt', e.producedAt),
      field('timeline.system', e.system),
      field('timeline.description', e.description),
    ]),
    'No events recorded.',
  )}`;
}

export function referralRecord(source: EhrFormSource): SafeHtml {
  return html`${appointments(source)} ${notes(source)} ${timeline(source)}`;
}
