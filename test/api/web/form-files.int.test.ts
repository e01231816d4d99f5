// A referral's files in the web form, as a person uses them without script: the upload form posted as
// a browser builds it (multipart, the token first), each refusal explained on the page by its rule
// and nothing stored, removing from a draft only, the list with its type, size, time and scan state
// in words, downloads for the session's own referral only, the session and CSRF checks on every post,
// and the file's name and content kept out of the logs.
import { createHash } from 'node:crypto';
import * as cheerio from 'cheerio';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentRepository } from '../../../src/db/attachments.repository.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import {
  CATALOG,
  DOCX,
  GIF,
  JPEG,
  PAGES,
  PNG,
  TEXT,
  TIFF,
  pdf,
} from '../../support/fixtures/attachment-files.ts';
import { HIDDEN_ACTIVE_CONTENT } from '../../support/fixtures/pdf-files.ts';
import { call } from '../../support/scenarios.ts';
import { senderView } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import {
  WEB_REQUESTER,
  errorSummaryOf,
  expectSecurityHeaders,
  filesOf,
  getPage,
  linksOf,
  multipartBody,
  newFormSession,
  OWN_PAGE_HEADERS,
  postFile,
  redeem,
  removeFile,
  type PickedFile,
  type WebSession,
} from '../../support/web.ts';

const LETTER = pdf(CATALOG, PAGES);
const ACCEPTED = 'PDF, JPEG image, PNG image, TIFF image, plain text, Word document';
/** A time as the pages write it, in the default display zone. */
const LOCAL_TIME = /[A-Z][a-z]{2} \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} SGT/;

interface AttachmentJson {
  id: string;
  fileName: string;
  mediaType: string;
  sizeBytes: number;
  scanState: string;
}

