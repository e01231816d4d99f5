// Patient data and link tokens stay out of logs, URLs, cookies and error pages on the web form too
// (contract §8): the canary patient goes through every page, every refusal and a server error, and
// then the captured logs, the redirects and the cookies are searched for it and for every token.
import * as cheerio from 'cheerio';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { APP_ENGINES } from '../../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import {
  cookieOf,
  getPage,
  linksOf,
  open,
  postForm,
  upsertLink,
  type UpsertedLink,
  type WebSession,
} from '../../support/web.ts';

function leaked(text: string, secrets: readonly string[]): string[] {
  return [...CANARY_MARKERS, ...secrets].filter((s) => text.includes(s));
}

describe.each(APP_ENGINES)('privacy of the web form on %s', (engine) => {
  let t: TestApp;
  const responses: LightMyRequestResponse[] = [];
  const tokens: string[] = [];
  let serverError: LightMyRequestResponse;

  const track = (res: LightMyRequestResponse) => {
    responses.push(res);
    return res;
  };
  const redeem = async (l: UpsertedLink): Promise<WebSession> => {
    const res = track(await open(t, l.path));
    expect(res.statusCode).toBe(303);
    return { referralId: l.referralId, cookie: cookieOf(res), location: String(res.headers.location) };
  };
  const link = async (fields?: Record<string, unknown>): Promise<UpsertedLink> => {
    const l = await upsertLink(t, fields);
    tokens.push(l.token);
    return l;
  };

  beforeAll(async () => {
    t = await createTestApp(engine);
    const first = await link({ offeringId: 'cgh-gastro', ...CANARY });
    const session = await redeem(first);
    track(await open(t, first.path)); // 410
    track(await getPage(t, session));
    track(await postForm(t, session, 'save', { patientUin: 'S77', patientPhoneNumber: '1' })); // 400
    track(await postForm(t, session, 'save', { dob: '2999-12-31' })); // 400 from the service
    track(await postForm(t, session, 'save', { _csrf: 'forged' })); // 403
    track(await postForm(t, session, 'save', { clinicalInfo: `${CANARY.clinicalInfo} (updated)` }));
    track(await postForm(t, session, 'submit'));
    track(await getPage(t, session, `/form/${first.referralId}/submitted`));
    track(await getPage(t, session)); // 409
    const links = await linksOf(t, first.referralId);
    for (const l of Object.values(links)) tokens.push(l.token);
    for (const purpose of ['view', 'print'] as const) {
      const s = await redeem(links[purpose]!);
      track(await getPage(t, s));
    }
    // A server error while opening a link: the log must name neither the token nor the patient.
    const broken = await link({ ...CANARY });
    await sql`ALTER TABLE link_tokens RENAME TO link_tokens_away`.execute(t.ctx.db);
    try {
      serverError = track(await open(t, broken.path));
    } finally {
      await sql`ALTER TABLE link_tokens_away RENAME TO link_tokens`.execute(t.ctx.db);
    }
  });
  afterAll(async () => {
    await t.close();
  });

  it('logs one line per request by route pattern, with no token and no patient data', () => {
    const log = t.logs.join('');
    expect(leaked(log, tokens)).toEqual([]);
    expect(log).toContain('"route":"/l/:token"');
    expect(log).toContain('"route":"/form/:referralId"');
    expect(log).not.toMatch(/\/l\/[A-Za-z0-9_-]{43}/);
  });

  it('answers a server error with a page that holds no stack trace, and logs only its kind', () => {
    expect(serverError.statusCode).toBe(500);
    expect(serverError.headers['content-type']).toBe('text/html; charset=utf-8');
    const text = cheerio.load(serverError.body)('main').text();
    expect(text).toContain('Something went wrong');
    expect(text).toContain(String(serverError.headers['x-request-id']));
    expect(serverError.body).not.toMatch(/link_tokens|relation|at \w+ \(/i);
    const line = t.logs.find((l) => l.includes('web request failed'));
    expect(line).toBeDefined();
    expect(line).not.toMatch(/link_tokens|relation/);
  });

  it('puts no patient data or token in a redirect, a cookie or a page of refusal', () => {
    for (const res of responses) {
      const headers = JSON.stringify(res.headers);
      expect(leaked(headers, tokens), headers).toEqual([]);
      if (res.statusCode >= 403) expect(leaked(res.body, tokens), res.body.slice(0, 200)).toEqual([]);
    }
  });

  it('keeps the cookie to IDs, an expiry and a MAC', () => {
    const cookies = responses
      .flatMap((r) => [r.headers['set-cookie']].flat())
      .filter((c): c is string => typeof c === 'string');
    expect(cookies).toHaveLength(3);
    for (const cookie of cookies) {
      const payload = cookie.split('=')[1]!.split('.')[1]!;
      const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
      expect(Object.keys(decoded).sort()).toEqual(['a', 'e', 'i', 'k', 'l', 'q', 'r', 't']);
      expect(leaked(JSON.stringify(decoded), tokens)).toEqual([]);
    }
  });
});
