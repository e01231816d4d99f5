// The hosted form in a real browser: Debian's Chromium, driven by playwright-core, against refhub
// listening on a loopback port. Links come from the API, exactly as a clinic system gets them.
//
// One engine is enough here: the web routes reach the store only through the services, which the
// inject tests under test/api/web run on both engines. PostgreSQL is the one chosen, because it is what
// several API processes share in production and its pool serves the browser's requests concurrently.
//
// Every page must be free of console errors, script errors and dialogs. The one console message
// allowed is Chromium's note that the document itself answered with the error status the test
// expects (the 410 of a used link, the 400 of a form with errors): that is the page working.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG, GIF, PAGES, pdf } from '../../support/fixtures/attachment-files.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { call } from '../../support/scenarios.ts';
import { senderView } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import { WEB_REQUESTER, apiAttach, linksOf, upsertLink, type UpsertedLink } from '../../support/web.ts';
import { ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ensureArtifactsDir, freePort } from '../../support/browser.ts';

const HOSTILE_NAME = '<img src=x onerror=alert(1)>';

async function listeningTestApp(clock: { now(): Date }): Promise<TestApp> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const t = await createTestApp('postgres', { env: { PUBLIC_URL: base }, clock });
    try {
      await t.app.listen({ port, host: '127.0.0.1' });
      return t;
    } catch (error) {
      await t.close();
      // Another process took the port between the probe and the listen: try another.
      if (attempt >= 3 || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    }
  }
}

/** The focused element's ID, or its class when it has none. Runs in the page, so it is a string. */
async function focused(page: Page): Promise<string> {
  return String(await page.evaluate('document.activeElement?.id || document.activeElement?.className || ""'));
}

interface Watched {
  readonly page: Page;
  /** Document statuses this test expects to see as errors (a 410 page, a form with errors). */
  readonly expectedStatuses: Set<number>;
  readonly problems: string[];
  readonly dialogs: string[];
}

