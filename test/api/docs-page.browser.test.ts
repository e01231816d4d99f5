// The docs page in a real browser, as an integrator meets it: Debian's Chromium opens refhub's address,
// follows the landing page to /docs, and sees refhub's title and mark, reading /openapi.json and
// nothing else of refhub's. "Try it out" with the examples as they stand, authorized with the demo
// sender's key, creates a referral (201) and lists it (200): the examples are values refhub takes.
//
// One engine is enough: the examples' requests are checked on the app itself by the inject tests.
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ensureArtifactsDir, freePort } from '../support/browser.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

describe('the docs page in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // The document's server is PUBLIC_URL, and "Try it out" sends its requests there.
    t = await createTestApp('pglite', { env: { PUBLIC_URL: base } });
    await t.app.listen({ port, host: '127.0.0.1' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    ensureArtifactsDir();
    // An app on embedded PGlite and a browser start slowly on a loaded 2-core machine.
  }, 180_000);
  afterAll(async () => {
    await browser.close();
    await t.close();
  });

  /** Runs an operation's "Try it out" with its examples as they are; returns the status shown. */
  async function tryOut(page: Page, tag: string, operationId: string): Promise<string> {
    const block = `#operations-${tag}-${operationId}`;
    await page.click(`${block} .opblock-summary`);
    await page.click(`${block} .try-out__btn`);
    await page.click(`${block} .execute`);
    const status = page.locator(`${block} .live-responses-table .response .response-col_status`);
    await status.waitFor();
    return (await status.textContent())?.trim() ?? '';
  }

  it('leads from / to refhub’s docs, which read /openapi.json and take their own examples', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // Each step waits for the page to reach its state; under load that can take long.
    page.setDefaultTimeout(150_000);
    const problems: string[] = [];
    const requested: string[] = [];
    page.on('pageerror', (e) => problems.push(`script: ${e.message}`));
    page.on('request', (r) => {
      const url = r.url();
      if (url.startsWith(`${base}/`)) requested.push(new URL(url).pathname);
      else if (!url.startsWith('data:')) problems.push(`request: ${url}`);
    });

    await page.goto(`${base}/`);
    expect(await page.title()).toMatch(/refhub/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'screenshots', 'landing-page.png'), fullPage: true });
    await page.click('a[href="/docs"]');
    await page.waitForSelector('.opblock');

    expect(await page.title()).toBe('refhub API');
    const logo = await page.getAttribute('#swagger-ui .topbar a.link img', 'src');
    expect(logo).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(Buffer.from(logo!.split(',')[1]!, 'base64').toString('utf8')).toMatch(/>refhub<\/text>/);
    expect(await page.textContent('.info')).toContain('/openapi.json');
    await page.screenshot({ path: path.join(ARTIFACTS, 'screenshots', 'docs-page.png') });

    await page.click('.auth-wrapper .authorize');
    await page.fill('.auth-container input', `ApiKey ${t.sender.key}`);
    await page.click('.auth-btn-wrapper .authorize');
    await page.click('.btn-done');
    expect(await tryOut(page, 'Referrals', 'createReferral')).toBe('201');
    expect(await tryOut(page, 'Referrals', 'listReferrals')).toBe('200');
    const listed = await page.textContent('#operations-Referrals-listReferrals .live-responses-table');
    expect(listed).toMatch(/"total": 1\b/);

    // The document was read from /openapi.json alone; the plugin's own copies never.
    expect(requested).toContain('/openapi.json');
    expect(requested.filter((p) => p === '/docs/json' || p === '/docs/yaml')).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
    // Swagger UI's bundle is some megabytes of script, parsed on a loaded 2-core machine.
  }, 400_000);
});
