// Property: whatever text a referral holds, the EHR form shows it as text. Every free-text field gets
// arbitrary strings (markup, `</script>`, comments, quotes, controls, lone surrogates, "null"), and the
// element with that field's `data-field` must hold exactly that text, in a document that is still
// self-contained.
//
// "Exactly" means: verbatim, whitespace included, except that NUL and lone surrogates (which no HTML
// document can carry) read back as U+FFFD, and a blank value reads back as the "Not provided" marker.
// A code (sex, nationality, residential status, a system) reads back as its word when it has one, and
// verbatim otherwise; a date of birth as the date with the age when it is a real date; an identifier
// with its type as one value, "Not provided" as a whole without its ID.
import * as cheerio from 'cheerio';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dateOfBirthText, displayTimeIn } from '../../src/domain/display-time.ts';
import {
  GENDER_LABELS,
  REFERRER_ID_TYPE_LABELS,
  RESIDENTIAL_STATUS_LABELS,
  labelFor,
  nationalityLabel,
  systemLabel,
} from '../../src/domain/labels.ts';
import type { EhrFormSource, PatientView, TimelineEventView } from '../../src/domain/referral-view.ts';
import { OFFERING_CATEGORIES } from '../../src/domain/statuses.ts';
import { renderEhrForm } from '../../src/render/ehr-form.ts';
import { html } from '../../src/render/html.ts';
import { checkSelfContained, isPlainlySelfContained } from '../../src/render/self-contained.ts';
import { sampleEhrFormSource, sampleOffering } from '../support/fixtures/ehr-form-source.ts';

const NUM_RUNS = 200;

const TOKENS = [
  '<',
  '>',
  '&',
  '"',
  "'",
  '`',
  '</script>',
  '<script>alert(1)</script>',
  '<!--',
  '-->',
  '<![CDATA[',
  ']]>',
  '&amp;',
  '&#0;',
  '&lt;',
  '\0',
  '\r',
  '\r\n',
  '\n',
  '\t',
  ' ',
  '\u00a0',
  '\u2028',
  '\uFEFF',
  '\ud800',
  'null',
  'undefined',
  'NaN',
  'https://example.org/x',
  'url(https://e.org/x)',
  'javascript:alert(1)',
  '" onmouseover="alert(1)',
  '<img src=x onerror=alert(1)>',
  '<style>',
  '</textarea>',
  '</title>',
];

const anyUtf16Unit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));

const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string() },
  { weight: 2, arbitrary: fc.string({ unit: 'binary' }) },
  { weight: 1, arbitrary: fc.string({ unit: anyUtf16Unit }) },
  {
    weight: 4,
    arbitrary: fc
      .array(fc.oneof(fc.constantFrom(...TOKENS), fc.string({ maxLength: 3 })), { maxLength: 12 })
      .map((parts) => parts.join('')),
  },
);
const optionalText = fc.option(text, { nil: null, freq: 6 });

const hostile = fc.record({
  id: text,
  senderName: text,
  senderSystem: text,
  category: fc.option(fc.constantFrom(...OFFERING_CATEGORIES), { nil: null }),
  offering: fc.record({ name: text, description: text, specialty: text, ehrCode: text, provider: text }),
  patient: fc.record({
    uin: optionalText,
    name: optionalText,
    dob: optionalText,
    gender: optionalText,
    nationality: optionalText,
    phoneNumber: optionalText,
    residentialStatus: optionalText,
  }),
  referrer: fc.record({
    id: optionalText,
    idType: optionalText,
    name: optionalText,
    email: optionalText,
    contactNumber: optionalText,
  }),
  clinicalInfo: optionalText,
  appointments: fc.array(text, { maxLength: 3 }),
  notes: fc.array(fc.record({ content: text, authorName: optionalText, institution: text }), {
    maxLength: 3,
  }),
  timeline: fc.array(fc.record({ description: text, system: text, cancels: fc.boolean() }), { maxLength: 4 }),
  cancelled: fc.boolean(),
  outcome: fc.option(
    fc.record({
      code: text,
      display: text,
      summary: optionalText,
      completedByName: optionalText,
      // Each of the outcome's files, and whether it is among those that go with the form.
      documents: fc.array(fc.record({ fileName: text, included: fc.boolean() }), { maxLength: 3 }),
    }),
    { nil: null },
  ),
});

type Hostile = typeof hostile extends fc.Arbitrary<infer T> ? T : never;