async function apiFiles(t: TestApp, referralId: string): Promise<AttachmentJson[]> {
  const res = await t.request(t.sender, {
    method: 'GET',
    url: `/api/v1/referrals/${referralId}/attachments`,
    query: { ...t.sender.institution },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ data: AttachmentJson[] }>().data;
}

async function versionOf(t: TestApp, id: string): Promise<number> {
  const row = await t.ctx.db
    .selectFrom('referrals')
    .select('version')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row.version;
}

/** The page's error summary and the message by the file input. */
function uploadErrorOf(html: string): { summary: string[]; byInput: string; invalid: string | undefined } {
  const $ = cheerio.load(html);
  return {
    summary: errorSummaryOf(html).map((e) => `${e.text} -> ${e.href ?? ''}`),
    byInput: $('#field-file-error').text().replace('Error: ', '').trim(),
    invalid: $('#field-file').attr('aria-invalid'),
  };
}

function h1Of(html: string): string {
  return cheerio.load(html)('h1').first().text().trim();
}

/** The notice's title, and its text when it has one. */
function bannerOf(html: string): string {
  const $ = cheerio.load(html);
  return [$('.banner__title').text(), $('.banner__title').next('span').text()]
    .filter((text) => text !== '')
    .join(' ');
}

async function attach(t: TestApp, session: WebSession, file: PickedFile): Promise<string> {
  const before = new Set((await apiFiles(t, session.referralId)).map((f) => f.id));
  const res = await postFile(t, session, file);
  expect(res.statusCode, res.body.slice(0, 400)).toBe(303);
  const added = (await apiFiles(t, session.referralId)).filter((f) => !before.has(f.id));
  expect(added).toHaveLength(1);
  return added[0]!.id;
}

/** The token the form's upload form carries. */
async function uploadTokenOf(t: TestApp, session: WebSession): Promise<string> {
  const token = cheerio
    .load((await getPage(t, session)).body)('form.upload input[name=_csrf]')
    .attr('value');
  expect(token).toBeDefined();
  return token!;
}

async function submit(t: TestApp, referralId: string): Promise<void> {
  await call(t, t.sender, 'POST', `/api/v1/referrals/${referralId}/submit`, {});
}

describe.each(APP_ENGINES)('files in the web form on %s', (engine) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(engine, {
      env: { ATTACHMENT_MAX_MIB: '1', ATTACHMENTS_PER_REFERRAL: '3' },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  describe('attaching', () => {
    it('offers an upload form that works without script, with the rules, the token first and no files yet', async () => {
      const session = await newFormSession(t);
      const res = await getPage(t, session);
      expect(res.statusCode).toBe(200);
      const $ = cheerio.load(res.body);
      expect($('#section-files').text()).toBe('Files');
      expect($('.files__none').text()).toBe('No files are attached.');
      const form = $('form[enctype="multipart/form-data"]');
      expect(form.attr('method')).toBe('post');
      expect(form.attr('action')).toBe(`/form/${session.referralId}/attachments`);
      expect(
        form
          .find('input, button')
          .toArray()
          .map((e) => $(e).attr('name') ?? e.tagName),
      ).toEqual(['_csrf', 'file', 'button']);
      expect(form.find('input[type=file]').attr('accept')).toContain('.pdf,application/pdf');
      const hint = $('#field-file-hint').text();
      expect(hint).toContain(`${ACCEPTED}; up to 1 MB each, and 3 files in all.`);
      expect(hint).toContain('Save draft first if you changed anything above');
      expect($('script')).toHaveLength(0);
      // The referral's buttons name its form, which ends before the files' forms.
      expect($('button[value=save]').attr('form')).toBe('referral-form');
      expect($('#referral-form form')).toHaveLength(0);
    });

    it.each([
      ['ecg-report.pdf', LETTER, 'PDF'],
      ['ecg.jpg', JPEG, 'JPEG image'],
      ['scan.png', PNG, 'PNG image'],
      ['scan.tiff', TIFF, 'TIFF image'],
      ['心電図 notes.txt', TEXT, 'plain text'],
      ['letter.docx', DOCX, 'Word document'],
    ] as const)(
      'attaches %s as a browser posts it and lists it in words',
      async (fileName, bytes, typeWords) => {
        const session = await newFormSession(t);
        const res = await postFile(t, session, { name: fileName, bytes });
        expect(res.statusCode, res.body.slice(0, 400)).toBe(303);
        expect(res.headers.location).toBe(`/form/${session.referralId}?attached=1`);
        expect(String(res.headers.location)).not.toContain(fileName);
        expectSecurityHeaders(res);

        const stored = await apiFiles(t, session.referralId);
        expect(stored).toMatchObject([{ fileName, sizeBytes: bytes.length, scanState: 'not-scanned' }]);
        const page = await getPage(t, session, String(res.headers.location));
        expect(bannerOf(page.body)).toBe('File attached');
        const [listed] = filesOf(page.body);
        expect(listed).toMatchObject({
          id: stored[0]!.id,
          name: fileName,
          // No scanner in this installation: kept, and marked as never scanned.
          state: 'Available (not scanned)',
          href: `/form/${session.referralId}/attachments/${stored[0]!.id}`,
          removeAction: `/form/${session.referralId}/attachments/${stored[0]!.id}/remove`,
        });
        expect(listed!.details).toMatch(
          new RegExp(
            `^${typeWords}, ${bytes.length} bytes\\. Added ${LOCAL_TIME.source} by Bukit Timah Family Clinic\\.$`,
          ),
        );
      },
    );

    it('goes on the timeline as the person in the form, naming the type and size, not the file', async () => {
      const session = await newFormSession(t);
      await attach(t, session, { name: 'Tan Ah Kow ECG.pdf', bytes: LETTER });
      const view = await senderView(t, session.referralId);
      const events = view.timelineEvents as { type: string; system: string; description: string }[];
      expect(events.at(-1)).toMatchObject({
        type: 'referral.attachment-added',
        system: 'Manual',
        description: `${WEB_REQUESTER} (Bukit Timah Family Clinic) attached a file (PDF, ${LETTER.length} bytes).`,
      });
    });

    it.each([
      [
        'a type not accepted',
        { name: 'image.gif', bytes: GIF },
        415,
        `This type of file is not accepted. The accepted types are: ${ACCEPTED}.`,
      ],
      [
        'a name whose extension the content contradicts',
        { name: 'report.pdf', bytes: PNG },
        415,
        'The file’s content is not the type its name says',
      ],
      [
        'a PDF with JavaScript',
        { name: 'letter.pdf', bytes: pdf(CATALOG, '<< /S /JavaScript /JS (app.alert(1)) >>') },
        400,
        'The PDF contains JavaScript, which is not accepted. Content like this can run on the reader’s computer.',
      ],
      [
        'a PDF that keeps its script in a compressed object stream',
        { name: 'letter.pdf', bytes: HIDDEN_ACTIVE_CONTENT['an object stream under a PNG predictor'] },
        400,
        'The PDF contains JavaScript, which is not accepted.',
      ],
      [
        'a PDF that cannot be read whole',
        { name: 'letter.pdf', bytes: LETTER.subarray(0, LETTER.indexOf('xref')) },
        400,
        'The PDF cannot be read whole',
      ],
      ['an empty file', { name: 'empty.txt', bytes: Buffer.alloc(0) }, 400, 'The file is empty.'],
      [
        'a name with direction characters',
        { name: 'evil\u202etxt.pdf', bytes: LETTER },
        400,
        'The file name holds control or direction characters. Rename the file, then attach it again.',
      ],
    ] as const)(
      'refuses %s, saying why by the file input and in the summary',
      async (_label, file, status, words) => {
        const session = await newFormSession(t);
        const version = await versionOf(t, session.referralId);
        const res = await postFile(t, session, file);
        expect(res.statusCode).toBe(status);
        expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
        expectSecurityHeaders(res);
        const error = uploadErrorOf(res.body);
        expect(error.byInput).toContain(words);
        expect(error.summary).toEqual([`${error.byInput} -> #field-file`]);
        expect(error.invalid).toBe('true');
        expect(cheerio.load(res.body)('title').text()).toBe('Error: Complete the referral – refhub');
        // The page never repeats the file's name, and nothing was stored.
        expect(cheerio.load(res.body)('main').text()).not.toContain(file.name);
        expect(await apiFiles(t, session.referralId)).toEqual([]);
        expect(await versionOf(t, session.referralId)).toBe(version);
      },
    );

    it('says a file is too large, naming the limit, and takes one of exactly the limit', async () => {
      const session = await newFormSession(t);
      const large = await postFile(t, session, {
        name: 'scan.txt',
        bytes: Buffer.alloc(1024 * 1024 + 1, 'a'),
      });
      expect(large.statusCode).toBe(413);
      expectSecurityHeaders(large);
      expect(uploadErrorOf(large.body).byInput).toBe(
        'The file is larger than 1 MB, the most a file may be. Make it smaller (scan it at a lower ' +
          'resolution, or save the PDF at a smaller size) and attach it again.',
      );
      expect(await apiFiles(t, session.referralId)).toEqual([]);
      const exact = await postFile(t, session, { name: 'scan.txt', bytes: Buffer.alloc(1024 * 1024, 'a') });
      expect(exact.statusCode, exact.body.slice(0, 300)).toBe(303);
      expect(await apiFiles(t, session.referralId)).toHaveLength(1);
    });

    it('asks for a file when none was chosen', async () => {
      const session = await newFormSession(t);
      const res = await postFile(t, session, null);
      expect(res.statusCode).toBe(400);
      expect(uploadErrorOf(res.body).byInput).toBe('Choose a file to attach.');
      expect(await apiFiles(t, session.referralId)).toEqual([]);
    });

    it('refuses a file past the referral’s count, saying how many it holds', async () => {
      const session = await newFormSession(t);
      for (const n of [1, 2, 3]) await attach(t, session, { name: `scan-${n}.png`, bytes: PNG });
      const res = await postFile(t, session, { name: 'scan-4.png', bytes: PNG });
      expect(res.statusCode).toBe(409);
      expect(uploadErrorOf(res.body).byInput).toBe(
        'This referral already has 3 files, the most it can hold. Remove one to attach another.',
      );
      expect(filesOf(res.body)).toHaveLength(3);
      expect(await apiFiles(t, session.referralId)).toHaveLength(3);
    });

    it('answers a post the upload form would not send with a page, and stores nothing', async () => {
      const session = await newFormSession(t);
      const csrf = cheerio
        .load((await getPage(t, session)).body)('form.upload input[name=_csrf]')
        .attr('value')!;
      const file = { name: 'scan.png', bytes: PNG };
      for (const parts of [
        [
          { name: '_csrf', value: csrf },
          { name: 'file', file },
          { name: 'file', file },
        ],
        [
          { name: '_csrf', value: csrf },
          { name: 'intent', value: 'save' },
          { name: 'file', file },
        ],
        [
          { name: '_csrf', value: csrf },
          { name: 'other', file },
        ],
        [{ name: '_csrf', value: csrf }],
      ]) {
        const res = await postFile(t, session, null, { parts });
        expect(res.statusCode).toBe(400);
        expect(h1Of(res.body)).toBe('The form could not be read');
        expectSecurityHeaders(res);
      }
      const urlencoded = await t.app.inject({
        method: 'POST',
        url: `/form/${session.referralId}/attachments`,
        headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ _csrf: csrf, file: 'scan.png' }).toString(),
      });
      expect(urlencoded.statusCode).toBe(400);
      expect(await apiFiles(t, session.referralId)).toEqual([]);
    });

    it('keeps multipart to the upload: the referral’s own form still refuses it', async () => {
      const session = await newFormSession(t);
      const { contentType, payload } = multipartBody([
        { name: '_csrf', value: await uploadTokenOf(t, session) },
        { name: 'intent', value: 'save' },
      ]);
      const res = await t.app.inject({
        method: 'POST',
        url: `/form/${session.referralId}`,
        headers: { cookie: session.cookie, 'content-type': contentType },
        payload,
      });
      expect(res.statusCode).toBe(415);
      expect(h1Of(res.body)).toBe('The form could not be read');
    });
  });

  describe('removing', () => {
    it('removes a file from a draft and says so', async () => {
      const session = await newFormSession(t);
      const id = await attach(t, session, { name: 'notes.txt', bytes: TEXT });
      const res = await removeFile(t, session, id);
      expect(res.statusCode, res.body.slice(0, 300)).toBe(303);
      expect(res.headers.location).toBe(`/form/${session.referralId}?removed=1`);
      const page = await getPage(t, session, String(res.headers.location));
      expect(bannerOf(page.body)).toBe('File removed');
      expect(filesOf(page.body)).toEqual([]);
      expect(await apiFiles(t, session.referralId)).toEqual([]);
      const again = await removeFile(t, session, id, {
        action: `/form/${session.referralId}/attachments/${id}/remove`,
      });
      expect(again.statusCode).toBe(404);
      expect(errorSummaryOf(again.body).map((e) => e.text)).toEqual([
        'That file is no longer attached: it was removed already, perhaps in another tab.',
      ]);
      const malformed = await removeFile(t, session, id, {
        action: `/form/${session.referralId}/attachments/not-a-file/remove`,
      });
      expect(malformed.statusCode).toBe(404);
      expect(h1Of(malformed.body)).toBe('This file is not available');
    });

    it('offers no remove once submitted, keeps the file when a page drawn earlier asks, and still attaches when asked to act', async () => {
      const session = await newFormSession(t);
      const id = await attach(t, session, { name: 'notes.txt', bytes: TEXT });
      const removeAction = `/form/${session.referralId}/attachments/${id}/remove`;
      const token = await uploadTokenOf(t, session);
      await submit(t, session.referralId);
      // Submitted and waiting for the provider: the form is closed to the sender, and so are its files.
      const closed = await removeFile(t, session, id, { action: removeAction, csrf: token });
      expect(closed.statusCode).toBe(409);
      expect(h1Of(closed.body)).toBe('This referral can no longer be changed here');
      const { contentType, payload } = multipartBody([
        { name: '_csrf', value: token },
        { name: 'file', file: { name: 'late.txt', bytes: TEXT } },
      ]);
      const late = await t.app.inject({
        method: 'POST',
        url: `/form/${session.referralId}/attachments`,
        headers: { cookie: session.cookie, 'content-type': contentType, ...OWN_PAGE_HEADERS },
        payload,
      });
      expect(late.statusCode).toBe(409);
      expect(h1Of(late.body)).toBe('This referral can no longer be changed here');
      expect(await apiFiles(t, session.referralId)).toHaveLength(1);

      await call(t, t.provider, 'POST', `/api/v1/referrals/${session.referralId}/request-action`, {
        reason: 'Please attach the latest ECG.',
      });
      const respond = await redeem(t, (await linksOf(t, session.referralId)).respond!);
      const page = await getPage(t, respond);
      const [listed] = filesOf(page.body);
      expect(listed).toMatchObject({ id, removeAction: undefined, state: 'Available (not scanned)' });
      expect(cheerio.load(page.body)('#section-files').parent().text()).toContain(
        'Files stay with the referral once it has been submitted: the provider may already have them.',
      );
      const refused = await removeFile(t, respond, id, { action: removeAction });
      expect(refused.statusCode).toBe(409);
      expect(errorSummaryOf(refused.body).map((e) => e.text)).toEqual([
        'Files cannot be removed once the referral has been submitted: the provider may already have them.',
      ]);
      expect(await apiFiles(t, session.referralId)).toHaveLength(1);

      // Asked to act, the sender may attach, and not remove: past the count it is told so.
      await attach(t, respond, { name: 'ecg.png', bytes: PNG });
      expect(await apiFiles(t, session.referralId)).toHaveLength(2);
    });
  });

  describe('downloading', () => {
    it('downloads a file of the session’s own referral, with the API’s headers', async () => {
      const session = await newFormSession(t);
      const name = '心電図 "12-lead".txt';
      const id = await attach(t, session, { name, bytes: TEXT });
      const res = await getPage(t, session, `/form/${session.referralId}/attachments/${id}`);
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload.equals(TEXT)).toBe(true);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.headers['content-length']).toBe(String(TEXT.length));
      expect(res.headers['content-disposition']).toMatch(/^attachment; filename="/);
      // Chromium sends `"` in a file name as %22, and the name is kept as it arrived.
      expect(res.headers['content-disposition']).toContain(
        `filename*=UTF-8''${encodeURIComponent('心電図 %2212-lead%22.txt')}`,
      );
      expect(res.headers['content-digest']).toBe(
        `sha-256=:${createHash('sha256').update(TEXT).digest('base64')}:`,
      );
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    });

    it('refuses a file of another referral, through another session or this one', async () => {
      const mine = await newFormSession(t);
      const theirs = await newFormSession(t);
      const theirFile = await attach(t, theirs, { name: 'theirs.txt', bytes: TEXT });
      // This browser holds no session for their referral.
      const other = await getPage(t, mine, `/form/${theirs.referralId}/attachments/${theirFile}`);
      expect(other.statusCode).toBe(403);
      expect(h1Of(other.body)).toBe('Your session for this referral has ended');
      // Their file under this referral's path is no file of this referral.
      const crossed = await getPage(t, mine, `/form/${mine.referralId}/attachments/${theirFile}`);
      expect(crossed.statusCode).toBe(404);
      expect(h1Of(crossed.body)).toBe('This file is not available');
      expect(crossed.headers['content-type']).toBe('text/html; charset=utf-8');
      expectSecurityHeaders(crossed);
      const malformed = await getPage(t, mine, `/form/${mine.referralId}/attachments/not-a-file`);
      expect(malformed.statusCode).toBe(404);
      expect(h1Of(malformed.body)).toBe('This file is not available');
      // The form's session is not the view page's.
      const otherPage = await getPage(t, mine, `/view/${mine.referralId}/attachments/${theirFile}`);
      expect(otherPage.statusCode).toBe(403);
    });

    it('refuses a download another site starts, before it is audited', async () => {
      const session = await newFormSession(t);
      const id = await attach(t, session, { name: 'notes.txt', bytes: TEXT });
      const url = `/form/${session.referralId}/attachments/${id}`;
      for (const site of ['cross-site', 'same-site']) {
        const res = await t.app.inject({
          method: 'GET',
          url,
          headers: { cookie: session.cookie, 'sec-fetch-site': site },
        });
        expect(res.statusCode).toBe(403);
        expect(h1Of(res.body)).toBe('This file opens only from its referral’s page');
      }
      const reads = await t.ctx.db
        .selectFrom('audit_events')
        .select(['action', 'referral_ids'])
        .where('action', '=', 'referral.read-attachment-content')
        .execute();
      expect(reads.filter((r) => JSON.stringify(r.referral_ids).includes(session.referralId))).toEqual([]);
      const own = await t.app.inject({
        method: 'GET',
        url,
        headers: { cookie: session.cookie, 'sec-fetch-site': 'same-origin' },
      });
      expect(own.statusCode).toBe(200);
    });
  });

  describe('the view and print pages', () => {
    it('list the files for either side, with download links on the view page only', async () => {
      const session = await newFormSession(t);
      const id = await attach(t, session, { name: 'ecg-report.pdf', bytes: LETTER });
      await submit(t, session.referralId);
      for (const who of [t.sender, t.provider]) {
        const links = await linksOf(t, session.referralId, who);
        const view = await redeem(t, links.view!);
        const viewPage = await getPage(t, view);
        expect(viewPage.statusCode).toBe(200);
        const [listed] = filesOf(viewPage.body);
        expect(listed).toMatchObject({
          id,
          name: 'ecg-report.pdf',
          state: 'Available (not scanned)',
          href: `/view/${session.referralId}/attachments/${id}`,
          removeAction: undefined,
        });
        expect(listed!.details).toMatch(
          new RegExp(
            `^PDF, ${LETTER.length} bytes\\. Added ${LOCAL_TIME.source} by Bukit Timah Family Clinic\\.$`,
          ),
        );
        const download = await getPage(t, view, listed!.href);
        expect(download.statusCode).toBe(200);
        expect(download.rawPayload.equals(LETTER)).toBe(true);
        expect(download.headers['content-type']).toBe('application/pdf');

        const print = await redeem(t, links.print!);
        const printPage = await getPage(t, print);
        expect(filesOf(printPage.body)).toEqual([{ ...listed, href: undefined }]);
        // The print session downloads nothing: paper has no links.
        expect((await getPage(t, print, `/view/${session.referralId}/attachments/${id}`)).statusCode).toBe(
          403,
        );
      }
    });

    it('say so when no file is attached', async () => {
      const session = await newFormSession(t);
      await submit(t, session.referralId);
      const view = await redeem(t, (await linksOf(t, session.referralId)).view!);
      const $ = cheerio.load((await getPage(t, view)).body);
      expect($('.files-card').text()).toContain('No files are attached.');
    });
  });

  describe('the session and CSRF checks', () => {
    let session: WebSession;
    beforeAll(async () => {
      session = await newFormSession(t);
    });
    const file = { name: 'forged.txt', bytes: TEXT };

    const refused = async (res: Promise<LightMyRequestResponse>) => {
      const version = await versionOf(t, session.referralId);
      const answer = await res;
      expect(answer.statusCode).toBe(403);
      expectSecurityHeaders(answer);
      expect(await versionOf(t, session.referralId)).toBe(version);
      expect(await apiFiles(t, session.referralId)).toEqual([]);
      return h1Of(answer.body);
    };

    it('refuses an upload without the token, with a wrong one, another session’s, or after the file', async () => {
      const other = await newFormSession(t);
      const otherToken = cheerio
        .load((await getPage(t, other)).body)('form.upload input[name=_csrf]')
        .attr('value')!;
      for (const csrf of ['', 'A'.repeat(43), otherToken]) {
        expect(await refused(postFile(t, session, file, { csrf }))).toBe('This form could not be accepted');
      }
      const token = cheerio
        .load((await getPage(t, session)).body)('form.upload input[name=_csrf]')
        .attr('value')!;
      expect(
        await refused(
          postFile(t, session, null, {
            parts: [
              { name: 'file', file },
              { name: '_csrf', value: token },
            ],
          }),
        ),
      ).toBe('This form could not be accepted');
    });

    it('refuses a cross-site upload or removal, and one without a session', async () => {
      for (const headers of [
        { origin: 'https://evil.example' } as Record<string, string>,
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'same-site' },
      ]) {
        expect(await refused(postFile(t, session, file, { headers }))).toBe(
          'This form could not be accepted',
        );
      }
      expect(await refused(postFile(t, session, file, { headers: { cookie: '' } }))).toBe(
        'Your session for this referral has ended',
      );

      const id = await attach(t, session, { name: 'kept.txt', bytes: TEXT });
      for (const options of [
        { headers: { origin: 'https://evil.example' } as Record<string, string> },
        { headers: { 'sec-fetch-site': 'cross-site' } },
        { csrf: '' },
        { headers: { cookie: '' } },
      ]) {
        const res = await removeFile(t, session, id, options);
        expect(res.statusCode).toBe(403);
        expectSecurityHeaders(res);
      }
      expect((await apiFiles(t, session.referralId)).map((f) => f.id)).toEqual([id]);
      await removeFile(t, session, id);
    });
  });

  it('keeps a canary file’s name and content out of every log line', async () => {
    const canaryName = 'CANARY-FILE-NAME-Tan-Ah-Kow.txt';
    const canaryContent = Buffer.from('CANARY-FILE-CONTENT S1234567D Tan Ah Kow\n');
    const session = await newFormSession(t);
    const id = await attach(t, session, { name: canaryName, bytes: canaryContent });
    expect((await getPage(t, session, `/form/${session.referralId}/attachments/${id}`)).statusCode).toBe(200);
    // Refused for its type, its size and its name, and forged.
    await postFile(t, session, { name: 'CANARY-FILE-NAME.gif', bytes: Buffer.concat([GIF, canaryContent]) });
    await postFile(t, session, {
      name: 'CANARY-FILE-NAME-large.txt',
      bytes: Buffer.concat([canaryContent, Buffer.alloc(1024 * 1024, 'a')]),
    });
    await postFile(t, session, { name: 'CANARY-FILE-NAME\u202e.txt', bytes: canaryContent });
    await postFile(t, session, { name: canaryName, bytes: canaryContent }, { csrf: 'forged' });
    await removeFile(t, session, id);
    const logs = t.logs.join('');
    expect(logs).toContain('"route":"/form/:referralId/attachments"');
    expect(logs).not.toContain('CANARY-FILE');
    expect(logs).not.toContain('Tan Ah Kow');
    expect(logs).not.toContain('Tan-Ah-Kow');
  });
});

