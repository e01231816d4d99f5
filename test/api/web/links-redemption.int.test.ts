// Opening a one-time link (contract §8): single use under concurrent clicks, expiry on the server's
// clock, the session cookie's attributes, the 303 to the action's page, the 410 and 404 pages, and
// the audit of every attempt. HEAD requests and browser prefetches never use a link up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as cheerio from 'cheerio';
import { APP_ENGINES } from '../../support/engines.ts';
import { referralIn } from '../../support/scenarios.ts';
import { apiKeyIdOf } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import {
  WEB_REQUESTER,
  cookieOf,
  expectSecurityHeaders,
  getPage,
  linksOf,
  open,
  redeem,
  upsertLink,
} from '../../support/web.ts';

const TTL_SECONDS = 900;

/** A clock the test moves forward; the app reads it for link expiry and sessions alike. */
function movableClock() {
  let offsetMs = 0;
  return {
    now: () => new Date(Date.now() + offsetMs),
    advance: (ms: number) => {
      offsetMs += ms;
    },
  };
}

async function redeemAudit(t: TestApp, referralId: string) {
  return t.ctx.db
    .selectFrom('audit_events')
    .select(['api_key_id', 'system', 'institution_id', 'requester_identifier', 'outcome', 'referral_ids'])
    .where('action', '=', 'link.redeem')
    .where((eb) => eb(eb.val(referralId), '=', eb.fn.any('referral_ids')))
    .orderBy('seq')
    .execute();
}