describe('the web form in Chromium', () => {
  let t: TestApp;
  let browser: BrowserContext;
  let profile: string;
  let offsetMs = 0;
  const clock = { now: () => new Date(Date.now() + offsetMs) };
  const watched: Watched[] = [];

  beforeAll(async () => {
    expect(fs.existsSync(CHROMIUM), `${CHROMIUM} (apt-get install chromium)`).toBe(true);
    ensureArtifactsDir();
    t = await listeningTestApp(clock);
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
      locale: 'en-SG',
      timezoneId: 'Asia/Singapore',
    });
  }, 60_000);

  afterAll(async () => {
    await browser.close();
    await t.close();
    fs.rmSync(profile, { recursive: true, force: true });
  });

  /** A new tab whose console, script errors and dialogs are all recorded. */
  async function newPage(...expectedStatuses: number[]): Promise<Watched> {
    const page = await browser.newPage();
    const w: Watched = { page, expectedStatuses: new Set(expectedStatuses), problems: [], dialogs: [] };
    const documents = new Map<string, number>();
    page.on('response', (response) => {
      if (response.request().isNavigationRequest() && response.frame() === page.mainFrame()) {
        documents.set(response.url(), response.status());
      }
    });
    page.on('console', (message: ConsoleMessage) => {
      if (message.type() !== 'error' && message.type() !== 'warning') return;
      const status = /^Failed to load resource: the server responded with a status of (\d{3})\b/.exec(
        message.text(),
      )?.[1];
      const document = documents.get(message.location().url);
      const expected =
        status !== undefined && document === Number(status) && w.expectedStatuses.has(document);
      if (!expected) w.problems.push(`${message.type()}: ${message.text()} (${message.location().url})`);
    });
    page.on('pageerror', (error) => w.problems.push(`script error: ${error.message}`));
    page.on('dialog', (dialog) => {
      w.dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    watched.push(w);
    return w;
  }

  afterEach(async () => {
    for (const w of watched.splice(0)) {
      expect(w.problems, 'console errors').toEqual([]);
      expect(w.dialogs, 'dialogs').toEqual([]);
      await w.page.close();
    }
  });

  let submittedLink: UpsertedLink;

  it('opens a prefilled link, completes and submits the form, and the API shows it pending', async () => {
    const link = await upsertLink(t, {
      offeringId: 'cgh-gastro',
      ...PATIENT,
      referrerName: 'Dr Lim Wei Ling',
      referrerIdType: 'mcr',
      referrerId: 'M12345A',
      referrerEmail: WEB_REQUESTER,
    });
    submittedLink = link;
    const { page } = await newPage();
    const response = await page.goto(link.url);
    expect(response?.status()).toBe(200);
    expect(new URL(page.url()).pathname).toBe(`/form/${link.referralId}`);

    await expect.poll(() => page.title()).toBe('Complete the referral – refhub');
    expect(await page.inputValue('#field-patientName')).toBe(PATIENT.patientName);
    expect(await page.inputValue('#field-patientUin')).toBe(PATIENT.patientUin);
    expect(await page.inputValue('#field-dob')).toBe('29 Feb 1960');
    expect(await page.inputValue('#field-nationality')).toBe('SG');
    expect(await page.locator('#field-nationality option:checked').textContent()).toBe('Singapore');
    expect(await page.inputValue('#field-patientGender')).toBe('Male');
    expect(await page.inputValue('#field-residentialStatus')).toBe('SC');
    expect(await page.inputValue('#field-patientPhoneNumber')).toBe(PATIENT.patientPhoneNumber);
    expect(await page.inputValue('#field-referrerName')).toBe('Dr Lim Wei Ling');
    expect(await page.isChecked('input[name=offeringId][value=cgh-gastro]')).toBe(true);
    const guide = page.locator('a[href="https://example.org/guide/gastro"]');
    expect(await guide.getAttribute('rel')).toBe('noopener noreferrer');
    expect(await guide.getAttribute('target')).toBe('_blank');

    await page
      .getByLabel('Reason for referral and relevant history')
      .fill(
        'Dyspepsia for 3 months, not settling on a PPI.\nNo weight loss, no GI bleeding. Father had gastric cancer.',
      );
    await page.getByLabel('Urgent').check();
    await page.screenshot({ path: path.join(ARTIFACTS, 'web-form.png'), fullPage: true });

    await Promise.all([
      page.waitForURL(`**/form/${link.referralId}/submitted`),
      page.getByRole('button', { name: 'Submit referral' }).click(),
    ]);
    expect(await page.locator('h1').textContent()).toBe('Referral submitted');
    expect(await page.locator('.summary').textContent()).toContain('Submitted, awaiting acceptance');
    await page.screenshot({ path: path.join(ARTIFACTS, 'web-form-result.png'), fullPage: true });

    const view = await senderView(t, link.referralId);
    expect(view).toMatchObject({ status: 'pending-acceptance', coreStatus: 'pending', isUrgent: true });
    const events = view.timelineEvents as { type: string; system: string; description: string }[];
    expect(events.at(-1)).toMatchObject({
      type: 'referral.pending-acceptance',
      system: 'Manual',
      description: `${WEB_REQUESTER} (Bukit Timah Family Clinic) submitted the referral to Central General Hospital; it is awaiting acceptance.`,
    });
  });

  it('answers the same link, opened again in another browser, with the 410 page', async () => {
    // This browser still holds the session the link opened, so it would reopen it: another has none.
    const other = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const page = await other.newPage();
    const response = await page.goto(submittedLink.url);
    expect(response?.status()).toBe(410);
    expect(await page.locator('h1').textContent()).toBe('This link is no longer valid');
    expect(await page.locator('main').textContent()).toContain('Ask your clinic system for a new link.');
    await page.screenshot({ path: path.join(ARTIFACTS, 'web-link-used.png') });
    await other.close();
  });

  it('answers an expired link with the 410 page', async () => {
    const link = await upsertLink(t);
    offsetMs += 16 * 60_000;
    const { page } = await newPage(410);
    const response = await page.goto(link.url);
    expect(response?.status()).toBe(410);
    expect(await page.locator('h1').textContent()).toBe('This link is no longer valid');
  });

  it('edits through a fresh link after the referral went back to draft', async () => {
    const link = await upsertLink(t, {
      offeringId: 'cgh-gastro',
      ...PATIENT,
      clinicalInfo: 'First version.',
    });
    await call(t, t.sender, 'POST', `/api/v1/referrals/${link.referralId}/submit`, {});
    await call(t, t.sender, 'POST', `/api/v1/referrals/${link.referralId}/back-to-draft`, {});
    const fresh = await upsertLink(t, { referralId: link.referralId });

    const { page } = await newPage();
    await page.goto(fresh.url);
    expect(await page.locator('.tag').first().textContent()).toBe('Draft');
    await page.getByLabel('Reason for referral and relevant history').fill('Second version, after review.');
    await Promise.all([
      page.waitForURL('**?saved=1'),
      page.getByRole('button', { name: 'Save draft' }).click(),
    ]);
    expect(await page.locator('.banner').textContent()).toContain('Draft saved');

    const view = await senderView(t, link.referralId);
    expect(view).toMatchObject({ status: 'draft', clinicalInfo: 'Second version, after review.' });
    expect((view.timelineEvents as { system: string; description: string }[]).at(-1)).toMatchObject({
      system: 'Manual',
      description: `${WEB_REQUESTER} (Bukit Timah Family Clinic) updated the referral (Clinical information).`,
    });
  });

  it('shows errors by each field and in a focused summary that links to them, keeping what was typed', async () => {
    const link = await upsertLink(t);
    const { page } = await newPage(400);
    await page.goto(link.url);
    await page.fill('#field-patientUin', 's123');
    await page.fill('#field-patientPhoneNumber', '12345678');
    await Promise.all([
      page.waitForLoadState('load'),
      page.getByRole('button', { name: 'Submit referral' }).click(),
    ]);
    await page.waitForSelector('.error-summary');
    expect(await focused(page)).toBe('error-summary');
    expect(await page.title()).toBe('Error: Complete the referral – refhub');
    expect(await page.inputValue('#field-patientUin')).toBe('s123');
    expect(await page.getAttribute('#field-patientUin', 'aria-invalid')).toBe('true');
    await page.screenshot({ path: path.join(ARTIFACTS, 'web-form-errors.png') });
    await page.locator('.error-summary a', { hasText: 'phone number' }).click();
    expect(await focused(page)).toBe('field-patientPhoneNumber');
    expect((await senderView(t, link.referralId)).patient).toMatchObject({ uin: PATIENT.patientUin });
  });

  it('responds to a provider’s request, shown above the form', async () => {
    const link = await upsertLink(t);
    const id = link.referralId;
    await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
    await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/request-action`, {
      reason: 'Please attach the latest ECG.',
    });
    const { page } = await newPage();
    await page.goto((await linksOf(t, id)).respond!.url);
    expect(await page.locator('.request').textContent()).toContain('Please attach the latest ECG.');
    await page
      .getByLabel('Reason for referral and relevant history')
      .fill('ECG: sinus rhythm, no ischaemic changes.');
    await page.screenshot({ path: path.join(ARTIFACTS, 'web-form-respond.png'), fullPage: true });
    await Promise.all([
      page.waitForURL(`**/form/${id}/submitted`),
      page.getByRole('button', { name: 'Submit response' }).click(),
    ]);
    expect((await senderView(t, id)).status).toBe('pending-acceptance');
  });

  it('attaches, downloads and removes a file with script turned off, listing it with its state', async () => {
    const letter = pdf(CATALOG, PAGES);
    const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT });
    const id = link.referralId;
    // A browser of its own with script off: the form must not need it.
    const noScript = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    try {
      const context = await noScript.newContext({
        javaScriptEnabled: false,
        viewport: { width: 1280, height: 900 },
        locale: 'en-SG',
        timezoneId: 'Asia/Singapore',
      });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
      page.on('dialog', (dialog) => {
        problems.push(`dialog: ${dialog.message()}`);
        void dialog.dismiss();
      });
      page.on('console', (message) => {
        // The one expected: the 415 of the refused file below, which is the page working.
        if (message.type() === 'error' && !message.text().includes('status of 415')) {
          problems.push(`${message.type()}: ${message.text()}`);
        }
      });
      await page.goto(link.url);
      expect(await page.locator('.files__none').textContent()).toBe('No files are attached.');

      await page.setInputFiles('#field-file', {
        name: 'ecg-report.pdf',
        mimeType: 'application/pdf',
        buffer: letter,
      });
      await Promise.all([
        page.waitForURL(`**/form/${id}?attached=1`),
        page.getByRole('button', { name: 'Attach file' }).click(),
      ]);
      expect(await page.locator('.banner__title').textContent()).toBe('File attached');
      const file = page.locator('.files .file');
      await expect.poll(() => file.count()).toBe(1);
      expect(await file.locator('.file__name').textContent()).toBe('ecg-report.pdf');
      expect(await file.locator('.file__state').textContent()).toBe('Available (not scanned)');
      expect(await file.locator('.file__meta').textContent()).toMatch(
        new RegExp(`^PDF, ${letter.length} bytes\\. Added .+ SGT by Bukit Timah Family Clinic\\.$`),
      );
      await page.screenshot({ path: path.join(ARTIFACTS, 'web-form-files.png'), fullPage: true });

      const [download] = await Promise.all([
        page.waitForEvent('download'),
        file.getByRole('link', { name: 'ecg-report.pdf' }).click(),
      ]);
      expect(download.suggestedFilename()).toBe('ecg-report.pdf');
      expect(fs.readFileSync(await download.path()).equals(letter)).toBe(true);

      // A file refused for its type: the reason by the input, and the page as it was.
      await page.setInputFiles('#field-file', { name: 'photo.gif', mimeType: 'image/gif', buffer: GIF });
      const refused = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST'),
        page.getByRole('button', { name: 'Attach file' }).click(),
      ]);
      expect(refused[0].status()).toBe(415);
      await page.waitForSelector('.error-summary');
      expect(await page.locator('#field-file-error').textContent()).toContain(
        'This type of file is not accepted.',
      );
      await page.screenshot({ path: path.join(ARTIFACTS, 'web-form-file-refused.png'), fullPage: true });

      await Promise.all([
        page.waitForURL(`**/form/${id}?removed=1`),
        page.getByRole('button', { name: 'Remove ecg-report.pdf' }).click(),
      ]);
      expect(await page.locator('.banner__title').textContent()).toBe('File removed');
      expect(await page.locator('.files__none').textContent()).toBe('No files are attached.');

      // Attached again and submitted: the view page lists it after the document, to download.
      await page.setInputFiles('#field-file', {
        name: 'ecg-report.pdf',
        mimeType: 'application/pdf',
        buffer: letter,
      });
      await Promise.all([
        page.waitForURL(`**/form/${id}?attached=1`),
        page.getByRole('button', { name: 'Attach file' }).click(),
      ]);
      await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
      await page.goto((await linksOf(t, id)).view!.url);
      const listed = page.locator('.files-card .file');
      await expect.poll(() => listed.count()).toBe(1);
      expect(await listed.locator('.file__state').textContent()).toBe('Available (not scanned)');
      await page.screenshot({ path: path.join(ARTIFACTS, 'web-view-files.png'), fullPage: true });
      const [again] = await Promise.all([
        page.waitForEvent('download'),
        listed.getByRole('link', { name: 'ecg-report.pdf' }).click(),
      ]);
      expect(fs.readFileSync(await again.path()).equals(letter)).toBe(true);
      expect(problems).toEqual([]);
    } finally {
      await noScript.close();
    }
    const view = await senderView(t, id);
    expect((view.timelineEvents as { type: string }[]).map((e) => e.type).slice(-4)).toEqual([
      'referral.attachment-added',
      'referral.attachment-removed',
      'referral.attachment-added',
      'referral.pending-acceptance',
    ]);
  });

  it('shows the provider’s outcome on the view page, and acknowledges it with script turned off', async () => {
    const letter = pdf(CATALOG, PAGES);
    const link = await upsertLink(t, {
      offeringId: 'cgh-gastro',
      ...PATIENT,
      referrerName: 'Dr Lim Wei Ling',
    });
    const id = link.referralId;
    await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
    await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/accept`, {});
    const letterId = await apiAttach(t, t.provider, id, { name: 'consult-letter.pdf', bytes: letter });
    const summary =
      'Gastroscopy: mild antral gastritis, no ulcer. CLO test negative.\n' +
      'Continue omeprazole 20 mg once daily for 4 weeks, then stop.\n\n' +
      'No follow-up needed with us. Please re-refer if symptoms return.';
    await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/complete`, {
      outcomeCode: 'seen-discharged',
      summary,
      attachmentIds: [letterId],
      completedByName: 'Dr Wong Mei Ling',
    });
    // The sender's clinic system hands it the referral's links: a completed referral opens its view page.
    const links = await linksOf(t, id);
    expect(Object.keys(links).sort()).toEqual(['print', 'view']);

    const noScript = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    try {
      const context = await noScript.newContext({
        javaScriptEnabled: false,
        viewport: { width: 1280, height: 900 },
        locale: 'en-SG',
        timezoneId: 'Asia/Singapore',
      });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
      page.on('dialog', (dialog) => {
        problems.push(`dialog: ${dialog.message()}`);
        void dialog.dismiss();
      });
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`${message.type()}: ${message.text()}`);
      });
      await page.goto(links.view!.url);
      expect(new URL(page.url()).pathname).toBe(`/view/${id}`);

      const card = page.locator('.outcome-card');
      expect(await card.getByRole('heading', { name: 'Outcome', exact: true }).isVisible()).toBe(true);
      const row = (label: string) =>
        card.locator('dt', { hasText: new RegExp(`^${label}$`) }).locator('xpath=following-sibling::dd[1]');
      expect(await row('Outcome').textContent()).toBe('Seen and discharged to the referring clinic');
      // As written, on its own lines: innerText is what the page renders, line breaks included.
      expect(await card.locator('.outcome__summary').innerText()).toBe(summary);
      expect(await row('Completed by').textContent()).toBe('Dr Wong Mei Ling (Central General Hospital)');
      expect(await row('Completed').textContent()).toMatch(/^\w{3} \d{1,2} \w{3} \d{4}, \d{2}:\d{2} SGT$/);
      expect(await row('Acknowledged').textContent()).toBe('Not yet');
      // The outcome comes first, above the document.
      const cardBox = await card.boundingBox();
      const documentBox = await page.locator('article.document').boundingBox();
      expect(cardBox!.y).toBeLessThan(documentBox!.y);
      await page.screenshot({ path: path.join(ARTIFACTS, 'web-view-outcome.png'), fullPage: true });
      // docs/images/web-view-outcome.png is this one.
      await card.screenshot({ path: path.join(ARTIFACTS, 'web-view-outcome-card.png') });

      const document = card.locator('.files .file');
      expect(await document.count()).toBe(1);
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        document.getByRole('link', { name: 'consult-letter.pdf' }).click(),
      ]);
      expect(download.suggestedFilename()).toBe('consult-letter.pdf');
      expect(fs.readFileSync(await download.path()).equals(letter)).toBe(true);

      await Promise.all([
        page.waitForURL(`**/view/${id}?acknowledged=1`),
        card.getByRole('button', { name: 'Acknowledge outcome' }).click(),
      ]);
      expect(await page.locator('.banner__title').textContent()).toBe('Outcome acknowledged');
      expect(await row('Acknowledged by').textContent()).toBe(`${WEB_REQUESTER} (Bukit Timah Family Clinic)`);
      expect(await row('Acknowledged').textContent()).toMatch(/ SGT$/);
      expect(await card.getByRole('button').count()).toBe(0);
      await page.screenshot({
        path: path.join(ARTIFACTS, 'web-view-outcome-acknowledged.png'),
        fullPage: true,
      });

      // A reload shows the same: the post is not sent again.
      await page.reload();
      expect(await row('Acknowledged by').textContent()).toBe(`${WEB_REQUESTER} (Bukit Timah Family Clinic)`);

      // On paper, the outcome is printed with the referral.
      await page.goto(links.print!.url);
      await page.emulateMedia({ media: 'print' });
      expect(await page.locator('.outcome-card .outcome__summary').isVisible()).toBe(true);
      expect(await page.locator('.outcome-card .acknowledge').count()).toBe(0);
      await page.screenshot({ path: path.join(ARTIFACTS, 'web-print-outcome.png'), fullPage: true });
      expect(problems).toEqual([]);
    } finally {
      await noScript.close();
    }
    const view = await senderView(t, id);
    expect(view).toMatchObject({ status: 'outcome-acknowledged', coreStatus: 'completed' });
    expect(
      (view.timelineEvents as { type: string; system: string; description: string }[]).at(-1),
    ).toMatchObject({
      type: 'referral.outcome-acknowledged',
      system: 'Manual',
      description: `${WEB_REQUESTER} (Bukit Timah Family Clinic) acknowledged the outcome of the referral.`,
    });
  });

  it('shows a patient named like markup as text, with no dialog, on every page', async () => {
    const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT, patientName: HOSTILE_NAME });
    const { page } = await newPage();
    await page.goto(link.url);
    expect(await page.inputValue('#field-patientName')).toBe(HOSTILE_NAME);
    await Promise.all([
      page.waitForURL('**/submitted'),
      page.getByRole('button', { name: 'Submit referral' }).click(),
    ]);
    expect(await page.locator('.summary').textContent()).toContain(HOSTILE_NAME);
    await page.goto((await linksOf(t, link.referralId)).print!.url);
    expect(await page.locator('[data-field="patient.name"]').first().textContent()).toBe(HOSTILE_NAME);
    expect(await page.locator('img').count()).toBe(0);
  });

  it('prints only the referral from the print page', async () => {
    const { page } = await newPage();
    await page.goto((await linksOf(t, submittedLink.referralId)).print!.url);
    expect(await page.locator('h1').first().textContent()).toBe('Print referral');
    expect(await page.locator('.site-header').isVisible()).toBe(true);
    await page.emulateMedia({ media: 'print' });
    expect(await page.locator('.site-header').isVisible()).toBe(false);
    expect(await page.locator('section[data-template="Specialist Referral"]').isVisible()).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'web-print.png'), fullPage: true });
    await page.emulateMedia({ media: 'screen' });
    await page.goto((await linksOf(t, submittedLink.referralId)).view!.url);
    expect(await page.locator('h1').first().textContent()).toBe('View referral');
  });

  it('moves the keyboard focus in reading order, from the skip link through the form', async () => {
    const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT });
    const { page } = await newPage();
    await page.goto(link.url);
    // Repeated stops on one control (a control with parts takes one Tab each) collapse into one.
    const order: string[] = [];
    for (let i = 0; i < 14; i++) {
      await page.keyboard.press('Tab');
      const at = await focused(page);
      if (order.at(-1) !== at) order.push(at);
    }
    expect(order.slice(0, 10)).toEqual([
      'skip-link',
      'field-patientName',
      'field-patientUin',
      'field-dob',
      'field-patientGender',
      'field-nationality',
      'field-residentialStatus',
      'field-patientPhoneNumber',
      'field-referrerName',
      'field-referrerIdType',
    ]);
    // The focus ring is visible: a 3px outline.
    expect(await page.evaluate('getComputedStyle(document.activeElement).outlineWidth')).toBe('3px');
  });
});
