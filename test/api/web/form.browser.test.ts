// The form's fields in a real browser set to another language (Chromium, locale en-US): every value
// a field is prefilled with is shown whole (a Clinician ID that is an email address is not cut off),
// on a desktop and on a phone, and the date of birth reads "29 Feb 1960", as in every document, not
// the browser's "02/29/1960"; typed in that style, it is stored as YYYY-MM-DD.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { senderView } from '../../support/store-inspection.ts';
import { serveWithBrowser, type ServedApp } from '../../support/served-app.ts';
import type { TestApp } from '../../support/test-app.ts';
import { WEB_REQUESTER, upsertLink } from '../../support/web.ts';

/**
 * Runs in the page: the fields whose value is wider than the field shows. A text field says so by
 * its scrollWidth; a select does not, so its chosen option's text is measured in the select's font.
 */
const CLIPPED_FIELDS = `(() => {
  const clipped = [];
  for (const input of document.querySelectorAll('input[type=text], input[type=email], input[type=tel]')) {
    if (input.value !== '' && input.scrollWidth > input.clientWidth) {
      clipped.push(input.id + ' "' + input.value + '": ' + input.scrollWidth + ' > ' + input.clientWidth);
    }
  }
  const context = document.createElement('canvas').getContext('2d');
  for (const select of document.querySelectorAll('select')) {
    const style = getComputedStyle(select);
    context.font = style.font;
    const text = select.selectedOptions[0]?.text ?? '';
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 16;
    const width = context.measureText(text).width;
    if (width > room) clipped.push(select.id + ' "' + text + '": ' + Math.round(width) + ' > ' + Math.round(room));
  }
  return clipped;
})()`;

describe('the form’s fields in Chromium, in en-US', () => {
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

  async function openForm(width: number, fields: Record<string, unknown>): Promise<Page> {
    const context = await browser.newContext({
      viewport: { width, height: 900 },
      locale: 'en-US',
      timezoneId: 'America/New_York',
    });
    const page = await context.newPage();
    const link = await upsertLink(t, fields);
    expect((await page.goto(link.url))?.status()).toBe(200);
    return page;
  }

  it.each([1280, 390, 320])('shows every prefilled value whole at %i px', async (width) => {
    // No clinician named: the form opens with the requester's email as the Clinician ID.
    const page = await openForm(width, { offeringId: 'cgh-gastro', ...PATIENT, residentialStatus: 'PR' });
    expect(await page.inputValue('#field-referrerId')).toBe(WEB_REQUESTER);
    expect(await page.evaluate(CLIPPED_FIELDS)).toEqual([]);
    await page.context().close();
  });

  it('shows the date of birth as the documents do, and stores what is typed that way as YYYY-MM-DD', async () => {
    const page = await openForm(1280, { offeringId: 'cgh-gastro', ...PATIENT });
    expect(await page.evaluate('navigator.language')).toBe('en-US');
    const dob = page.locator('#field-dob');
    expect(await dob.inputValue()).toBe('29 Feb 1960');
    // What the person sees is the value itself, not a browser's rendering of it.
    expect(await dob.getAttribute('type')).toBe('text');
    expect(await page.locator('#field-dob-hint').textContent()).toBe(
      'Day, month and year, for example 29 Feb 1960',
    );

    await dob.fill('02/29/1960');
    await Promise.all([
      page.waitForLoadState('load'),
      page.getByRole('button', { name: 'Save draft' }).click(),
    ]);
    await page.waitForSelector('.error-summary');
    expect(await page.locator('.error-summary a').textContent()).toBe(
      'Enter the date of birth as a real date from 1 Jan 1900 on, like 29 Feb 1960',
    );
    expect(await page.getAttribute('#field-dob', 'aria-invalid')).toBe('true');
    expect(await dob.inputValue()).toBe('02/29/1960');

    await dob.fill('3 Mar 1961');
    await Promise.all([
      page.waitForURL('**?saved=1'),
      page.getByRole('button', { name: 'Save draft' }).click(),
    ]);
    expect(await dob.inputValue()).toBe('3 Mar 1961');
    const id = new URL(page.url()).pathname.split('/')[2]!;
    expect((await senderView(t, id)).patient).toMatchObject({ dob: '1961-03-03' });
    await page.context().close();
  });
});
