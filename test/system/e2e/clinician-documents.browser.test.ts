// What clinicians read, in a real browser: the EHR form of referrals in every category and status
// (a draft with nothing chosen, GPFirst, A&E, a specialist clinic with appointments and notes, one
// awaiting the sender, one cancelled, one with most values missing), and every page of the web form,
// the view page of a completed referral with its Outcome card too.
// Debian's Chromium, driven by playwright-core, against refhub listening on a loopback port with the
// EHR bridge running, so the timeline holds real delivery bookkeeping. The browser runs in another
// time zone than the display zone: what it shows must not depend on the reader's machine.
//
// Each document and page is screenshotted in full into test-artifacts/screenshots/ (to be looked at),
// and checked for what a reader sees: the patient before the letter, times in the display zone with
// the zone named and never UTC, words for codes, one "Not provided" per missing value, a signed
// letter, and no delivery bookkeeping or version. One engine is enough here: the inject tests run the
// same code on both.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import { CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, ensureArtifactsDir, freePort } from '../../support/browser.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call } from '../../support/scenarios.ts';
import { WEB_REQUESTER, linksOf, upsertLink } from '../../support/web.ts';

/** A time as people read it in the default display zone. */
const LOCAL_TIME = /^(Sun|Mon|Tue|Wed|Thu|Fri|Sat) \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} SGT$/;
/** Codes the API keeps, which a reader must never meet as words. */
const RAW_CODES =
  /\b(gpfirst|soc|polyclinic|hci|mcr|dcr|brightUserId|pending-acceptance|sender-action-required|actualized|no-show|Manual)\b|\(scheduled\)|Category ae\b/;
const BOOKKEEPING = /national health record|Reminder sent|Version|Last updated/;

const REFERRER = {
  referrerName: 'Dr Lim Wei Ling',
  referrerIdType: 'mcr',
  referrerId: 'M12345A',
  referrerEmail: WEB_REQUESTER,
  referrerContactNumber: '61234567',
};
const CLINICAL_INFO =
  'Dyspepsia for 3 months, not settling on a PPI.\nNo weight loss, no GI bleeding.\nFather had gastric cancer.';

interface ReferralJson {
  id: string;
  version: number;
  timelineEvents: { type: string; description: string }[];
  ehrForm: string;
  ehrFormType: string;
  ehrForwarding: { state: string };
}