function toSource(h: Hostile): EhrFormSource {
  const base = sampleEhrFormSource();
  const events: TimelineEventView[] = h.timeline.map((e, i) => ({
    id: `event-${i}`,
    type: e.cancels ? 'referral.cancelled' : 'referral.updated',
    system: e.system,
    description: e.description,
    producedAt: `2026-06-0${i + 1}T00:00:00.000Z`,
  }));
  return sampleEhrFormSource({
    id: h.id,
    senderSystem: h.senderSystem,
    sender: { ...base.sender, name: h.senderName },
    offering:
      h.category === null
        ? null
        : sampleOffering(h.category, {
            name: h.offering.name,
            description: h.offering.description,
            specialty: h.offering.specialty,
            ehrCode: h.offering.ehrCode,
            institution: { idType: 'hci', id: '20M0001', name: h.offering.provider },
          }),
    // The renderer must cope with any text, even where the type promises an enum.
    patient: h.patient as unknown as PatientView,
    referrer: h.referrer,
    clinicalInfo: h.clinicalInfo,
    status: h.cancelled ? 'cancelled' : 'pending-acceptance',
    coreStatus: h.cancelled ? 'cancelled' : 'pending',
    appointments: h.appointments.map((location, i) => ({
      ...base.appointments[0]!,
      id: `appt-${i}`,
      location,
    })),
    notes: h.notes.map((n, i) => ({
      ...base.notes[0]!,
      id: `note-${i}`,
      content: n.content,
      authorName: n.authorName,
      authorInstitution: { idType: 'hci', id: '10C0001', name: n.institution },
    })),
    timelineEvents: events,
    ...(h.outcome === null
      ? {}
      : {
          outcome: {
            code: h.outcome.code,
            display: h.outcome.display,
            summary: h.outcome.summary,
            attachmentIds: h.outcome.documents.map((_, i) => `file-${i}`),
            completedByName: h.outcome.completedByName,
            completedAt: '2026-06-10T02:45:00.000Z',
          },
          attachments: h.outcome.documents.flatMap((d, i) =>
            d.included
              ? [
                  {
                    id: `file-${i}`,
                    number: i + 1,
                    fileName: d.fileName,
                    mediaType: 'application/pdf',
                    sizeBytes: 1024,
                    sha256: '0'.repeat(64),
                  },
                ]
              : [],
          ),
        }),
  });
}

const SINGAPORE = displayTimeIn('Asia/Singapore');

const blank = (value: string | null): value is null => value === null || value.trim() === '';
/** A code as the form shows it: its word, or the code itself; blank stays blank ("Not provided"). */
const worded = (value: string | null, word: (code: string) => string) => (blank(value) ? value : word(value));

/** The referrer's ID fields: the type only beside an ID, and no type element without both. */
function referrerIdFields(h: Hostile): [string, (string | null)[]][] {
  const { id, idType } = h.referrer;
  if (blank(id) || blank(idType)) return [['referrer.id', [id]]];
  return [
    ['referrer.idType', [labelFor(REFERRER_ID_TYPE_LABELS, idType)]],
    ['referrer.id', [id]],
  ];
}

/** The fields of `h`, by data-field name, with the value each element must show (in order). */
function expectedFields(h: Hostile, source: EhrFormSource): [string, (string | null)[]][] {
  const cancellation = source.timelineEvents.findLast((e) => e.type === 'referral.cancelled');
  const ageAt = source.submittedAt ?? source.createdAt;
  const fields: [string, (string | null)[]][] = [
    ['id', [h.id]],
    ['sender.name', [h.senderName]],
    ['senderSystem', [worded(h.senderSystem, systemLabel)]],
    ['patient.uin', [h.patient.uin]],
    ['patient.name', [h.patient.name]],
    ['patient.dob', [worded(h.patient.dob, (dob) => dateOfBirthText(dob, ageAt, SINGAPORE))]],
    ['patient.gender', [worded(h.patient.gender, (g) => labelFor(GENDER_LABELS, g))]],
    ['patient.nationality', [worded(h.patient.nationality, nationalityLabel)]],
    ['patient.phoneNumber', [h.patient.phoneNumber]],
    [
      'patient.residentialStatus',
      [worded(h.patient.residentialStatus, (r) => labelFor(RESIDENTIAL_STATUS_LABELS, r))],
    ],
    ...referrerIdFields(h),
    ['referrer.name', [h.referrer.name]],
    ['referrer.email', [h.referrer.email]],
    ['referrer.contactNumber', [h.referrer.contactNumber]],
    ['clinicalInfo', [h.clinicalInfo]],
    ['appointment.location', h.appointments],
    ['note.content', h.notes.map((n) => n.content)],
    ['note.authorName', h.notes.map((n) => n.authorName)],
    ['note.authorInstitution', h.notes.map((n) => n.institution)],
    ['timeline.description', h.timeline.map((e) => e.description)],
    ['timeline.system', h.timeline.map((e) => worded(e.system, systemLabel))],
  ];
  if (h.category !== null) {
    fields.push(
      ['offering.name', [h.offering.name]],
      ['offering.description', [h.offering.description]],
      ['offering.specialty', [h.offering.specialty]],
      ['offering.ehrCode', [h.offering.ehrCode]],
      ['offering.institution.name', [h.offering.provider]],
    );
  }
  const outcome = h.outcome;
  fields.push(
    ['outcome.display', outcome === null ? [] : [outcome.display]],
    ['outcome.code', outcome === null ? [] : [outcome.code]],
    ['outcome.summary', outcome === null ? [] : [outcome.summary]],
    ['outcome.completedByName', outcome === null ? [] : [outcome.completedByName]],
  );
  const idType = h.referrer.idType;
  if (blank(h.referrer.id) || blank(idType)) fields.push(['referrer.idType', []]);
  if (h.cancelled && cancellation !== undefined) {
    fields.push(
      ['cancellation.description', [cancellation.description]],
      ['cancellation.system', [worded(cancellation.system, systemLabel)]],
    );
  }
  return fields;
}

