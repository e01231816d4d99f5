// Every page a clinician or an operator reads, on a phone: Debian's Chromium at 320 and 390 CSS
// pixels wide, against refhub listening on a loopback port with the EHR bridge and the webhook
// deliveries running, so the view and print pages carry a real timeline, appointments and notes, and
// /admin real failed forwards and a subscription refhub disabled.
//
// What is measured, on every page: the page never scrolls sideways; every table, row, cell and
// scroll box fits its content (scrollWidth ≤ clientWidth) and lies inside its card; and no word is
// broken between two letters while it would fit its cell whole ("Famil y", "create d"). One engine is
// enough: the pages are the same on both.
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import { CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, ensureArtifactsDir, freePort } from '../../support/browser.ts';
import { CATALOG, PAGES, pdf } from '../../support/fixtures/attachment-files.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { OPS_USER } from '../../support/ops-client.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call } from '../../support/scenarios.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';
import { WEB_REQUESTER, linksOf, upsertLink } from '../../support/web.ts';

const WIDTHS = [320, 390] as const;

const LONG_FILE_NAME = 'Echocardiogram-and-exercise-ECG-report-Central-General-Hospital-2026-11-26.pdf';

const REFERRER = {
  referrerName: 'Dr Lim Wei Ling',
  referrerIdType: 'mcr',
  referrerId: 'M12345A',
  referrerEmail: WEB_REQUESTER,
  referrerContactNumber: '61234567',
};

/**
 * Runs in the page: every way the layout can fail on a narrow screen, as sentences. Kept as a string
 * so that it runs as written in the browser, not as compiled for Node.
 */
const LAYOUT_PROBLEMS = `(() => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth) {
    problems.push('the page scrolls sideways: ' + root.scrollWidth + ' > ' + root.clientWidth);
  }
  const name = (el) => el.tagName.toLowerCase() + (el.dataset.label ? '[' + el.dataset.label + ']' : '') +
    ' "' + (el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 40) + '"';
  // Headings kept for screen readers only sit in a 1-pixel clipped box on purpose.
  const visuallyHidden = (el) => {
    for (let e = el; e; e = e.parentElement) {
      if (getComputedStyle(e).clipPath !== 'none' && e.getBoundingClientRect().width <= 1) return true;
    }
    return false;
  };
  for (const table of document.querySelectorAll('table')) {
    const card = table.closest('.document, .card, .message') || document.body;
    const box = card.getBoundingClientRect();
    const boxes = [table, ...table.querySelectorAll('tr, th, td')].filter((el) => !visuallyHidden(el));
    for (let el = table.parentElement; el && el !== card; el = el.parentElement) boxes.push(el);
    for (const el of boxes) {
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).display !== 'inline') {
        problems.push(name(el) + ' overflows: scrollWidth ' + el.scrollWidth + ' > clientWidth ' + el.clientWidth);
      }
      const r = el.getBoundingClientRect();
      if (r.width > 0 && (r.left < box.left - 0.5 || r.right > box.right + 0.5)) {
        problems.push(name(el) + ' sticks out of its card: ' + Math.round(r.left) + '–' + Math.round(r.right) +
          ' outside ' + Math.round(box.left) + '–' + Math.round(box.right));
      }
    }
    // A run of letters or digits split over two lines although it would fit its cell on one.
    const walker = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const cell = node.parentElement.closest('td, th');
      if (!cell || visuallyHidden(cell)) continue;
      const style = getComputedStyle(cell);
      const room = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      for (const match of node.data.matchAll(/[\\p{L}\\p{N}]+/gu)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const rects = [...range.getClientRects()].filter((rect) => rect.width > 0);
        const lines = new Set(rects.map((rect) => Math.round(rect.top)));
        const width = rects.reduce((sum, rect) => sum + rect.width, 0);
        if (lines.size > 1 && width <= room) {
          problems.push('"' + match[0] + '" is broken over ' + lines.size + ' lines in ' + name(cell));
        }
      }
    }
  }
  return problems;
})()`;

