// Drives the hosted form the way a browser does, through app.inject: upsert a link through the API,
// open it, carry the session cookie, read the CSRF token from the page and post the form.
import * as cheerio from 'cheerio';
import { expect } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { PATIENT } from './fixtures/patients.ts';
import type { TestApp, TestParty } from './test-app.ts';

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

/** What a browser would post from the referral's form in `html` before the person changes anything. */
export function formStateOf(html: string): FormState {
  const $ = cheerio.load(html);
  const fields: Record<string, string> = {};
  // The referral's own form: not the forms of its files (upload, remove).
  $('form:not(.upload, .file__remove)')
    .find('input[name], textarea[name], select[name]')
    .each((_, el) => {
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

/** A file as a person picks it in the upload form: its name, its bytes and the type the browser gives it. */
export interface PickedFile {
  readonly name: string;
  readonly bytes: Buffer;
  /** The type the browser gives it, from the name's extension (application/octet-stream otherwise). */
  readonly type?: string;
}

/** A part of a multipart body: a field, or a file input (null when no file was chosen). */
export type FormPart =
  | { readonly name: string; readonly value: string }
  | { readonly name: string; readonly file: PickedFile | null };

const BROWSER_TYPES: Readonly<Record<string, string>> = {
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  gif: 'image/gif',
  txt: 'text/plain',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  exe: 'application/x-msdownload',
};

/** The type Chromium gives a picked file, from its name's extension. */
export function browserTypeOf(name: string): string {
  const extension = /\.([^.]+)$/.exec(name)?.[1]?.toLowerCase() ?? '';
  return BROWSER_TYPES[extension] ?? 'application/octet-stream';
}

/**
 * A multipart/form-data body as Chromium builds it: its boundary, each part's name (and a file's
 * name, raw UTF-8, with `"`, CR and LF escaped as %22, %0D and %0A), a file's type, CRLF lines.
 */
export function multipartBody(parts: readonly FormPart[]): { contentType: string; payload: Buffer } {
  const boundary = '----WebKitFormBoundary7MA4YWxkTrZu0gW';
  const escape = (text: string) => text.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(Buffer.from(`--${boundary}\r\n`));
    if ('value' in part) {
      chunks.push(Buffer.from(`Content-Disposition: form-data; name="${escape(part.name)}"\r\n\r\n`));
      chunks.push(Buffer.from(part.value), Buffer.from('\r\n'));
    } else {
      const file = part.file ?? { name: '', bytes: Buffer.alloc(0), type: 'application/octet-stream' };
      chunks.push(
        Buffer.from(
          `Content-Disposition: form-data; name="${escape(part.name)}"; filename="${escape(file.name)}"\r\n` +
            `Content-Type: ${file.type ?? browserTypeOf(file.name)}\r\n\r\n`,
        ),
        file.bytes,
        Buffer.from('\r\n'),
      );
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { contentType: `multipart/form-data; boundary=${boundary}`, payload: Buffer.concat(chunks) };
}

/** The headers Chromium sends with a post from the form's own page (no-referrer: `Origin: null`). */
export const OWN_PAGE_HEADERS: Readonly<Record<string, string>> = {
  origin: 'null',
  'sec-fetch-site': 'same-origin',
};

/**
 * Loads the form and posts its upload form with `file` (null: none chosen), as Chromium does: the
 * token first, then the file. `parts` replaces the body's parts, to post what a page would not.
 */
export async function postFile(
  t: TestApp,
  session: WebSession,
  file: PickedFile | null,
  options: { headers?: Record<string, string>; csrf?: string; parts?: readonly FormPart[] } = {},
): Promise<LightMyRequestResponse> {
  const page = cheerio.load((await getPage(t, session, `/form/${session.referralId}`)).body);
  const form = page('form[enctype="multipart/form-data"]');
  expect(form.length, 'the upload form').toBe(1);
  const csrf = options.csrf ?? form.find('input[name=_csrf]').attr('value') ?? '';
  const { contentType, payload } = multipartBody(
    options.parts ?? [
      { name: '_csrf', value: csrf },
      { name: 'file', file },
    ],
  );
  return t.app.inject({
    method: 'POST',
    url: form.attr('action')!,
    headers: {
      cookie: session.cookie,
      'content-type': contentType,
      ...OWN_PAGE_HEADERS,
      ...options.headers,
    },
    payload,
  });
}

/** A file as the pages list it. */
export interface ListedFile {
  readonly id: string;
  readonly name: string;
  /** "PDF, 1 KB. Added Tue 1 Dec 2026, 09:30 SGT by Bukit Timah Family Clinic." */
  readonly details: string;
  readonly state: string;
  /** The download link, when the file may be opened there. */
  readonly href: string | undefined;
  /** Where its remove button posts, when it has one. */
  readonly removeAction: string | undefined;
}

/** The files a page lists; `within` narrows them to one part of the page (`.files-card`, `.outcome-card`). */
export function filesOf(html: string, within?: string): ListedFile[] {
  const $ = cheerio.load(html);
  return $(within === undefined ? '.files .file' : `${within} .files .file`)
    .toArray()
    .map((li) => {
      const item = $(li);
      return {
        id: item.attr('data-file') ?? '',
        name: item.find('.file__name').text().trim(),
        details: item.find('.file__meta').text().replace(/\s+/g, ' ').trim(),
        state: item.find('.file__state').text().trim(),
        href: item.find('.file__name a').attr('href'),
        removeAction: item.find('form.file__remove').attr('action'),
      };
    });
}

/** Loads the form and presses the remove button of the file `attachmentId`, as a browser posts it. */
export async function removeFile(
  t: TestApp,
  session: WebSession,
  attachmentId: string,
  options: { headers?: Record<string, string>; csrf?: string; action?: string } = {},
): Promise<LightMyRequestResponse> {
  const page = cheerio.load((await getPage(t, session, `/form/${session.referralId}`)).body);
  const form = page(`.file[data-file="${attachmentId}"] form.file__remove`);
  const action = options.action ?? form.attr('action');
  expect(action, 'a remove button').toBeDefined();
  const csrf = options.csrf ?? form.find('input[name=_csrf]').attr('value') ?? formStateOf(page.html()).csrf;
  return t.app.inject({
    method: 'POST',
    url: action!,
    headers: {
      cookie: session.cookie,
      'content-type': 'application/x-www-form-urlencoded',
      ...OWN_PAGE_HEADERS,
      ...options.headers,
    },
    payload: new URLSearchParams({ _csrf: csrf }).toString(),
  });
}

/** A file a party adds through the API, as its clinic system does; its ID. */
export async function apiAttach(
  t: TestApp,
  who: TestParty,
  referralId: string,
  file: { readonly name: string; readonly bytes: Buffer },
): Promise<string> {
  const res = await t.request(who, {
    method: 'POST',
    url: `/api/v1/referrals/${referralId}/attachments`,
    query: { ...who.institution, requesterIdentifier: 'dr.wong@cgh.example.org' },
    headers: {
      'content-type': 'application/octet-stream',
      'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(file.name)}`,
    },
    payload: file.bytes,
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>().id;
}

/** The Outcome card as a page shows it. */
export interface OutcomeCard {
  /** Each row's label and its value, spaces collapsed. */
  readonly rows: Record<string, string>;
  /** The consult summary as written, line breaks and all; undefined when the card shows none. */
  readonly summary: string | undefined;
  readonly documents: ListedFile[];
  /** Where the acknowledge button posts, when the page offers it. */
  readonly acknowledgeAction: string | undefined;
  readonly acknowledgeButton: string | undefined;
}

/** The page's Outcome card, or undefined when it has none. */
export function outcomeCardOf(html: string): OutcomeCard | undefined {
  const $ = cheerio.load(html);
  const card = $('.outcome-card');
  if (card.length === 0) return undefined;
  expect(card.length, 'one Outcome card').toBe(1);
  const rows = Object.fromEntries(
    card
      .find('dl.summary dt')
      .toArray()
      .map((dt) => [
        $(dt).text().replace(/\s+/g, ' ').trim(),
        $(dt).next('dd').text().replace(/\s+/g, ' ').trim(),
      ]),
  );
  const summary = card.find('.outcome__summary');
  const form = card.find('form.outcome__acknowledge');
  return {
    rows,
    summary: summary.length === 0 ? undefined : summary.text(),
    documents: filesOf(html, '.outcome-card'),
    acknowledgeAction: form.attr('action'),
    acknowledgeButton: form.length === 0 ? undefined : form.find('button').text().replace(/\s+/g, ' ').trim(),
  };
}

/**
 * Loads the view page and presses "Acknowledge outcome", as a browser posts it. `csrf` and `action`
 * post what the page would not (a page without the button, a forged token).
 */
export async function acknowledgeOutcome(
  t: TestApp,
  session: WebSession,
  options: { headers?: Record<string, string>; csrf?: string; action?: string } = {},
): Promise<LightMyRequestResponse> {
  const page = cheerio.load((await getPage(t, session, `/view/${session.referralId}`)).body);
  const form = page('form.outcome__acknowledge');
  const action = options.action ?? form.attr('action');
  expect(action, 'an acknowledge button').toBeDefined();
  return t.app.inject({
    method: 'POST',
    url: action!,
    headers: {
      cookie: session.cookie,
      'content-type': 'application/x-www-form-urlencoded',
      ...OWN_PAGE_HEADERS,
      ...options.headers,
    },
    payload: new URLSearchParams({
      _csrf: options.csrf ?? form.find('input[name=_csrf]').attr('value') ?? '',
    }).toString(),
  });
}
