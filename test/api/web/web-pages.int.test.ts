// Every web page: the security headers and a CSP whose nonce matches the page's one stylesheet (no
// script anywhere), values escaped wherever they appear, offering descriptions with safe links only,
// and view and print pages that show exactly the content of the EHR form.
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { APP_ENGINES } from '../../support/engines.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { call, createDraft, referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import {
  WEB_REQUESTER,
  expectSecurityHeaders,
  getPage,
  linksOf,
  newFormSession,
  open,
  postForm,
  redeem,
  upsertLink,
} from '../../support/web.ts';

const HOSTILE_NAME = '<img src=x onerror=alert(1)>';

/** The page's CSP allows exactly the nonce its <style> carries, and the page runs nothing. */
function expectNoncedPage(res: LightMyRequestResponse, options: { styleAttributes: boolean }): void {
  expectSecurityHeaders(res);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  const csp = String(res.headers['content-security-policy']);
  const nonce = /style-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
  expect(nonce, csp).toBeDefined();
  expect(csp).toContain("img-src 'self' data:");
  expect(csp).toContain("form-action 'self'");
  expect(csp.includes("style-src-attr 'unsafe-inline'")).toBe(options.styleAttributes);
  const $ = cheerio.load(res.body);
  expect($('style')).toHaveLength(1);
  expect($('style').attr('nonce')).toBe(nonce);
  expect($('script')).toHaveLength(0);
  expect($('[style]').length > 0).toBe(options.styleAttributes);
  for (const el of $('*').toArray()) {
    if (!('attribs' in el)) continue;
    for (const name of Object.keys(el.attribs))
      expect(name.startsWith('on'), `<${el.name} ${name}>`).toBe(false);
  }
}