/** What a value reads back as: verbatim, bar what HTML cannot carry; blank means "missing". */
function readBack(value: string | null): { missing: true } | { missing: false; text: string } {
  if (value === null || value.trim() === '') return { missing: true };
  return { missing: false, text: value.toWellFormed().replaceAll('\0', '\uFFFD') };
}

function expectShown($: cheerio.CheerioAPI, field: string, values: readonly (string | null)[]): void {
  const elements = $(`[data-field="${field}"]`);
  expect(elements.length, field).toBe(values.length);
  values.forEach((value, i) => {
    const element = elements.eq(i);
    const expected = readBack(value);
    if (expected.missing) {
      expect(element.attr('data-missing'), field).toBe('true');
      expect(element.text(), field).toBe('Not provided');
    } else {
      expect(element.attr('data-missing'), field).toBeUndefined();
      expect(element.text(), field).toBe(expected.text);
    }
  });
}

describe('renderEhrForm with arbitrary text', () => {
  it('shows every value exactly as text, in a self-contained document', () => {
    fc.assert(
      fc.property(hostile, (h) => {
        const source = toSource(h);
        const form = renderEhrForm(source);
        expect(checkSelfContained(form.html)).toEqual([]);
        // The forwarder's guard takes its one-pass path for every form the renderer writes.
        expect(isPlainlySelfContained(form.html)).toBe(true);
        const $ = cheerio.load(form.html);
        // Only our own elements: nothing from the values became markup.
        expect($('script, style, link, img, iframe, a, form').length).toBe(0);
        expect(
          $('title')
            .text()
            .endsWith(` – Referral ${h.id.toWellFormed().replaceAll('\0', '\uFFFD')}`),
        ).toBe(true);
        for (const [field, values] of expectedFields(h, source)) expectShown($, field, values);
        // The outcome's documents: each file that goes with the form by its name, any other as not included.
        const documents = $('[data-field="outcome.attachment.fileName"]');
        expect(documents.length).toBe(h.outcome?.documents.length ?? 0);
        h.outcome?.documents.forEach((d, i) => {
          const expected = d.included ? readBack(d.fileName) : ({ missing: true } as const);
          expect(documents.eq(i).attr('data-missing')).toBe(expected.missing ? 'true' : undefined);
          if (!d.included) expect(documents.eq(i).text()).toMatch(/^Not included with this form/);
          else if (!expected.missing) expect(documents.eq(i).text()).toBe(expected.text);
        });
        expect(renderEhrForm(source).html).toBe(form.html);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe('html with arbitrary text', () => {
  it('round-trips through an HTML parser in text and in quoted attributes', () => {
    fc.assert(
      fc.property(text, (value) => {
        const $ = cheerio.load(
          String(
            html`<!doctype html>
              <p title="${value}" data-x="${value}">${value}</p>`,
          ),
        );
        const expected = value.toWellFormed().replaceAll('\0', '\uFFFD');
        expect($('p').text()).toBe(expected);
        expect($('p').attr('title')).toBe(expected);
        expect($('p').attr('data-x')).toBe(expected);
        expect($('body').children().length).toBe(1);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
