// renderEhrForm: the template chosen for each offering category, the document's shape and content,
// and that the same referral always gives the same bytes.
import * as cheerio from 'cheerio';
import { describe, expect, it } from 'vitest';
import type { EhrFormSource, TimelineEventView } from '../../../src/domain/referral-view.ts';
import { renderEhrForm } from '../../../src/render/ehr-form.ts';
import { EHR_FORM_CSP, assertSelfContained } from '../../../src/render/self-contained.ts';
import { sampleEhrFormSource, sampleOffering } from '../../support/fixtures/ehr-form-source.ts';

function cancellationEvent(description: string, producedAt: string): TimelineEventView {
  return {
    id: `cancel-${producedAt}`,
    type: 'referral.cancelled',
    system: 'ClinicOne',
    description,
    producedAt,
  };
}

const cancelled = sampleEhrFormSource({
  status: 'cancelled',
  coreStatus: 'cancelled',
  isCancellable: false,
  timelineEvents: [
    ...sampleEhrFormSource().timelineEvents,
    cancellationEvent('Dr Lim Mei Ling cancelled the referral: Wrong clinic', '2026-06-04T01:00:00.000Z'),
    {
      id: 'back',
      type: 'referral.back-to-draft',
      system: 'ClinicOne',
      description: 'Dr Lim Mei Ling returned the referral to draft.',
      producedAt: '2026-06-04T02:00:00.000Z',
    },
    cancellationEvent(
      'Dr Lim Mei Ling cancelled the referral: Patient recovered',
      '2026-06-04T03:15:00.000Z',
    ),
  ],
});

const cases: readonly (readonly [label: string, source: EhrFormSource, formType: string])[] = [
  [
    'gpfirst',
    sampleEhrFormSource({ offering: sampleOffering('gpfirst') }),
    'GPFirst Referral Letter|Patient Summary',
  ],
  ['ae', sampleEhrFormSource({ offering: sampleOffering('ae') }), 'A&E Referral Letter|Patient Summary'],
  ['soc', sampleEhrFormSource({ offering: sampleOffering('soc') }), 'Specialist Referral|Patient Summary'],
  [
    'polyclinic',
    sampleEhrFormSource({ offering: sampleOffering('polyclinic') }),
    'Specialist Referral|Patient Summary',
  ],
  [
    'community',
    sampleEhrFormSource({ offering: sampleOffering('community') }),
    'Specialist Referral|Patient Summary',
  ],
  [
    'no offering (draft)',
    sampleEhrFormSource({
      offering: null,
      status: 'draft',
      coreStatus: 'draft',
      submittedAt: undefined,
      appointments: [],
      notes: [],
    }),
    'Specialist Referral|Patient Summary',
  ],
  ['cancelled', cancelled, 'Specialist Referral|Patient Summary|Cancellation Notice'],
  [
    'cancelled gpfirst',
    { ...cancelled, offering: sampleOffering('gpfirst') },
    'GPFirst Referral Letter|Patient Summary|Cancellation Notice',
  ],
];

describe('renderEhrForm templates', () => {
  it.each(cases)('%s: is self-contained and names its templates', (_label, source, formType) => {
    const form = renderEhrForm(source);
    expect(form.formType).toBe(formType);
    assertSelfContained(form.html);
    const $ = cheerio.load(form.html);
    expect(
      $('[data-template]')
        .map((_, el) => $(el).attr('data-template'))
        .get(),
    ).toEqual(formType.split('|'));
  });

  it('is a complete HTML5 document with the contract CSP', () => {
    const { html } = renderEhrForm(sampleEhrFormSource());
    expect(html.startsWith('<!doctype html>')).toBe(true);
    const $ = cheerio.load(html);
    expect($('html').attr('lang')).toBe('en');
    expect($('head > meta[charset]').attr('charset')).toBe('utf-8');
    expect($('head > meta[http-equiv="Content-Security-Policy"]').attr('content')).toBe(EHR_FORM_CSP);
    expect($('title').text()).toBe('Specialist Referral – Referral 0197a2b0-1234-7abc-8def-0123456789ab');
    expect($('script, link, style').length).toBe(0);
  });
});

