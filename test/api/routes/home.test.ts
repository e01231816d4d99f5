// GET / : a browser gets a self-contained page that points at the docs, the health checks and the ops
// pages, with the security headers of every page refhub shows a person; any other client gets the
// same links as JSON. Neither needs a key, and neither carries referral data.
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROWSER_SECURITY_HEADERS } from '../../../src/api/browser-headers.ts';
import { homeLinks } from '../../../src/api/routes/home.routes.ts';
import { CANARY_MARKERS, CANARY } from '../../support/fixtures/patients.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

/** What Chromium and Firefox send when a person opens an address. */
const BROWSER_ACCEPT =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const EXPECTED_HREFS = ['/docs', '/openapi.json', '/healthz', '/readyz', '/admin'];

describe('the landing page', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('pglite');
    // A referral with the canary patient exists, so that a page that showed any would show it.
    const created = await t.request(t.sender, {
      method: 'POST',
      url: '/api/v1/referrals',
      payload: { ...t.sender.institution, offeringId: 'cgh-gastro', ...CANARY },
    });
    expect(created.statusCode, created.body).toBe(201);
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (accept?: string) =>
    t.app.inject({ method: 'GET', url: '/', headers: accept === undefined ? {} : { accept } });

  function expectSecurityHeaders(headers: Record<string, unknown>) {
    for (const [name, value] of Object.entries(BROWSER_SECURITY_HEADERS)) {
      expect(headers[name.toLowerCase()], name).toBe(value);
    }
    expect(headers.vary).toMatch(/\bAccept\b/);
  }

  it('answers a browser with a self-contained HTML page', async () => {
    const res = await get(BROWSER_ACCEPT);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html; charset=utf-8/);
    expectSecurityHeaders(res.headers);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/frame-ancestors 'none'/);

    const $ = cheerio.load(res.body);
    expect($('title').text()).toMatch(/refhub/);
    expect($('h1').text()).toBe('refhub');
    // Self-contained: no script, no stylesheet or image from elsewhere, and the one inline
    // stylesheet is the one the policy allows.
    expect($('script')).toHaveLength(0);
    expect($('link[rel=stylesheet]')).toHaveLength(0);
    expect(res.body).not.toMatch(/\b(?:src|href)="(?:https?:)?\/\//);
    const nonce = $('style').attr('nonce');
    expect(nonce).toBeTruthy();
    expect(csp).toContain(`style-src 'nonce-${nonce}'`);

    const hrefs = $('main a')
      .map((_i, a) => $(a).attr('href'))
      .get();
    expect(hrefs).toEqual(EXPECTED_HREFS);
  });

  it('answers other clients with the same links as JSON', async () => {
    for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html;q=0.5']) {
      const res = await get(accept);
      expect(res.statusCode, String(accept)).toBe(200);
      expect(res.headers['content-type'], String(accept)).toMatch(/^application\/json/);
      expectSecurityHeaders(res.headers);
      const body = res.json<{
        service: string;
        apiVersion: string;
        links: { rel: string; href: string }[];
      }>();
      expect(body.service).toBe('refhub');
      expect(body.links.map((l) => l.href)).toEqual(EXPECTED_HREFS);
      expect(body.links.map((l) => l.rel)).toEqual(['docs', 'openapi', 'health', 'readiness', 'admin']);
    }
  });

  it('points only at places that exist', async () => {
    for (const href of EXPECTED_HREFS) {
      const res = await t.app.inject({ method: 'GET', url: href });
      // The ops pages ask for a sign-in; readiness is 503 while Redis is away; the rest answer 200.
      const expected = href === '/admin' ? [401] : href === '/readyz' ? [200, 503] : [200];
      expect(expected, `${href} ${res.statusCode}`).toContain(res.statusCode);
    }
  });

  it('carries no referral data', async () => {
    for (const accept of [BROWSER_ACCEPT, 'application/json']) {
      const body = (await get(accept)).body;
      for (const marker of CANARY_MARKERS) expect(body).not.toContain(marker);
      expect(body).not.toMatch(/S1234A|cgh-gastro/);
    }
  });

  it('leaves out the docs where API_DOCS turns them off', () => {
    expect(homeLinks('off').map((l) => l.href)).toEqual(['/healthz', '/readyz', '/admin']);
    expect(homeLinks('ops').find((l) => l.rel === 'docs')?.description).toMatch(/Ops keys only/);
  });
});