describe('what clinicians read, in Chromium', () => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  let browser: Browser;
  let context: BrowserContext;
  let base: string;

  beforeAll(async () => {
    ensureArtifactsDir();
    ehr = await startEhr();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createBridgeApp('postgres', ehr, { env: { PUBLIC_URL: base } });
    await t.app.listen({ port, host: '127.0.0.1' });
    t.startBackground();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    context = await browser.newContext({
      viewport: { width: 1100, height: 900 },
      locale: 'de-DE',
      timezoneId: 'America/Los_Angeles',
    });
  }, 60_000);

  afterAll(async () => {
    await context.close();
    await browser.close();
    await t.close();
    await ehr.stop();
  });

  const url = (id: string, extra = '') =>
    `/api/v1/referrals/${id}?requesterIdentifier=${WEB_REQUESTER}&institutionIdType=hci&institutionId=S1234A${extra}`;
  const read = async (id: string) =>
    (await call(t, t.sender, 'GET', url(id, '&additionalField=ehrForm'))) as unknown as ReferralJson;
  const post = (who: typeof t.sender, id: string, op: string, body: Record<string, unknown> = {}) =>
    call(t, who, 'POST', `/api/v1/referrals/${id}/${op}`, body);
  const forwarded = (id: string) =>
    eventually(`the forward of ${id}`, async () => {
      const r = await read(id);
      return r.ehrForwarding.state === 'forwarded' ? r : undefined;
    });

  /** A tab that records console errors, script errors and requests to anywhere but refhub. */
  async function watchedPage(inContext = context): Promise<{ page: Page; problems: string[] }> {
    const page = await inContext.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of (400|403|404|409|410)\b/.test(m.text()))
        problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`script: ${e.message}`));
    page.on('request', (r) => {
      if (!r.url().startsWith(`${base}/`) && !r.url().startsWith('data:') && r.url() !== 'about:blank')
        problems.push(`request: ${r.url()}`);
    });
    return { page, problems };
  }

  async function shoot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  }

  /** What a reader of the EHR form (or of its copy on the view and print pages) must see. */
  async function expectReadable(page: Page, root: string): Promise<void> {
    const doc = page.locator(root);
    const templates: string[] = [];
    const sections = doc.locator('section[data-template]');
    for (let i = 0; i < (await sections.count()); i++) {
      templates.push((await sections.nth(i).getAttribute('data-template')) ?? '');
    }
    expect(templates[0], 'the patient comes first').toBe('Patient Summary');
    const patientBox = await doc.locator('[data-field="patient.name"]').boundingBox();
    const letterBox = await doc.locator('[data-field="clinicalInfo"]').boundingBox();
    expect(patientBox!.y).toBeLessThan(letterBox!.y);

    const text = (await doc.textContent()) ?? '';
    expect(text).not.toContain('UTC');
    // Web addresses in a description may hold anything; the words around them may not.
    expect(text.replace(/https?:\/\/\S+/g, '')).not.toMatch(RAW_CODES);
    expect(text).not.toMatch(BOOKKEEPING);

    const times = doc.locator('[data-field$="At"]:not([data-missing])');
    for (let i = 0; i < (await times.count()); i++) {
      expect(await times.nth(i).textContent()).toMatch(LOCAL_TIME);
    }

    // One "Not provided" per missing value: each marker is one element, and no cell holds two.
    const missing = await doc.locator('[data-missing="true"]').allTextContents();
    const markers = missing.filter((m) => m === 'Not provided').length;
    expect(text.match(/Not provided/g)?.length ?? 0).toBe(markers);
    for (const cell of await doc.locator('td').allTextContents()) {
      expect(cell.match(/Not provided/g)?.length ?? 0, cell).toBeLessThanOrEqual(1);
    }

    const signOff = doc.locator('[data-part="sign-off"]');
    expect(await signOff.isVisible()).toBe(true);
    expect((await signOff.locator('p').first().textContent())?.trim()).toBe('Yours sincerely,');
    expect((await doc.locator('[data-field="signOff.name"]').textContent())?.trim()).not.toBe('');
  }

  /** Shows a referral's EHR form as the EHR would, checks it, and returns what a reader sees. */
  async function showEhrForm(name: string, referral: ReferralJson): Promise<string> {
    const { page, problems } = await watchedPage();
    await page.setContent(referral.ehrForm);
    await shoot(page, `ehr-form-${name}`);
    await expectReadable(page, 'main');
    const text = (await page.locator('main').textContent()) ?? '';
    expect(problems).toEqual([]);
    await page.close();
    return text;
  }

  const referrals: Record<string, string> = {};

  it('renders a draft with nothing chosen', async () => {
    const link = await upsertLink(t, {});
    referrals.empty = link.referralId;
    const text = await showEhrForm('draft-nothing-chosen', await read(link.referralId));
    expect(text).toContain('No service has been chosen yet.');
    expect(text).toMatch(/Status\s*Draft/);
    expect(text).toMatch(/Submitted\s*Not submitted yet/);
  });

  it('renders a GPFirst letter, and keeps its bytes when the delivery is recorded', async () => {
    const link = await upsertLink(t, {
      offeringId: 'cgh-gpfirst',
      ...PATIENT,
      ...REFERRER,
      clinicalInfo: 'Right iliac fossa pain since this morning, guarding, T 38.2.',
      isUrgent: true,
    });
    referrals.gpfirst = link.referralId;
    await post(t.sender, link.referralId, 'submit');
    const referral = await forwarded(link.referralId);
    expect(referral.timelineEvents.map((e) => e.type)).toContain('ehr.forwarded');
    const text = await showEhrForm('gpfirst-submitted', referral);
    expect(text).toContain('GPFirst Referral Letter');
    expect(text).toContain('Urgent referral');
    expect(text).toContain('29 Feb 1960 (age');
    expect(text).toContain('Singapore Citizen');
    expect(text).toContain('MCR no. M12345A');
    // What the EHR received is what a GET returns now, after the delivery was recorded.
    const ledger = (await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${link.referralId}/ehr-submissions?institutionIdType=hci&institutionId=S1234A`,
    )) as { data: { outcome: string; sha256?: string }[] };
    const delivered = ledger.data.find((s) => s.outcome === 'delivered');
    expect(delivered?.sha256).toBe(createHash('sha256').update(referral.ehrForm).digest('hex'));
  });

  it('renders an A&E letter, accepted', async () => {
    const link = await upsertLink(t, {
      offeringId: 'erh-ae',
      ...PATIENT,
      clinicalInfo: 'Fall from ladder, suspected scaphoid fracture.',
    });
    await post(t.sender, link.referralId, 'submit');
    await post(t.otherProvider, link.referralId, 'accept');
    const text = await showEhrForm('ae-accepted', await read(link.referralId));
    expect(text).toContain('A&E Referral Letter');
    expect(text).toContain('Accident & Emergency (A&E)');
    expect(text).toContain('Accepted, no appointment yet');
    // The requester's email signs the letter when the clinic system named nobody else.
    expect(text).toContain(WEB_REQUESTER);
  });

  it('renders a specialist referral with appointments and notes', async () => {
    const link = await upsertLink(t, {
      offeringId: 'cgh-gastro',
      ...PATIENT,
      ...REFERRER,
      clinicalInfo: CLINICAL_INFO,
    });
    const id = link.referralId;
    referrals.soc = id;
    await post(t.sender, id, 'submit');
    await post(t.provider, id, 'accept', { requesterIdentifier: 'dr.wong@cgh.example.org' });
    const appointment = (appointmentId: string, status: string, startAt: string) =>
      call(t, t.provider, 'PUT', `/api/v1/referrals/${id}/appointments/${appointmentId}`, {
        status,
        startAt,
        location: 'Clinic 2C, Level 2',
      });
    await appointment('EPIC-1', 'scheduled', '2030-01-07T01:30:00.000Z');
    await appointment('EPIC-1', 'no-show', '2030-01-07T01:30:00.000Z');
    await appointment('EPIC-2', 'scheduled', '2030-01-21T06:00:00.000Z');
    await appointment('EPIC-2', 'actualized', '2030-01-21T06:00:00.000Z');
    await appointment('EPIC-3', 'scheduled', '2030-02-04T02:15:00.000Z');
    await call(
      t,
      t.provider,
      'POST',
      `/api/v1/referrals/${id}/notes`,
      { content: 'OGD booked. Please stop the PPI two weeks before.', authorName: 'Dr Wong' },
      201,
    );
    await call(
      t,
      t.sender,
      'POST',
      `/api/v1/referrals/${id}/notes`,
      { content: 'Patient informed.', authorName: 'Dr Lim Wei Ling' },
      201,
    );
    const text = await showEhrForm('soc-appointments-notes', await forwarded(id));
    expect(text).toContain('Specialist Outpatient Clinic (SOC)');
    expect(text).toContain('Appointment scheduled');
    for (const word of ['Did not attend', 'Attended', 'Scheduled']) expect(text).toContain(word);
    expect(text).toContain('scheduled an appointment for Mon 7 Jan 2030, 09:30 SGT at Clinic 2C, Level 2.');
    expect(text).toContain('OGD booked.');
  });

  it('renders a referral awaiting the sender', async () => {
    const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT, ...REFERRER });
    referrals.respond = link.referralId;
    await post(t.sender, link.referralId, 'submit');
    await post(t.provider, link.referralId, 'request-action', { reason: 'Please attach the latest ECG.' });
    const text = await showEhrForm('sender-action-required', await read(link.referralId));
    expect(text).toContain('Action requested from the referring clinic');
    expect(text).toContain('Please attach the latest ECG.');
  });

  it('renders a cancelled referral, with its notice', async () => {
    const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT, ...REFERRER });
    await post(t.sender, link.referralId, 'submit');
    await post(t.sender, link.referralId, 'cancel', {
      cancelNote: 'Patient recovered',
      cancelledByName: 'Dr Lim Wei Ling',
    });
    const referral = await forwarded(link.referralId);
    expect(referral.ehrFormType).toBe('Specialist Referral|Patient Summary|Cancellation Notice');
    const text = await showEhrForm('cancelled', referral);
    expect(text).toContain('Cancelled.');
    expect(text).toContain(
      'Dr Lim Wei Ling (Bukit Timah Family Clinic) cancelled the referral: Patient recovered',
    );
  });

  it('renders a referral with most values missing: one marker each, signed by the clinic', async () => {
    const draft = (await call(
      t,
      t.sender,
      'POST',
      '/api/v1/referrals',
      { offeringId: 'cgh-gastro', patientName: 'Siti binte Ahmad', patientUin: 'T0123456G' },
      201,
    )) as { id: string };
    await post(t.sender, draft.id, 'submit');
    const text = await showEhrForm('missing-values', await read(draft.id));
    expect(text.match(/Not provided/g)?.length).toBeGreaterThanOrEqual(10);
    const { page } = await watchedPage();
    await page.setContent((await read(draft.id)).ehrForm);
    expect(await page.locator('[data-field="signOff.name"]').textContent()).toBe('Bukit Timah Family Clinic');
    await page.close();
  });

  describe('the web form’s pages', () => {
    async function open(name: string, target: string, status = 200, inContext = context): Promise<Page> {
      const { page, problems } = await watchedPage(inContext);
      const response = await page.goto(target);
      expect(response?.status(), name).toBe(status);
      await shoot(page, `web-${name}`);
      const text = (await page.locator('body').textContent()) ?? '';
      expect(text, name).not.toContain('UTC');
      expect(text, name).not.toMatch(/\b(soc|hci|pending-acceptance|sender-action-required)\b/);
      expect(problems, name).toEqual([]);
      return page;
    }

    it('shows the form, its errors, the result page, and times in the display zone', async () => {
      const empty = await open('form-empty', (await upsertLink(t, { referralId: referrals.empty! })).url);
      expect(await empty.locator('.site-footer').textContent()).toMatch(
        /This page is open to you until \d{2}:\d{2} SGT\./,
      );
      expect(await empty.locator('.page-lede').textContent()).toMatch(
        /Last saved \w{3} \d{1,2} \w{3} \d{4}, \d{2}:\d{2} SGT/,
      );
      await empty.close();

      const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT, ...REFERRER });
      const form = await open('form-prefilled', link.url);
      expect(await form.locator('#field-referrerIdType option:checked').textContent()).toBe(
        'MCR (Medical Council registration)',
      );
      await form.getByLabel('Reason for referral and relevant history').fill(CLINICAL_INFO);
      // docs/images/web-form.png is this screenshot.
      await form.locator('#field-clinicalInfo').blur();
      await shoot(form, 'web-form-filled');
      await form.fill('#field-patientPhoneNumber', '12345678');
      await Promise.all([
        form.waitForLoadState('load'),
        form.getByRole('button', { name: 'Submit referral' }).click(),
      ]);
      await form.waitForSelector('.error-summary');
      await shoot(form, 'web-form-errors');
      await form.fill('#field-patientPhoneNumber', PATIENT.patientPhoneNumber);
      await Promise.all([
        form.waitForURL(`**/form/${link.referralId}/submitted`),
        form.getByRole('button', { name: 'Submit referral' }).click(),
      ]);
      await shoot(form, 'web-result');
      const summary = (await form.locator('.summary').textContent()) ?? '';
      expect(summary).toMatch(/Submitted\s*\w{3} \d{1,2} \w{3} \d{4}, \d{2}:\d{2} SGT/);
      expect(summary).not.toContain('UTC');
      await form.close();
    });

    it('shows the provider’s request above the form, with its time', async () => {
      const page = await open('form-respond', (await linksOf(t, referrals.respond!)).respond!.url);
      expect(await page.locator('.request').textContent()).toMatch(
        /\w{3} \d{1,2} \w{3} \d{4}, \d{2}:\d{2} SGT/,
      );
      await page.close();
    });

    it('shows the view and print pages with the EHR form’s content, readable', async () => {
      for (const purpose of ['view', 'print'] as const) {
        const page = await open(purpose, (await linksOf(t, referrals.soc!))[purpose]!.url);
        await expectReadable(page, 'article.document');
        expect(await page.locator('.site-footer').textContent()).toMatch(/until \d{2}:\d{2} SGT\./);
        if (purpose === 'print') {
          await page.emulateMedia({ media: 'print' });
          await shoot(page, 'web-print-paper');
          await page.emulateMedia({ media: 'screen' });
        }
        await page.close();
      }
    });

    it('shows the provider’s outcome above the document, with its times in the display zone', async () => {
      const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT, ...REFERRER });
      const id = link.referralId;
      await post(t.sender, id, 'submit');
      await post(t.provider, id, 'accept');
      await post(t.provider, id, 'complete', {
        outcomeCode: 'seen-follow-up',
        summary: 'OGD: small hiatus hernia.\nRepeat OGD in 6 months; we will send the appointment.',
        completedByName: 'Dr Wong',
      });
      const page = await open('view-outcome', (await linksOf(t, id)).view!.url);
      await expectReadable(page, 'article.document');
      const card = page.locator('.outcome-card');
      const text = (await card.textContent()) ?? '';
      expect(text).toContain('Seen, follow-up arranged with the provider');
      expect(text).not.toMatch(/seen-follow-up|UTC/);
      const times = card.locator('dt', { hasText: /^(Completed|Acknowledged)$/ });
      expect(await times.count()).toBe(2);
      expect(await times.first().locator('xpath=following-sibling::dd[1]').textContent()).toMatch(
        /^\w{3} \d{1,2} \w{3} \d{4}, \d{2}:\d{2} SGT$/,
      );
      await Promise.all([
        page.waitForURL(`**/view/${id}?acknowledged=1`),
        card.getByRole('button', { name: 'Acknowledge outcome' }).click(),
      ]);
      await shoot(page, 'web-view-outcome-acknowledged');
      for (const label of ['Completed', 'Acknowledged']) {
        const at = card.locator('dt', { hasText: new RegExp(`^${label}$`) });
        expect(await at.locator('xpath=following-sibling::dd[1]').textContent()).toMatch(
          /^\w{3} \d{1,2} \w{3} \d{4}, \d{2}:\d{2} SGT$/,
        );
      }
      await page.close();
    });

    it('explains a used link, an unknown link, an ended session and a referral that can no longer change', async () => {
      const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT, ...REFERRER });
      const form = await open('link-first-use', link.url);
      // Another browser: this one holds the session the link opened, and would reopen it.
      const other = await browser.newContext({ locale: 'de-DE', timezoneId: 'America/Los_Angeles' });
      await (await open('link-used', link.url, 410, other)).close();
      await other.close();
      await (await open('link-unknown', `${base}/l/${'Z'.repeat(43)}`, 404)).close();
      await (await open('session-ended', `${base}/form/${referrals.gpfirst!}`, 403)).close();

      // Submitted elsewhere while the form was open: a reload says it can no longer change here.
      await post(t.sender, link.referralId, 'submit');
      const response = await form.reload();
      expect(response?.status()).toBe(409);
      await shoot(form, 'web-not-editable');
      expect(await form.locator('main').textContent()).toContain(
        'Its status is now: Submitted, awaiting acceptance.',
      );
      await form.close();
    });
  });
});