describe.each(APP_ENGINES)('files waiting for the malware scan, on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine, { env: { ATTACHMENT_SCANNER: 'clamd://127.0.0.1:9' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('shows each scan state in words, and links a file only once it may be opened', async () => {
    const session = await newFormSession(t);
    const page = cheerio.load((await getPage(t, session)).body);
    expect(page('#section-files').parent().find('.card__intro').text()).toContain(
      'Each file is scanned for malware before anyone can open it.',
    );
    const clean = await attach(t, session, { name: 'letter.pdf', bytes: LETTER });
    const infected = await attach(t, session, { name: 'notes.txt', bytes: TEXT });
    const attached = await getPage(t, session, `/form/${session.referralId}?attached=1`);
    expect(bannerOf(attached.body)).toBe(
      'File attached It can be opened once the malware scan finds it clean.',
    );
    expect(filesOf(attached.body).map((f) => [f.name, f.state, f.href])).toEqual([
      ['letter.pdf', 'Waiting for the malware scan', undefined],
      ['notes.txt', 'Waiting for the malware scan', undefined],
    ]);
    const waiting = await getPage(t, session, `/form/${session.referralId}/attachments/${clean}`);
    expect(waiting.statusCode).toBe(409);
    expect(h1Of(waiting.body)).toBe('This file is waiting for its malware scan');

    const repo = attachmentRepository(t.ctx.db);
    const at = t.ctx.clock.now();
    await repo.recordScan(clean, { kind: 'clean' }, at);
    await repo.recordScan(infected, { kind: 'infected', signature: 'Refhub.Test.EICAR' }, at);

    const scanned = await getPage(t, session);
    expect(filesOf(scanned.body).map((f) => [f.name, f.state, f.href])).toEqual([
      ['letter.pdf', 'Available', `/form/${session.referralId}/attachments/${clean}`],
      ['notes.txt', 'Rejected by the malware scan', undefined],
    ]);
    expect(scanned.body).not.toContain('EICAR');
    const ok = await getPage(t, session, `/form/${session.referralId}/attachments/${clean}`);
    expect(ok.statusCode).toBe(200);
    expect(ok.rawPayload.equals(LETTER)).toBe(true);
    const rejected = await getPage(t, session, `/form/${session.referralId}/attachments/${infected}`);
    expect(rejected.statusCode).toBe(410);
    expect(h1Of(rejected.body)).toBe('This file cannot be opened');
    expect(rejected.body).not.toContain('EICAR');
  });
});
