// Opening a link again in a real browser (Chromium, with its own cookie jar): the browser that opened
// it, whose session is still live, gets the open form back; another browser gets the 410 page, whose
// text goes on from its heading without repeating it.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { serveWithBrowser, type ServedApp } from '../../support/served-app.ts';
import type { TestApp } from '../../support/test-app.ts';
import { upsertLink } from '../../support/web.ts';

describe('a link opened again, in Chromium', () => {
  let served: ServedApp;
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    served = await serveWithBrowser('postgres');
    ({ t, browser } = served);
  }, 60_000);

  afterAll(async () => {
    await served.close();
  });

  it('shows the open form in the browser that opened it, and the 410 page in another', async () => {
    const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT });
    const mine = await browser.newContext();
    const first = await mine.newPage();
    expect((await first.goto(link.url))?.status()).toBe(200);
    await first.fill('#field-clinicalInfo', 'Typed before the tab was closed.');
    await Promise.all([
      first.waitForURL('**?saved=1'),
      first.getByRole('button', { name: 'Save draft' }).click(),
    ]);
    await first.close();

    // The clinician opens the same link again from the clinic system, in the same browser.
    const again = await mine.newPage();
    const response = await again.goto(link.url);
    expect(response?.status()).toBe(200);
    expect(new URL(again.url()).pathname).toBe(`/form/${link.referralId}`);
    expect(await again.locator('h1').textContent()).toBe('Complete the referral');
    expect(await again.inputValue('#field-clinicalInfo')).toBe('Typed before the tab was closed.');
    await mine.close();

    const theirs = await browser.newContext();
    const other = await theirs.newPage();
    expect((await other.goto(link.url))?.status()).toBe(410);
    const heading = (await other.locator('h1').textContent()) ?? '';
    expect(heading).toBe('This link is no longer valid');
    const opening = (await other.locator('main p').first().textContent()) ?? '';
    expect(opening).not.toContain(heading);
    expect(await other.locator('main').textContent()).toContain('Ask your clinic system for a new link.');
    await theirs.close();
  });
});
