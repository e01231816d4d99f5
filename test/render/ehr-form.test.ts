// renderEhrForm: the template chosen for each offering category, the document's shape and content
// (the patient first, words for codes, times in the display zone, one "Not provided" per missing
// value, a signed letter), and that the same referral always gives the same bytes.
import * as cheerio from 'cheerio';
import { describe, expect, it } from 'vitest';
import { displayTimeIn } from '../../src/domain/display-time.ts';
import type { EhrFormSource, TimelineEventView } from '../../src/domain/referral-view.ts';
import { renderEhrForm } from '../../src/render/ehr-form.ts';
import { EHR_FORM_CSP, assertSelfContained } from '../../src/render/self-contained.ts';
import { sampleEhrFormSource, sampleOffering } from '../support/fixtures/ehr-form-source.ts';

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
    // The patient comes first on the page; ehrFormType names the letter first, as the form's kind.
    const [letter, ...rest] = formType.split('|');
    expect(
      $('[data-template]')
        .map((_, el) => $(el).attr('data-template'))
        .get(),
    ).toEqual(['Patient Summary', letter, ...rest.filter((t) => t !== 'Patient Summary')]);
    expect($('h1').first().text()).toBe(letter);
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

  it('shows the referral, parties, offering and patient, with words for codes', () => {
    expect(text('id')).toBe(source.id);
    expect(text('status')).toBe('Appointment scheduled');
    expect(text('submittedAt')).toBe('Tue 2 Jun 2026, 16:30 SGT');
    expect(text('createdAt')).toBe('Mon 1 Jun 2026, 09:00 SGT');
    expect(text('sender.name')).toBe('Bukit Clinic');
    expect(text('sender.idType')).toBe('HCI code');
    expect(text('sender.id')).toBe('10C0001');
    expect(text('offering.name')).toBe('Cardiology Specialist Outpatient Clinic');
    expect(text('offering.category')).toBe('Specialist Outpatient Clinic (SOC)');
    expect(text('offering.specialty')).toBe('Cardiology');
    expect(text('offering.ehrCode')).toBe('EHR-SOC-01');
    expect(text('offering.institution.name')).toBe('Tan Tock Seng Hospital');
    expect(text('offering.institution.idType')).toBe('HCI code');
    expect(text('patient.uin')).toBe('S1234567D');
    expect(text('patient.dob')).toBe('14 Mar 1958 (age 68)');
    expect(text('patient.gender')).toBe('Male');
    expect(text('patient.nationality')).toBe('Singapore');
    expect(text('patient.residentialStatus')).toBe('Singapore Citizen');
    expect(text('referrer.name')).toBe('Dr Lim Mei Ling');
    expect(text('referrer.idType')).toBe('MCR no.');
    expect(text('referrer.id')).toBe('M12345A');
    expect(text('appointment.startAt')).toBe('Wed 10 Jun 2026, 09:30 SGT');
    expect(text('appointment.status')).toBe('Scheduled');
    expect(text('appointment.location')).toBe('Clinic 3A, Level 3');
    expect(text('note.authorName')).toBe('Dr Lim Mei Ling');
    expect(text('note.authorInstitution')).toBe('Bukit Clinic');
    expect(text('note.createdAt')).toBe('Tue 2 Jun 2026, 16:35 SGT');
    expect($('[data-field="timeline.description"]').length).toBe(source.timelineEvents.length);
  });

  it('leaves out the version and the last update, which change without the content changing', () => {
    expect($('[data-field="version"], [data-field="updatedAt"], [data-field="coreStatus"]')).toHaveLength(0);
    expect($('main').text()).not.toMatch(/Version|Last updated/);
  });

  it('puts the patient before the letter', () => {
    const fields = $('main [data-field]')
      .map((_, el) => $(el).attr('data-field'))
      .get();
    expect(fields.slice(0, 8)).toEqual([
      'urgency',
      'patient.name',
      'patient.uin',
      'patient.dob',
      'patient.gender',
      'patient.nationality',
      'patient.residentialStatus',
      'patient.phoneNumber',
    ]);
    expect(fields.indexOf('patient.phoneNumber')).toBeLessThan(fields.indexOf('clinicalInfo'));
  });

  it('shows no raw codes and no UTC times', () => {
    const shown = $('main').text();
    expect(shown).not.toMatch(
      /UTC|\bsoc\b|\bhci\b|\bmcr\b|pending-acceptance|actualized|no-show|\bSC\b|\bManual\b/,
    );
  });

  it('shows every time in the display zone it is given, naming the zone', () => {
    const london = cheerio.load(renderEhrForm(source, displayTimeIn('Europe/London')).html);
    expect(london('[data-field="appointment.startAt"]').text()).toBe('Wed 10 Jun 2026, 02:30 BST');
    const winter = cheerio.load(
      renderEhrForm(
        sampleEhrFormSource({
          appointments: [{ ...source.appointments[0]!, startAt: '2026-12-01T01:30:00.000Z' }],
        }),
        displayTimeIn('Europe/London'),
      ).html,
    );
    expect(winter('[data-field="appointment.startAt"]').text()).toBe('Tue 1 Dec 2026, 01:30 GMT');
    const kathmandu = cheerio.load(renderEhrForm(source, displayTimeIn('Asia/Kathmandu')).html);
    expect(kathmandu('[data-field="submittedAt"]').text()).toBe('Tue 2 Jun 2026, 14:15 UTC+05:45');
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
      patient: { ...source.patient, name: null, phoneNumber: '   ', dob: null },
      referrer: { ...source.referrer, email: '' },
    });
    const $blank = cheerio.load(renderEhrForm(blank).html);
    expect($blank('[data-field="submittedAt"]').text()).toBe('Not submitted yet');
    for (const field of [
      'clinicalInfo',
      'patient.name',
      'patient.phoneNumber',
      'patient.dob',
      'referrer.email',
    ]) {
      const element = $blank(`[data-field="${field}"]`);
      expect(element.text(), field).toBe('Not provided');
      expect(element.attr('data-missing'), field).toBe('true');
    }
  });

  it('shows one "Not provided" for an identifier that is missing as a whole', () => {
    const rowOf = ($doc: cheerio.CheerioAPI, label: string) =>
      $doc('th')
        .filter((_, th) => $doc(th).text() === label)
        .next('td');
    for (const referrer of [
      { ...source.referrer, id: null, idType: null },
      { ...source.referrer, id: null, idType: 'mcr' },
      { ...source.referrer, id: '  ', idType: 'mcr' },
    ]) {
      const $doc = cheerio.load(renderEhrForm(sampleEhrFormSource({ referrer })).html);
      const cell = rowOf($doc, 'Clinician ID');
      expect(cell.text().trim(), JSON.stringify(referrer)).toBe('Not provided');
      expect(cell.find('[data-missing]')).toHaveLength(1);
      expect(cell.find('[data-field="referrer.id"]').attr('data-missing')).toBe('true');
    }
    const typeless = cheerio.load(
      renderEhrForm(sampleEhrFormSource({ referrer: { ...source.referrer, idType: null } })).html,
    );
    expect(rowOf(typeless, 'Clinician ID').text().trim()).toBe('M12345A');
    const $all = cheerio.load(
      renderEhrForm(
        sampleEhrFormSource({
          referrer: { id: null, idType: null, name: null, email: null, contactNumber: null },
          patient: {
            uin: null,
            name: null,
            dob: null,
            gender: null,
            nationality: null,
            phoneNumber: null,
            residentialStatus: null,
          },
        }),
      ).html,
    );
    $all('td').each((_, td) => {
      expect(
        $all(td)
          .text()
          .match(/Not provided/g)?.length ?? 0,
        $all(td).text(),
      ).toBeLessThanOrEqual(1);
    });
  });

  it('signs the letter with the referring clinician, and what is known of them', () => {
    const signOff = (s: EhrFormSource) => {
      const $doc = cheerio.load(renderEhrForm(s).html);
      const part = $doc('[data-part="sign-off"]');
      return part
        .find('p')
        .map((_, p) => $doc(p).text().trim())
        .get();
    };
    expect(signOff(source)).toEqual([
      'Yours sincerely,',
      'Dr Lim Mei Ling',
      'MCR no. M12345A · mei.ling@bukitclinic.example · +65 6123 4567',
      'Bukit Clinic',
    ]);
    const byEmail = {
      id: null,
      idType: null,
      name: null,
      email: 'dr.tan@clinic.example',
      contactNumber: null,
    };
    expect(signOff(sampleEhrFormSource({ referrer: byEmail }))).toEqual([
      'Yours sincerely,',
      'dr.tan@clinic.example',
      'Bukit Clinic',
    ]);
    const nobody = { id: null, idType: null, name: null, email: null, contactNumber: null };
    expect(signOff(sampleEhrFormSource({ referrer: nobody }))).toEqual(['Yours sincerely,', 'Bukit Clinic']);
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
    expect(notice.find('[data-field="cancellation.producedAt"]').text()).toBe('Thu 4 Jun 2026, 11:15 SGT');
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

  it('changes when any field it shows changes', () => {
    const base = renderEhrForm(sampleEhrFormSource()).html;
    const changes: Partial<EhrFormSource>[] = [
      { isUrgent: true },
      { clinicalInfo: 'Different' },
      { patient: { ...sampleEhrFormSource().patient, name: 'Tan Ah Beng' } },
      { submittedAt: '2026-06-02T08:31:00.000Z' },
      { notes: [] },
    ];
    for (const change of changes) {
      expect(renderEhrForm(sampleEhrFormSource(change)).html, JSON.stringify(change)).not.toBe(base);
    }
  });

  it('does not change with the version, the last update or refhub’s bookkeeping on the timeline', () => {
    const source = sampleEhrFormSource();
    const base = renderEhrForm(source).html;
    const bookkeeping = (type: string, i: number): TimelineEventView => ({
      id: `bookkeeping-${i}`,
      type,
      system: 'refhub',
      description: `Bookkeeping ${type}`,
      producedAt: `2026-06-05T0${i}:00:00.000Z`,
    });
    const later = sampleEhrFormSource({
      version: 12,
      updatedAt: '2026-06-05T09:00:00.000Z',
      timelineEvents: [
        ...source.timelineEvents,
        ...[
          'ehr.forwarded',
          'ehr.forward-failed',
          'referral.provider-patient-create-reminder-sent',
          'bridge.webhook-delivered',
        ].map(bookkeeping),
      ],
    });
    expect(renderEhrForm(later).html).toBe(base);
  });
});
