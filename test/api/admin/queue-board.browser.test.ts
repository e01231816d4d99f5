// The ops pages in a real browser: Debian's Chromium, driven by playwright-core, signing in through its
// own Basic prompt, against refhub listening on a loopback port with the bridge running. It proves
// what inject cannot: bull-board's bundled page runs under our Content-Security-Policy, loads nothing
// from elsewhere, shows a failed forward by its IDs and code, and retries it in write mode.
//
// One engine is enough: the store is reached through the same code the inject tests run on both.
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call, createDraft } from '../../support/scenarios.ts';
import { OPS_USER } from '../../support/ops-client.ts';
import { ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ensureArtifactsDir } from '../../support/browser.ts';

describe('the ops pages in Chromium', () => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp('pglite', ehr, { env: { OPS_DASHBOARD_WRITE: 'true', EHR_MAX_ATTEMPTS: '3' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    base = `http://127.0.0.1:${address.port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    ensureArtifactsDir();
  });
  afterAll(async () => {
    await browser.close();
    await t.close();
    await ehr.stop();
  });

  const forwardingState = async (id: string) =>
    (
      (await call(
        t,
        t.sender,
        'GET',
        `/api/v1/referrals/${id}?requesterIdentifier=dr.lim@example.org&institutionIdType=hci&institutionId=S1234A`,
      )) as { ehrForwarding: { state: string } }
    ).ehrForwarding.state;

  /** A page whose console errors, script errors and requests to anywhere else are collected. */
  async function watchedPage(credentials: { username: string; password: string } | undefined) {
    // A browser in a zone other than the display zone: the pages still show the display zone.
    const context = await browser.newContext({
      timezoneId: 'America/New_York',
      ...(credentials === undefined ? {} : { httpCredentials: credentials }),
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`script: ${e.message}`));
    page.on('request', (r) => {
      if (!r.url().startsWith(`${base}/`) && !r.url().startsWith('data:'))
        problems.push(`request: ${r.url()}`);
    });
    return { page, problems, close: () => context.close() };
  }

  const text = async (page: Page) => (await page.textContent('body')) ?? '';

  it('gets a Basic challenge it cannot answer without an ops key', async () => {
    // Headless Chromium has no prompt to show: an unanswered challenge fails the navigation.
    for (const credentials of [undefined, { username: OPS_USER, password: t.sender.key }]) {
      const { page, close } = await watchedPage(credentials);
      if (credentials === undefined) {
        await expect(page.goto(`${base}/admin/queues`)).rejects.toThrow(/ERR_INVALID_AUTH_CREDENTIALS/);
      } else {
        expect((await page.goto(`${base}/admin/queues`))?.status()).toBe(403);
      }
      await close();
    }
  });

  it('shows a failed canary forward by its IDs and code, and retries it from the board', async () => {
    await ehr.setBehaviour({ statuses: [422] });
    const draft = await createDraft(t, CANARY);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
    t.startBackground();
    await eventually('the forward to fail', async () =>
      (await forwardingState(draft.id)) === 'failed' ? true : undefined,
    );

    const { page, problems, close } = await watchedPage({ username: OPS_USER, password: t.ops.key });
    await page.goto(`${base}/admin`);
    expect(await page.textContent('[data-stat="failed-forwards"] .stat__value')).toBe('1');
    expect(await page.textContent(`[data-failed-forward="${draft.id}"] [data-answer]`)).toBe('HTTP 422');
    await page.screenshot({ path: path.join(ARTIFACTS, 'admin-overview.png'), fullPage: true });

    await page.click('[data-dashboard-link]');
    await page.waitForURL(`${base}/admin/queues`);
    await page.getByText('ehr-forward', { exact: true }).first().click();
    await page.goto(`${base}/admin/queues/queue/ehr-forward?status=failed`);
    await page.getByText('HTTP_422').waitFor();
    // The job's times, as the board writes them: in the display zone (Asia/Singapore), with the zone
    // named, in the format nearest the one of every other page (domain/display-time.ts).
    const times = await page.locator('time').allTextContents();
    expect(times.length).toBeGreaterThan(0);
    for (const shown of times) {
      expect(shown).toMatch(
        /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} GMT\+8$/,
      );
    }
    await page.screenshot({ path: path.join(ARTIFACTS, 'admin-queues-failed.png') });
    const shown = await text(page);
    expect(shown).toContain(draft.id);
    for (const marker of CANARY_MARKERS) expect(shown).not.toContain(marker);

    await page.getByRole('button', { name: 'Retry all' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await eventually('the retried forward to be delivered', async () =>
      (await forwardingState(draft.id)) === 'forwarded' ? true : undefined,
    );
    expect(problems).toEqual([]);
    await close();
  });
});