describe.each(APP_ENGINES)('link redemption on %s', (engine) => {
  let t: TestApp;
  const clock = movableClock();

  beforeAll(async () => {
    t = await createTestApp(engine, { clock });
  });
  afterAll(async () => {
    await t.close();
  });

  it('consumes the link, sets a session cookie for its referral and redirects (303) to the form', async () => {
    const link = await upsertLink(t);
    const res = await open(t, link.path);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/form/${link.referralId}`);
    expect(res.body).toBe('');
    expectSecurityHeaders(res);

    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(new RegExp(`^refhub_form_${link.referralId}=v1\\.`));
    const attributes = setCookie.split(';').map((a) => a.trim().toLowerCase());
    expect(attributes).toEqual(
      expect.arrayContaining(['max-age=7200', 'path=/', 'httponly', 'samesite=lax']),
    );
    // PUBLIC_URL is http here, so the cookie cannot be Secure (the browser would drop it).
    expect(attributes).not.toContain('secure');
    expect(attributes.some((a) => a.startsWith('domain='))).toBe(false);

    const form = await getPage(
      t,
      { referralId: link.referralId, cookie: cookieOf(res), location: '/' },
      res.headers.location,
    );
    expect(form.statusCode).toBe(200);
  });

  it('answers a second opening with the 410 page, and audits both attempts with the minting key', async () => {
    const link = await upsertLink(t);
    await redeem(t, link);
    const again = await open(t, link.path);
    expect(again.statusCode).toBe(410);
    expect(again.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(again.headers['set-cookie']).toBeUndefined();
    expectSecurityHeaders(again);
    const $ = cheerio.load(again.body);
    expect($('h1').text()).toBe('This link is no longer valid');
    expect($('main p').first().text()).toBe(
      'Each link opens once, in one browser, and only for a short time, to keep patient information safe.',
    );
    expect($('main').text()).toContain('Ask your clinic system for a new link.');

    const rows = await redeemAudit(t, link.referralId);
    expect(rows.map((r) => r.outcome)).toEqual(['success', 'denied']);
    const keyId = await apiKeyIdOf(t, t.sender);
    for (const row of rows) {
      expect(row).toMatchObject({
        api_key_id: keyId,
        system: 'Manual',
        institution_id: t.sender.institution.institutionId,
        requester_identifier: WEB_REQUESTER,
      });
    }
  });

  it('reopens a used link in the browser holding its live session, and nowhere else', async () => {
    const link = await upsertLink(t);
    const first = await redeem(t, link);
    const other = await redeem(t, await upsertLink(t));

    // The same browser: its cookie for this link's session goes along, so the page opens again.
    const again = await open(t, link.path, { cookie: `${other.cookie}; ${first.cookie}` });
    expect(again.statusCode).toBe(303);
    expect(again.headers.location).toBe(`/form/${link.referralId}`);
    // The session goes on as it was: no new cookie, so no new 2 hours.
    expect(again.headers['set-cookie']).toBeUndefined();
    expect((await getPage(t, first, String(again.headers.location))).statusCode).toBe(200);

    // Another browser, or one holding only another link's session, or a forged cookie: 410.
    const forged = first.cookie.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    for (const cookie of [undefined, other.cookie, forged]) {
      const res = await open(t, link.path, cookie === undefined ? {} : { cookie });
      expect(res.statusCode, cookie).toBe(410);
    }
    // A session cookie moved under another referral's name is not this link's session.
    const moved = `refhub_form_${other.referralId}=${first.cookie.slice(first.cookie.indexOf('=') + 1)}`;
    expect((await open(t, link.path, { cookie: moved })).statusCode).toBe(410);

    const reopened = await t.ctx.db
      .selectFrom('audit_events')
      .select(['outcome', 'system'])
      .where('action', '=', 'link.reopen')
      .where((eb) => eb(eb.val(link.referralId), '=', eb.fn.any('referral_ids')))
      .execute();
    expect(reopened).toEqual([{ outcome: 'success', system: 'Manual' }]);
    expect((await redeemAudit(t, link.referralId)).map((r) => r.outcome)).toEqual([
      'success',
      'denied',
      'denied',
      'denied',
      'denied',
    ]);

    // Once the session has ended, the same browser gets the 410 page too.
    clock.advance(2 * 3600 * 1000 + 1000);
    expect((await open(t, link.path, { cookie: first.cookie })).statusCode).toBe(410);
  });

  it('lets exactly one of many concurrent openings through', async () => {
    const link = await upsertLink(t);
    const results = await Promise.all(Array.from({ length: 12 }, () => open(t, link.path)));
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses.filter((s) => s === 303)).toHaveLength(1);
    expect(statuses.filter((s) => s === 410)).toHaveLength(11);
    expect(results.filter((r) => r.headers['set-cookie'] !== undefined)).toHaveLength(1);
    const rows = await redeemAudit(t, link.referralId);
    expect(rows.filter((r) => r.outcome === 'success')).toHaveLength(1);
    expect(rows.filter((r) => r.outcome === 'denied')).toHaveLength(11);
  });

  it('refuses a link past its expiry on the server clock with the 410 page', async () => {
    const link = await upsertLink(t);
    clock.advance((TTL_SECONDS + 1) * 1000);
    const res = await open(t, link.path);
    expect(res.statusCode).toBe(410);
    expect(cheerio.load(res.body)('h1').text()).toBe('This link is no longer valid');
    expect(res.headers['set-cookie']).toBeUndefined();
    expect((await redeemAudit(t, link.referralId)).map((r) => r.outcome)).toEqual(['denied']);
  });

  it('opens a link just before it expires', async () => {
    const link = await upsertLink(t);
    clock.advance((TTL_SECONDS - 5) * 1000);
    expect((await open(t, link.path)).statusCode).toBe(303);
  });

  it('answers an unknown or malformed token with the 404 page, and audits nothing', async () => {
    const before = await t.ctx.db.selectFrom('audit_events').select('id').execute();
    for (const path of ['/l/' + 'A'.repeat(43), '/l/short', `/l/${'%3Cscript%3E'.padEnd(43, 'x')}`]) {
      const res = await open(t, path);
      expect(res.statusCode, path).toBe(404);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(cheerio.load(res.body)('h1').text()).toBe('This link is not valid');
      expectSecurityHeaders(res);
    }
    const after = await t.ctx.db.selectFrom('audit_events').select('id').execute();
    expect(after).toHaveLength(before.length);
  });

  it('does not use a link up for a HEAD request or a browser prefetch', async () => {
    const link = await upsertLink(t);
    const head = await t.app.inject({ method: 'HEAD', url: link.path });
    expect(head.statusCode).toBe(204);
    expect(head.headers['set-cookie']).toBeUndefined();
    const prefetches: Record<string, string>[] = [
      { 'sec-purpose': 'prefetch' },
      { 'sec-purpose': 'prefetch;prerender' },
      { purpose: 'prefetch' },
    ];
    for (const headers of prefetches) {
      const prefetch = await open(t, link.path, headers);
      expect(prefetch.statusCode).toBe(503);
      expect(prefetch.headers['set-cookie']).toBeUndefined();
    }
    expect((await open(t, link.path)).statusCode).toBe(303);
  });

  it('sends each action to its page: respond to the form, view and print to the read-only pages', async () => {
    const referral = await referralIn(t, 'sender-action-required');
    const links = await linksOf(t, referral.id);
    expect(Object.keys(links).sort()).toEqual(['print', 'respond', 'view']);
    expect((await redeem(t, links.respond!)).location).toBe(`/form/${referral.id}`);
    const view = await redeem(t, links.view!);
    expect(view.location).toBe(`/view/${referral.id}`);
    expect(view.cookie).toMatch(new RegExp(`^refhub_view_${referral.id}=`));
    const print = await redeem(t, links.print!);
    expect(print.location).toBe(`/print/${referral.id}`);
    expect(print.cookie).toMatch(new RegExp(`^refhub_print_${referral.id}=`));
    // Each session opens its own page only.
    expect((await getPage(t, view, `/print/${referral.id}`)).statusCode).toBe(403);
    expect((await getPage(t, print, `/form/${referral.id}`)).statusCode).toBe(403);
  });

  it('refuses the links of a revoked key, and ends the sessions they opened', async () => {
    const { key, record } = await t.ctx.apiKeys.create({
      system: 'HAS',
      role: 'sender',
      institutions: [{ idType: 'hci', id: t.sender.institution.institutionId }],
      environment: 'test',
    });
    const party = { ...t.sender, key };
    const mint = async () => {
      const res = await t.request(party, {
        method: 'POST',
        url: '/api/v1/links/upsert',
        payload: { ...party.institution, requesterIdentifier: WEB_REQUESTER, patientName: 'Revoked Key' },
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json<{ referralId: string; url: string }>();
    };
    const opened = await mint();
    const session = await redeem(t, { ...opened, path: new URL(opened.url).pathname, token: '' });
    const unopened = await mint();
    expect((await getPage(t, session)).statusCode).toBe(200);

    await t.ctx.apiKeys.revoke(record.id);
    expect((await getPage(t, session)).statusCode).toBe(403);
    const res = await open(t, new URL(unopened.url).pathname);
    expect(res.statusCode).toBe(410);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect((await redeemAudit(t, unopened.referralId)).map((r) => r.outcome)).toEqual(['denied']);
  });
});

describe('link redemption behind TLS', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('pglite', { env: { PUBLIC_URL: 'https://refhub.example' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('sets a Secure cookie with the __Host- prefix, which no subdomain can set or shadow', async () => {
    const link = await upsertLink(t);
    const res = await open(t, link.path);
    expect(res.statusCode).toBe(303);
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(new RegExp(`^__Host-refhub_form_${link.referralId}=`));
    const attributes = setCookie.split(';').map((a) => a.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['secure', 'httponly', 'samesite=lax', 'path=/']));
    expect(
      (
        await getPage(
          t,
          { referralId: link.referralId, cookie: cookieOf(res), location: '' },
          `/form/${link.referralId}`,
        )
      ).statusCode,
    ).toBe(200);
  });
});
