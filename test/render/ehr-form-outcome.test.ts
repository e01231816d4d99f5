// renderEhrForm of a completed referral: its Outcome section shows what the provider reported (the
// outcome's words and code, the consult summary as written, who completed it and when, in the display
// zone, whether the sender acknowledged it) and the outcome's documents by their attachment number and
// name. A referral without an outcome has no such section.
import * as cheerio from 'cheerio';
import { describe, expect, it } from 'vitest';
import type { FormAttachment } from '../../src/domain/attachments.ts';
import { displayTimeIn } from '../../src/domain/display-time.ts';
import type { OutcomeView } from '../../src/domain/outcome.ts';
import type { EhrFormSource } from '../../src/domain/referral-view.ts';
import { renderEhrForm, renderEhrFormContent } from '../../src/render/ehr-form.ts';
import { assertSelfContained } from '../../src/render/self-contained.ts';
import { sampleEhrFormSource } from '../support/fixtures/ehr-form-source.ts';

const file = (id: string, number: number, fileName: string): FormAttachment => ({
  id,
  number,
  fileName,
  mediaType: 'application/pdf',
  sizeBytes: 20_480,
  sha256: String(number).repeat(64),
});

const REFERRAL_LETTER = file('0197a2b0-5000-7000-8000-000000000001', 1, 'referral letter.pdf');
const CONSULT_LETTER = file('0197a2b0-5000-7000-8000-000000000002', 2, 'consult letter.pdf');
/** A file of the outcome that is not in the form's list (its scan has not cleared it). */
const PENDING_ID = '0197a2b0-5000-7000-8000-000000000003';

const SUMMARY = 'Gastroscopy normal.\nNo follow-up needed.\r\n\n  Continue omeprazole for four weeks.';

const OUTCOME: OutcomeView = {
  code: 'seen-discharged',
  display: 'Seen and discharged to the referring clinic',
  summary: SUMMARY,
  attachmentIds: [CONSULT_LETTER.id, PENDING_ID],
  completedByName: 'Dr Tan Wei Ming',
  completedAt: '2026-06-10T02:45:00.000Z',
};

function completed(
  outcome: Partial<OutcomeView> = {},
  overrides: Partial<EhrFormSource> = {},
): EhrFormSource {
  const base = sampleEhrFormSource();
  return sampleEhrFormSource({
    status: 'completed',
    coreStatus: 'completed',
    isCancellable: false,
    outcome: { ...OUTCOME, ...outcome },
    attachments: [REFERRAL_LETTER, CONSULT_LETTER],
    timelineEvents: [
      ...base.timelineEvents,
      {
        id: '0197a2b0-4000-7000-8000-000000000009',
        type: 'referral.completed',
        system: 'TTSH-EPIC',
        description: 'Dr Tan Wei Ming completed the referral: Seen and discharged to the referring clinic.',
        producedAt: '2026-06-10T02:45:00.000Z',
      },
    ],
    ...overrides,
  });
}

const load = (source: EhrFormSource, zone = 'Asia/Singapore') =>
  cheerio.load(renderEhrForm(source, displayTimeIn(zone)).html);

const headings = ($: cheerio.CheerioAPI) =>
  $('h2')
    .map((_, h) => $(h).text())
    .get();

