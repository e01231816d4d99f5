// Drives the hosted form the way a browser does, through app.inject: upsert a link through the API,
// open it, carry the session cookie, read the CSRF token from the page and post the form.
import * as cheerio from 'cheerio';
import { expect } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { PATIENT } from './fixtures/patients.ts';
import type { TestApp } from './test-app.ts';

export const WEB_REQUESTER = 'dr.lim@bukittimah.example';

export interface UpsertedLink {
  readonly referralId: string;
  readonly url: string;
  /** The path of the link (`/l/<token>`), to open with inject. */
  readonly path: string;
  readonly token: string;
}

/** POST /links/upsert as the test app's sender, for WEB_REQUESTER. */
export async function upsertLink(
  t: TestApp,
  fields: Record<string, unknown> = { offeringId: 'cgh-gastro', ...PATIENT },
): Promise<UpsertedLink> {
  const res = await t.request(t.sender, {
    method: 'POST',
    url: '/api/v1/links/upsert',
    payload: { ...t.sender.institution, requesterIdentifier: WEB_REQUESTER, ...fields },
  });
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json<{ referralId: string; url: string }>();
  return { referralId: body.referralId, url: body.url, ...linkParts(body.url) };
}

export function linkParts(url: string): { path: string; token: string } {
  const path = new URL(url).pathname;
  const token = /^\/l\/([A-Za-z0-9_-]{43})$/.exec(path)?.[1];
  expect(token, url).toBeDefined();
  return { path, token: token! };
}

/** The links[] a GET hands the sender (or another party's key) for WEB_REQUESTER. */
export async function linksOf(
  t: TestApp,
  referralId: string,
  who = t.sender,
): Promise<Record<string, UpsertedLink>> {
  const query = new URLSearchParams({ ...who.institution, requesterIdentifier: WEB_REQUESTER });
  const res = await t.request(who, {
    method: 'GET',
    url: `/api/v1/referrals/${referralId}?${query.toString()}`,
  });
  expect(res.statusCode, res.body).toBe(200);
  const links = res.json<{ links: { type: string; url: string }[] }>().links;
  return Object.fromEntries(links.map((l) => [l.type, { referralId, url: l.url, ...linkParts(l.url) }]));
}

export function open(t: TestApp, path: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'GET', url: path, headers });
}

/** The `name=value` of the session cookie a response sets. */
export function cookieOf(res: LightMyRequestResponse): string {
  const header = res.headers['set-cookie'];
  const first = Array.isArray(header) ? header[0] : header;
  expect(first, 'a Set-Cookie header').toBeDefined();
  return first!.split(';')[0]!;
}

export interface WebSession {
  readonly referralId: string;
  readonly cookie: string;
  /** Where the link redirected to. */
  readonly location: string;
}

/** Opens a link and returns the session it started. */
export async function redeem(t: TestApp, link: UpsertedLink): Promise<WebSession> {
  const res = await open(t, link.path);
  expect(res.statusCode, res.body).toBe(303);
  return { referralId: link.referralId, cookie: cookieOf(res), location: String(res.headers.location) };
}

/** A fresh link for a new draft, already opened. */
export async function newFormSession(t: TestApp, fields?: Record<string, unknown>): Promise<WebSession> {
  return redeem(t, await upsertLink(t, fields));
}

export function getPage(t: TestApp, session: WebSession, path = session.location) {
  return t.app.inject({ method: 'GET', url: path, headers: { cookie: session.cookie } });
}

export interface FormState {
  readonly csrf: string;
  readonly version: string;
  /** Every named control's current value, as the browser would post it. */
  readonly fields: Record<string, string>;
}

/** What a browser would post from the form in `html` before the person changes anything. */
export function formStateOf(html: string): FormState {
  const $ = cheerio.load(html);
  const fields: Record<string, string> = {};
  $('form input[name], form textarea[name], form select[name]').each((_, el) => {
    const node = $(el);
    const name = node.attr('name')!;
    if (el.tagName === 'textarea') fields[name] = node.text();
    else if (el.tagName === 'select') fields[name] = node.find('option[selected]').attr('value') ?? '';
    else if (node.attr('type') === 'radio') {
      if (node.attr('checked') !== undefined) fields[name] = node.attr('value') ?? '';
    } else fields[name] = node.attr('value') ?? '';
  });
  return { csrf: fields._csrf ?? '', version: fields.version ?? '', fields };
}

/** Loads the form and posts it back with `changes`, as "save" or "submit". */
export async function postForm(
  t: TestApp,
  session: WebSession,
  intent: 'save' | 'submit',
  changes: Record<string, string> = {},
  options: { headers?: Record<string, string>; state?: FormState } = {},
): Promise<LightMyRequestResponse> {
  const state = options.state ?? formStateOf((await getPage(t, session, `/form/${session.referralId}`)).body);
  return t.app.inject({
    method: 'POST',
    url: `/form/${session.referralId}`,
    headers: {
      cookie: session.cookie,
      'content-type': 'application/x-www-form-urlencoded',
      ...options.headers,
    },
    payload: new URLSearchParams({ ...state.fields, ...changes, intent }).toString(),
  });
}

/** The error summary's entries and the fields they link to. */
export function errorSummaryOf(html: string): { text: string; href: string | undefined }[] {
  const $ = cheerio.load(html);
  return $('.error-summary li')
    .toArray()
    .map((li) => ({ text: $(li).text().trim(), href: $(li).find('a').attr('href') }));
}

/** Asserts the headers every web response carries. */
export function expectSecurityHeaders(res: LightMyRequestResponse): void {
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['x-frame-options']).toBe('DENY');
  const csp = String(res.headers['content-security-policy']);
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("base-uri 'none'");
  expect(csp).not.toMatch(/script-src|unsafe-eval/);
}
