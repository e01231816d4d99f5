// The parts of a referral that accumulate after it is written (appointments, the provider's outcome,
// notes, files, timeline). Every letter template ends with them, so the EHR copy carries the referral's
// clinical history.
//
// The timeline shows what people did (domain/clinical-events.ts), never refhub's own bookkeeping: a
// forward or a reminder being recorded must not change the document the forwarder hashes.
import { isClinicalEvent } from '../../domain/clinical-events.ts';
import type { DisplayTime } from '../../domain/display-time.ts';
import { mediaTypeWords, sizeWords, type FormAttachment } from '../../domain/attachments.ts';
import { APPOINTMENT_STATUS_LABELS, systemLabel } from '../../domain/labels.ts';
import type { OutcomeView } from '../../domain/outcome.ts';
import type { EhrFormSource } from '../../domain/referral-view.ts';
import { html, type HtmlValue, type SafeHtml } from '../html.ts';
import {
  STYLE,
  absentField,
  blockField,
  detailsTable,
  field,
  heading,
  labelField,
  listTable,
  timestampField,
} from './ehr-parts.ts';

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

/**
 * An outcome's document as the form names it: its attachment number and name when the file goes with
 * this form (it is in the Attachments section), else a note that it does not.
 */
function outcomeDocument(id: string, files: ReadonlyMap<string, FormAttachment>): HtmlValue[] {
  const file = files.get(id);
  if (file === undefined) {
    return [
      absentField('outcome.attachment.number', 'Not included'),
      absentField(
        'outcome.attachment.fileName',
        'Not included with this form: the file has not been cleared by the malware scan.',
      ),
    ];
  }
  return [
    field('outcome.attachment.number', file.number),
    field('outcome.attachment.fileName', file.fileName),
  ];
}

/** Whether the sender read the outcome: when and who, or that it has not yet (the status says so too). */
function acknowledgement(outcome: OutcomeView, display: DisplayTime): [string, HtmlValue][] {
  if (outcome.acknowledgedAt === undefined) {
    return [['Acknowledged', absentField('outcome.acknowledgedAt', 'Not acknowledged yet')]];
  }
  return [
    ['Acknowledged', timestampField('outcome.acknowledgedAt', outcome.acknowledgedAt, display)],
    ['Acknowledged by', field('outcome.acknowledgedByName', outcome.acknowledgedByName)],
  ];
}

/**
 * What the provider reported when it completed the referral: the outcome in words and its code, who
 * completed it and when, whether the sender acknowledged it, the consult summary as written, and the
 * documents that are part of it. A referral without an outcome has no section (and no whitespace of
 * one), so its form is what it was before outcomes existed.
 */
function outcome(source: EhrFormSource, display: DisplayTime): SafeHtml {
  const reported = source.outcome;
  if (reported === undefined) return html``;
  const files = new Map((source.attachments ?? []).map((a) => [a.id, a]));
  return html` ${heading('Outcome')}
    ${detailsTable([
      ['Outcome', field('outcome.display', reported.display)],
      ['Outcome code', field('outcome.code', reported.code)],
      ['Completed by', field('outcome.completedByName', reported.completedByName)],
      ['Completed', timestampField('outcome.completedAt', reported.completedAt, display)],
      ...acknowledgement(reported, display),
    ])}
    <p style="${STYLE.noteMeta}">Consult summary</p>
    ${blockField('outcome.summary', reported.summary)}
    <p style="${STYLE.noteMeta}">Documents</p>
    ${listTable(
      ['No.', 'Document'],
      reported.attachmentIds.map((id) => outcomeDocument(id, files)),
      'No documents.',
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
        html`${
          e.reason === undefined
            ? field('timeline.description', e.description)
            : html`${field('timeline.description', e.description)} (reason code
              ${field('timeline.reasonCode', e.reason.code)})`
        }${
          // A step copied in at a redirect says which referral it was taken on.
          e.fromReferralId === undefined
            ? null
            : html` (on referral ${field('timeline.fromReferralId', e.fromReferralId)}, before the redirect)`
        }`,
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
  // The whitespace in this template is part of the forwarded bytes, so the formatter leaves it alone.
  // The outcome follows the appointments with no whitespace of its own: without one, the form keeps the
  // bytes it had before outcomes existed.
  // prettier-ignore
  return html`${appointments(source, display)}${outcome(source, display)} ${notes(source, display)} ${attachments(source)}
  ${timeline(source, display)}`;
}