describe('the Outcome section of the EHR form', () => {
  const source = completed();
  const $ = load(source);
  const text = (field: string) => $(`[data-field="${field}"]`).first().text();

  it('follows the appointments and comes before the notes, in the letter', () => {
    const shown = headings($);
    expect(shown.filter((h) => h === 'Outcome')).toHaveLength(1);
    expect(shown.indexOf('Outcome')).toBe(shown.indexOf('Appointments') + 1);
    expect(shown.indexOf('Notes')).toBe(shown.indexOf('Outcome') + 1);
    expect($('[data-template="Specialist Referral"] [data-field="outcome.display"]')).toHaveLength(1);
  });

  it('shows the outcome in words, with its code', () => {
    expect(text('outcome.display')).toBe('Seen and discharged to the referring clinic');
    expect(text('outcome.code')).toBe('seen-discharged');
  });

  it('shows the consult summary exactly as written, keeping its line breaks', () => {
    const summary = $('[data-field="outcome.summary"]');
    expect(summary).toHaveLength(1);
    expect(summary.text()).toBe(SUMMARY);
    expect(summary.attr('style')).toContain('white-space: pre-wrap');
    // Shown as its own block, like the clinical information.
    expect(summary.parent('div').attr('style')).toBe(
      $('[data-field="clinicalInfo"]').parent('div').attr('style'),
    );
  });

  it('says who completed it and when, in the display zone with the zone named', () => {
    expect(text('outcome.completedByName')).toBe('Dr Tan Wei Ming');
    expect(text('outcome.completedAt')).toBe('Wed 10 Jun 2026, 10:45 SGT');
    expect(load(source, 'Europe/London')('[data-field="outcome.completedAt"]').text()).toBe(
      'Wed 10 Jun 2026, 03:45 BST',
    );
  });

  it('lists the outcome’s documents by their attachment number and name, in the order given', () => {
    const numbers = $('[data-field="outcome.attachment.number"]');
    const names = $('[data-field="outcome.attachment.fileName"]');
    expect(numbers).toHaveLength(2);
    expect(names).toHaveLength(2);
    expect(numbers.eq(0).text()).toBe('2');
    expect(names.eq(0).text()).toBe('consult letter.pdf');
    expect(numbers.eq(0).attr('data-missing')).toBeUndefined();
  });

  it('says so of a document of the outcome that is not included with the form', () => {
    const number = $('[data-field="outcome.attachment.number"]').eq(1);
    const name = $('[data-field="outcome.attachment.fileName"]').eq(1);
    expect(number.text()).toBe('Not included');
    expect(number.attr('data-missing')).toBe('true');
    expect(name.text()).toMatch(/^Not included with this form/);
    expect(name.attr('data-missing')).toBe('true');
    // The Attachments section still lists what goes with the form, and nothing else.
    expect(
      $('[data-field="attachment.fileName"]')
        .map((_, el) => $(el).text())
        .get(),
    ).toEqual(['referral letter.pdf', 'consult letter.pdf']);
  });

  it('says when the outcome has no documents', () => {
    const $none = load(completed({ attachmentIds: [] }));
    expect($none('[data-field^="outcome.attachment."]')).toHaveLength(0);
    expect($none('main').text()).toContain('No documents.');
  });

  it('marks a missing summary and a missing name "Not provided"', () => {
    const $blank = load(completed({ summary: null, completedByName: null, code: 'did-not-attend' }));
    for (const field of ['outcome.summary', 'outcome.completedByName']) {
      const element = $blank(`[data-field="${field}"]`);
      expect(element.text(), field).toBe('Not provided');
      expect(element.attr('data-missing'), field).toBe('true');
    }
  });

  it('says whether the sender acknowledged the outcome, as the status does', () => {
    expect(text('status')).toBe('Completed, outcome awaiting acknowledgement');
    expect(text('outcome.acknowledgedAt')).toBe('Not acknowledged yet');
    expect($('[data-field="outcome.acknowledgedAt"]').attr('data-missing')).toBe('true');
    expect($('[data-field="outcome.acknowledgedByName"]')).toHaveLength(0);
    const $ack = load(
      completed(
        { acknowledgedAt: '2026-06-11T01:05:00.000Z', acknowledgedByName: 'Dr Lim Mei Ling' },
        { status: 'outcome-acknowledged' },
      ),
    );
    expect($ack('[data-field="status"]').text()).toBe('Completed, outcome acknowledged');
    expect($ack('[data-field="outcome.acknowledgedAt"]').text()).toBe('Thu 11 Jun 2026, 09:05 SGT');
    expect($ack('[data-field="outcome.acknowledgedByName"]').text()).toBe('Dr Lim Mei Ling');
  });

  it('escapes markup in the outcome instead of rendering it', () => {
    const hostile = '<script>alert(1)</script><img src=x onerror=alert(1)>';
    const form = renderEhrForm(
      completed(
        { summary: hostile, display: hostile, completedByName: hostile },
        {
          attachments: [{ ...CONSULT_LETTER, fileName: hostile }],
        },
      ),
    );
    assertSelfContained(form.html);
    const $hostile = cheerio.load(form.html);
    expect($hostile('script, img')).toHaveLength(0);
    for (const field of [
      'outcome.summary',
      'outcome.display',
      'outcome.completedByName',
      'outcome.attachment.fileName',
    ]) {
      expect($hostile(`[data-field="${field}"]`).first().text(), field).toBe(hostile);
    }
  });

  it('is self-contained, adds no template to ehrFormType, and gives the same bytes every time', () => {
    const form = renderEhrForm(source);
    assertSelfContained(form.html);
    expect(form.formType).toBe('Specialist Referral|Patient Summary');
    expect(renderEhrForm(structuredClone(source))).toEqual(form);
    // The view and print pages show the same content.
    expect(form.html).toContain(renderEhrFormContent(source).content.toString());
  });

  it('changes the bytes when anything the section shows changes', () => {
    const base = renderEhrForm(source).html;
    const changes: Partial<OutcomeView>[] = [
      { display: 'Seen and admitted' },
      { code: 'admitted' },
      { summary: `${SUMMARY}.` },
      { completedByName: 'Dr Ong' },
      { completedAt: '2026-06-10T02:46:00.000Z' },
      { attachmentIds: [CONSULT_LETTER.id] },
      { acknowledgedAt: '2026-06-11T01:05:00.000Z', acknowledgedByName: 'Dr Lim Mei Ling' },
    ];
    for (const change of changes) {
      expect(renderEhrForm(completed(change)).html, JSON.stringify(change)).not.toBe(base);
    }
  });
});

describe('the EHR form of a referral without an outcome', () => {
  it('has no Outcome section', () => {
    for (const source of [
      sampleEhrFormSource(),
      sampleEhrFormSource({ attachments: [REFERRAL_LETTER] }),
      sampleEhrFormSource({ status: 'cancelled', coreStatus: 'cancelled' }),
    ]) {
      const $ = load(source);
      expect(headings($)).not.toContain('Outcome');
      expect($('[data-field^="outcome."]')).toHaveLength(0);
    }
  });

  it('is the same whether the outcome is absent or undefined', () => {
    const source = sampleEhrFormSource({ attachments: [REFERRAL_LETTER] });
    expect(renderEhrForm({ ...source, outcome: undefined })).toEqual(renderEhrForm(source));
  });
});