describe.each(APP_ENGINES)('web pages on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  it('gives every page a fresh nonce and the security headers', async () => {
    const session = await newFormSession(t);
    const first = await getPage(t, session);
    const second = await getPage(t, session);
    expectNoncedPage(first, { styleAttributes: false });
    expect(first.headers['content-security-policy']).not.toBe(second.headers['content-security-policy']);

    const invalid = await postForm(t, session, 'save', { patientUin: 'nope' });
    expect(invalid.statusCode).toBe(400);
    expectNoncedPage(invalid, { styleAttributes: false });

    expect((await postForm(t, session, 'submit')).statusCode).toBe(303);
    expectNoncedPage(await getPage(t, session, `/form/${session.referralId}/submitted`), {
      styleAttributes: false,
    });
    expectNoncedPage(await getPage(t, session), { styleAttributes: false }); // 409: no longer editable

    const used = await upsertLink(t);
    await open(t, used.path);
    expectNoncedPage(await open(t, used.path), { styleAttributes: false }); // 410
    expectNoncedPage(await open(t, '/l/' + 'Z'.repeat(43)), { styleAttributes: false }); // 404
    expectNoncedPage(await t.app.inject({ method: 'GET', url: `/form/${session.referralId}` }), {
      styleAttributes: false,
    }); // 403

    const links = await linksOf(t, session.referralId);
    for (const purpose of ['view', 'print'] as const) {
      const s = await redeem(t, links[purpose]!);
      expectNoncedPage(await getPage(t, s), { styleAttributes: true });
    }
  });

  it('shows on the view and print pages exactly the content of the EHR form', async () => {
    const referral = await referralIn(t, 'scheduled', { clinicalInfo: 'Line one.\n  Indented line two.' });
    await call(
      t,
      t.provider,
      'POST',
      `/api/v1/referrals/${referral.id}/notes`,
      {
        content: 'Bring previous scans.',
        authorName: 'Dr Wong',
      },
      201,
    );
    const query = new URLSearchParams({
      ...t.sender.institution,
      requesterIdentifier: WEB_REQUESTER,
      additionalField: 'ehrForm',
    });
    const api = await t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/referrals/${referral.id}?${query.toString()}`,
    });
    const ehr = cheerio.load(api.json<{ ehrForm: string }>().ehrForm);
    const fieldsOf = ($: cheerio.CheerioAPI, root: string) =>
      $(`${root} [data-field]`)
        .toArray()
        .map((el) => [$(el).attr('data-field'), $(el).text()]);
    const expected = fieldsOf(ehr, 'main');
    expect(expected.length).toBeGreaterThan(40);

    const links = await linksOf(t, referral.id);
    for (const purpose of ['view', 'print'] as const) {
      const page = await getPage(t, await redeem(t, links[purpose]!));
      expect(page.statusCode).toBe(200);
      const $ = cheerio.load(page.body);
      expect(fieldsOf($, 'article.document')).toEqual(expected);
      expect(
        $('article.document section[data-template]')
          .toArray()
          .map((s) => $(s).attr('data-template')),
      ).toEqual(['Patient Summary', 'Specialist Referral']);
      expect($('h1').first().text()).toBe(purpose === 'print' ? 'Print referral' : 'View referral');
      // The print stylesheet leaves only the document on paper.
      expect($('style').text()).toMatch(/@media print \{[\s\S]*\.site-header[\s\S]*display: none/);
    }
  });

  it('names the fields an update changed on the view page as the web form labels them', async () => {
    const draft = await createDraft(t);
    await call(t, t.sender, 'PATCH', `/api/v1/referrals/${draft.id}`, {
      offeringId: 'erh-cardio',
      referrerName: 'Dr Lim',
    });
    await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
    const page = await getPage(t, await redeem(t, (await linksOf(t, draft.id)).view!));
    expect(page.statusCode).toBe(200);
    const $ = cheerio.load(page.body);
    const updates = $('[data-field="timeline.description"]')
      .toArray()
      .map((el) => $(el).text())
      .filter((text) => text.includes('updated the referral'));
    expect(updates).toEqual([
      'Bukit Timah Family Clinic updated the referral (Referring clinician’s name, Service).',
    ]);
    // Each word for a field is a label the web form shows: its controls' labels and legends.
    const form = cheerio.load((await getPage(t, await newFormSession(t))).body);
    const formLabels = new Set(
      form('label, legend')
        .toArray()
        .map((el) => form(el).text().replace(/\s+/g, ' ').trim()),
    );
    const named = /\(([^)]*)\)\.$/.exec(updates[0] ?? '')?.[1]?.split(', ') ?? [];
    expect(named).toHaveLength(2);
    for (const label of named) expect([...formLabels]).toContain(label);
  });

  it('opens view and print pages for the provider’s requester too, with the provider named', async () => {
    const referral = await referralIn(t, 'accepted');
    const links = await linksOf(t, referral.id, t.provider);
    expect(Object.keys(links).sort()).toEqual(['print', 'view']);
    const page = await getPage(t, await redeem(t, links.view!));
    expect(page.statusCode).toBe(200);
    expect(cheerio.load(page.body)('header').text()).toContain('Central General Hospital');
  });

  it('shows a hostile patient name as text on every page', async () => {
    const session = await newFormSession(t, {
      offeringId: 'cgh-gastro',
      ...PATIENT,
      patientName: HOSTILE_NAME,
    });
    const form = await getPage(t, session);
    expect(form.body).not.toContain(HOSTILE_NAME);
    expect(cheerio.load(form.body)('#field-patientName').val()).toBe(HOSTILE_NAME);
    expect(cheerio.load(form.body)('img')).toHaveLength(0);

    expect((await postForm(t, session, 'submit')).statusCode).toBe(303);
    const result = await getPage(t, session, `/form/${session.referralId}/submitted`);
    expect(result.body).not.toContain(HOSTILE_NAME);
    expect(cheerio.load(result.body)('.summary').text()).toContain(HOSTILE_NAME);
    expect(cheerio.load(result.body)('img')).toHaveLength(0);

    const print = await getPage(t, await redeem(t, (await linksOf(t, session.referralId)).print!));
    expect(print.body).not.toContain(HOSTILE_NAME);
    expect(cheerio.load(print.body)('[data-field="patient.name"]').first().text()).toBe(HOSTILE_NAME);
    expect(cheerio.load(print.body)('img')).toHaveLength(0);
  });

  it('makes only http(s) addresses in an offering description into links', async () => {
    await t.ctx.catalog.load({
      systems: [],
      institutions: [],
      offerings: [
        {
          id: 'cgh-hostile',
          name: 'Hostile Description Clinic',
          category: 'polyclinic',
          description:
            'Guide: https://example.org/a?b=1&c="2". Not a link: javascript:alert(1) nor data:text/html,x ' +
            '(see https://example.org/paren).',
          specialty: 'Family Medicine',
          ehrCode: 'HOSTILE',
          institution: { idType: 'hci', id: 'S9001Z' },
          system: 'Epic',
        },
      ],
    });
    const $ = cheerio.load((await getPage(t, await newFormSession(t))).body);
    const details = $(`#${$('input[value=cgh-hostile]').attr('aria-describedby')}`);
    const hrefs = details
      .find('a')
      .toArray()
      .map((a) => $(a).attr('href'));
    expect(hrefs).toEqual(['https://example.org/a?b=1&c=', 'https://example.org/paren']);
    expect(details.text()).toContain('Not a link: javascript:alert(1) nor data:text/html,x');
    expect(details.find('a[href^="javascript"], a[href^="data"]')).toHaveLength(0);
    expect(
      $('[role=group]')
        .toArray()
        .map((g) => $(g).find('.category__name').text()),
    ).toContain('Polyclinics');
  });
});