describe('renderEhrForm content', () => {
  const source = sampleEhrFormSource();
  const $ = cheerio.load(renderEhrForm(source).html);
  const text = (field: string): string => $(`[data-field="${field}"]`).first().text();

  it('shows the referral, parties, offering and patient', () => {
    expect(text('id')).toBe(source.id);
    expect(text('version')).toBe('3');
    expect(text('status')).toBe('scheduled');
    expect(text('coreStatus')).toBe('Confirmed');
    expect(text('submittedAt')).toBe('2026-06-02 08:30 UTC');
    expect(text('sender.name')).toBe('Bukit Clinic');
    expect(text('offering.name')).toBe('Cardiology Specialist Outpatient Clinic');
    expect(text('offering.specialty')).toBe('Cardiology');
    expect(text('offering.ehrCode')).toBe('EHR-SOC-01');
    expect(text('offering.institution.name')).toBe('Tan Tock Seng Hospital');
    expect(text('patient.uin')).toBe('S1234567D');
    expect(text('patient.dob')).toBe('1958-03-14');
    expect(text('patient.residentialStatus')).toBe('SC');
    expect(text('referrer.name')).toBe('Dr Lim Mei Ling');
    expect(text('appointment.startAt')).toBe('2026-06-10 01:30 UTC');
    expect(text('appointment.location')).toBe('Clinic 3A, Level 3');
    expect(text('note.authorName')).toBe('Dr Lim Mei Ling');
    expect(text('note.authorInstitution')).toBe('Bukit Clinic');
    expect(text('note.createdAt')).toBe('2026-06-02 08:35 UTC');
    expect($('[data-field="timeline.description"]').length).toBe(source.timelineEvents.length);
  });

  it('keeps the line breaks of clinical information and shows them with pre-wrap', () => {
    const info = $('[data-field="clinicalInfo"]');
    expect(info.text()).toBe(source.clinicalInfo);
    expect(info.attr('style')).toContain('white-space: pre-wrap');
  });

  it('does not turn URLs in the offering description into links', () => {
    expect(text('offering.description')).toContain('https://example.org/services');
    expect($('a').length).toBe(0);
  });

  it('marks missing values "Not provided"', () => {
    const blank = sampleEhrFormSource({
      submittedAt: undefined,
      clinicalInfo: null,
      patient: { ...source.patient, name: null, phoneNumber: '   ' },
      referrer: { ...source.referrer, email: '' },
    });
    const $blank = cheerio.load(renderEhrForm(blank).html);
    for (const field of [
      'submittedAt',
      'clinicalInfo',
      'patient.name',
      'patient.phoneNumber',
      'referrer.email',
    ]) {
      const element = $blank(`[data-field="${field}"]`);
      expect(element.text(), field).toBe('Not provided');
      expect(element.attr('data-missing'), field).toBe('true');
    }
  });

  it('makes an urgent referral prominent', () => {
    const urgent = cheerio.load(renderEhrForm(sampleEhrFormSource({ isUrgent: true })).html);
    expect(urgent('[data-field="urgency"]').text()).toBe('Urgent referral');
    expect(urgent('[data-field="urgency"]').parent().attr('style')).toMatch(/font-weight: 700/);
    expect(text('urgency')).toBe('Routine referral');
  });

  it('quotes the latest cancellation in the Cancellation Notice', () => {
    const $cancelled = cheerio.load(renderEhrForm(cancelled).html);
    const notice = $cancelled('[data-template="Cancellation Notice"]');
    expect(notice.find('[data-field="cancellation.description"]').text()).toBe(
      'Dr Lim Mei Ling cancelled the referral: Patient recovered',
    );
    expect(notice.find('[data-field="cancellation.producedAt"]').text()).toBe('2026-06-04 03:15 UTC');
  });

  it('still renders a Cancellation Notice when no cancellation event is recorded', () => {
    const form = renderEhrForm(sampleEhrFormSource({ status: 'cancelled', coreStatus: 'cancelled' }));
    expect(form.formType).toBe('Specialist Referral|Patient Summary|Cancellation Notice');
    expect(cheerio.load(form.html)('[data-template="Cancellation Notice"]').text()).toContain('not recorded');
  });

  it('escapes markup in values instead of rendering it', () => {
    const hostile = '<script>alert(1)</script><img src=x onerror=alert(1)>';
    const form = renderEhrForm(sampleEhrFormSource({ clinicalInfo: hostile }));
    expect(form.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    assertSelfContained(form.html);
    expect(cheerio.load(form.html)('[data-field="clinicalInfo"]').text()).toBe(hostile);
  });

  it('shows timestamps that are not ISO UTC as stored', () => {
    const odd = renderEhrForm(sampleEhrFormSource({ submittedAt: '2026-06-04T11:15:00+08:00' })).html;
    expect(cheerio.load(odd)('[data-field="submittedAt"]').text()).toBe('2026-06-04T11:15:00+08:00');
  });
});

describe('renderEhrForm determinism', () => {
  it('gives identical output for the same source, and for an equal copy of it', () => {
    const source = sampleEhrFormSource({ isUrgent: true });
    const first = renderEhrForm(source);
    expect(renderEhrForm(source)).toEqual(first);
    expect(renderEhrForm(structuredClone(source))).toEqual(first);
  });

  it('changes when any field changes', () => {
    const base = renderEhrForm(sampleEhrFormSource()).html;
    const changes: Partial<EhrFormSource>[] = [
      { version: 4 },
      { isUrgent: true },
      { clinicalInfo: 'Different' },
      { patient: { ...sampleEhrFormSource().patient, name: 'Tan Ah Beng' } },
      { updatedAt: '2026-06-04T03:16:00.000Z' },
      { notes: [] },
    ];
    for (const change of changes) {
      expect(renderEhrForm(sampleEhrFormSource(change)).html, JSON.stringify(change)).not.toBe(base);
    }
  });
});