describe('every page on a phone, in Chromium', () => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  let browser: Browser;
  let base: string;
  let hook: WebhookReceiver;
  let referralId: string;

  beforeAll(async () => {
    ensureArtifactsDir();
    ehr = await startEhr();
    // The EHR refuses every form, so /admin lists failed forwards.
    await ehr.setBehaviour({ statuses: [422] });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createBridgeApp('postgres', ehr, { env: { PUBLIC_URL: base, EHR_MAX_ATTEMPTS: '1' } });
    await t.app.listen({ port, host: '127.0.0.1' });
    t.startBackground();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });

    // A receiver that answers 410 Gone: refhub disables its subscription, and /admin lists it.
    hook = await startWebhookReceiver();
    hook.answer({ status: 410 });
    const subscriptions = `/api/v1/institutions/${t.sender.institution.institutionIdType}/${t.sender.institution.institutionId}/webhook-subscriptions`;
    const res = await t.request(t.sender, {
      method: 'POST',
      url: subscriptions,
      payload: { url: hook.url, eventTypes: ['referral.created'] },
    });
    expect(res.statusCode, res.body).toBe(201);

    // A specialist referral with the record a clinician reads: appointments, notes, a long timeline.
    const link = await upsertLink(t, {
      offeringId: 'cgh-gastro',
      ...PATIENT,
      ...REFERRER,
      clinicalInfo: 'Dyspepsia for 3 months, not settling on a PPI.\nFamily history of gastric cancer.',
    });
    referralId = link.referralId;
    const post = (who: typeof t.sender, op: string, body: Record<string, unknown> = {}) =>
      call(t, who, 'POST', `/api/v1/referrals/${referralId}/${op}`, body);
    await post(t.sender, 'submit');
    await post(t.provider, 'accept', { requesterIdentifier: 'dr.wong@cgh.example.org' });
    for (const [id, status, startAt] of [
      ['EPIC-1', 'scheduled', '2030-01-07T01:30:00.000Z'],
      ['EPIC-1', 'no-show', '2030-01-07T01:30:00.000Z'],
      ['EPIC-2', 'scheduled', '2030-01-21T06:00:00.000Z'],
    ] as const) {
      await call(t, t.provider, 'PUT', `/api/v1/referrals/${referralId}/appointments/${id}`, {
        status,
        startAt,
        location: 'Clinic 2C, Level 2, Central General Hospital Medical Centre',
      });
    }
    await call(
      t,
      t.provider,
      'POST',
      `/api/v1/referrals/${referralId}/notes`,
      { content: 'OGD booked. Please stop the PPI two weeks before.', authorName: 'Dr Wong' },
      201,
    );

    await eventually('the forward to fail and the subscription to be disabled', async () => {
      const overview = await t.app.inject({
        method: 'GET',
        url: '/admin',
        headers: { authorization: `Basic ${Buffer.from(`${OPS_USER}:${t.ops.key}`).toString('base64')}` },
      });
      return overview.body.includes(`data-failed-forward="${referralId}"`) &&
        overview.body.includes('data-disabled-webhook=')
        ? true
        : undefined;
    });
  }, 120_000);

  afterAll(async () => {
    await browser.close();
    await hook.close();
    await t.close();
    await ehr.stop();
  });

  /** Opens `target` in a fresh phone-sized tab, screenshots it and returns its layout problems. */
  async function measure(
    name: string,
    width: number,
    target: string | (() => Promise<string>),
    options: { status?: number; ops?: boolean } = {},
  ): Promise<{ page: Page; problems: string[]; close: () => Promise<void> }> {
    const context = await browser.newContext({
      viewport: { width, height: 800 },
      isMobile: true,
      hasTouch: true,
      deviceScaleFactor: 2,
      locale: 'en-SG',
      ...(options.ops === true ? { httpCredentials: { username: OPS_USER, password: t.ops.key } } : {}),
    });
    const page = await context.newPage();
    const response = await page.goto(typeof target === 'string' ? target : await target());
    expect(response?.status(), name).toBe(options.status ?? 200);
    await page.screenshot({ path: path.join(SCREENSHOTS, `phone-${width}-${name}.png`), fullPage: true });
    const problems = await page.evaluate<string[]>(LAYOUT_PROBLEMS);
    return { page, problems, close: () => context.close() };
  }

  for (const width of WIDTHS) {
    describe(`${width} px wide`, () => {
      it.each(['view', 'print'] as const)(
        'shows the %s page’s tables without overflow or broken words',
        async (purpose) => {
          const { page, problems, close } = await measure(purpose, width, async () => {
            return (await linksOf(t, referralId))[purpose]!.url;
          });
          expect(await page.locator('article.document table').count()).toBeGreaterThan(4);
          expect(problems).toEqual([]);
          // Each timeline entry still says what its values are, with the column's heading.
          const first = page.locator('td[data-label="Event"]').first();
          expect(await first.isVisible()).toBe(true);
          const label = await page.evaluate(
            `getComputedStyle(document.querySelector('td[data-label="Event"]'), '::before').content`,
          );
          expect(label).toContain('"Event"');
          await close();
        },
      );

      it('shows a completed referral’s Outcome card, its documents and its button inside the screen', async () => {
        const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT, ...REFERRER });
        const id = link.referralId;
        await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
        await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/accept`, {});
        const letter = await t.request(t.provider, {
          method: 'POST',
          url: `/api/v1/referrals/${id}/attachments`,
          query: { ...t.provider.institution },
          headers: {
            'content-type': 'application/pdf',
            'content-disposition': `attachment; filename="${LONG_FILE_NAME}"`,
          },
          payload: pdf(CATALOG, PAGES),
        });
        expect(letter.statusCode, letter.body).toBe(201);
        await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/complete`, {
          outcomeCode: 'seen-follow-up',
          summary:
            'OGD: small hiatus hernia, biopsies taken (histology-pending-reference-CGH-2026-0001234).\n' +
            'Repeat OGD in 6 months; we will send the appointment.',
          attachmentIds: [letter.json<{ id: string }>().id],
          completedByName: 'Dr Wong Mei Ling',
        });
        const { page, problems, close } = await measure('view-outcome', width, async () => {
          return (await linksOf(t, id)).view!.url;
        });
        expect(problems).toEqual([]);
        for (const part of [
          '.outcome-card',
          '.outcome-card .file__name',
          '.outcome__summary',
          '.acknowledge button',
        ]) {
          const box = await page.locator(part).first().boundingBox();
          expect(box!.x + box!.width, part).toBeLessThanOrEqual(width);
        }
        await close();
      });

      it('shows /admin’s tables without overflow or cut-off columns', async () => {
        const { page, problems, close } = await measure('admin', width, `${base}/admin`, {
          ops: true,
        });
        expect(await page.locator(`[data-failed-forward="${referralId}"]`).count()).toBe(1);
        expect(await page.locator('[data-disabled-webhook]').count()).toBeGreaterThan(0);
        expect(problems).toEqual([]);
        // The last column of each table is on screen.
        for (const cell of await page.locator('tbody tr:first-child > :last-child').all()) {
          const box = await cell.boundingBox();
          expect(box!.x + box!.width).toBeLessThanOrEqual(width);
        }
        await close();
      });

      it('shows the form, a used link and the result page without sideways scrolling', async () => {
        const link = await upsertLink(t, { offeringId: 'cgh-gastro', ...PATIENT, ...REFERRER });
        // A file with a long name of one word, which must wrap inside its card.
        const attached = await t.request(t.sender, {
          method: 'POST',
          url: `/api/v1/referrals/${link.referralId}/attachments`,
          query: { ...t.sender.institution },
          headers: {
            'content-type': 'application/pdf',
            'content-disposition': `attachment; filename="${LONG_FILE_NAME}"`,
          },
          payload: pdf(CATALOG, PAGES),
        });
        expect(attached.statusCode, attached.body).toBe(201);
        const form = await measure('form', width, link.url);
        expect(await form.page.locator('.files .file').count()).toBe(1);
        expect(form.problems).toEqual([]);
        await Promise.all([
          form.page.waitForURL(`**/form/${link.referralId}/submitted`),
          form.page.getByRole('button', { name: 'Submit referral' }).click(),
        ]);
        expect(await form.page.evaluate(LAYOUT_PROBLEMS)).toEqual([]);
        await form.page.screenshot({
          path: path.join(SCREENSHOTS, `phone-${width}-result.png`),
          fullPage: true,
        });
        await form.close();
        const used = await measure('link-used', width, link.url, { status: 410 });
        expect(used.problems).toEqual([]);
        await used.close();
      });
    });
  }
});
