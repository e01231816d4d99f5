// A referral's attachments through the HTTP API, as a clinic system uses them: each accepted type
// uploaded and read back byte for byte with its digest; each refusal with its status and reason, and
// nothing stored; who may attach, read and remove, and when; the scan state guarding the content;
// keyed retries; and the file's name and content kept out of the timeline and the logs.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
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
import { createDraft, referralIn, type ReferralJson } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

const LETTER = pdf(CATALOG, PAGES);
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

interface AttachmentJson {
  id: string;
  referralId: string;
  number: number;
  fileName: string;
  mediaType: string;
  sizeBytes: number;
  sha256: string;
  scanState: string;
  available: boolean;
  scannedAt?: string;
  addedBy: string;
  authorInstitution: { idType: string; id: string; name: string };
  createdAt: string;
}

interface TimelineJson {
  type: string;
  description: string;
}

interface ProblemJson {
  status: number;
  code: string;
  detail: string;
  reason?: string;
  errors?: { path: string; message: string }[];
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const base = (referralId: string) => `/api/v1/referrals/${referralId}/attachments`;

function upload(
  t: TestApp,
  who: TestParty,
  referralId: string,
  bytes: Buffer,
  fileName: string,
  headers: Record<string, string> = {},
) {
  return t.request(who, {
    method: 'POST',
    url: base(referralId),
    query: { ...who.institution, requesterIdentifier: 'dr.tan@example.org' },
    headers: {
      'content-type': 'application/octet-stream',
      'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(fileName)}`,
      ...headers,
    },
    payload: bytes,
  });
}

function read(t: TestApp, who: TestParty, url: string) {
  return t.request(who, {
    method: 'GET',
    url,
    query: { ...who.institution, requesterIdentifier: 'dr.tan@example.org' },
  });
}

async function listed(t: TestApp, who: TestParty, referralId: string): Promise<AttachmentJson[]> {
  const res = await read(t, who, base(referralId));
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ data: AttachmentJson[] }>().data;
}

describe.each(APP_ENGINES)('attachments on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine, { env: { ATTACHMENTS_PER_REFERRAL: '3', ATTACHMENT_MAX_MIB: '1' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['letter.pdf', LETTER, 'application/pdf', 'application/pdf'],
    ['ecg.jpg', JPEG, 'image/jpeg', 'image/jpeg'],
    ['scan.png', PNG, 'image/png', 'image/png'],
    ['scan.tiff', TIFF, 'image/tiff', 'image/tiff'],
    ['心電図 notes.txt', TEXT, 'text/plain', 'text/plain; charset=utf-8'],
    ['letter.docx', DOCX, DOCX_TYPE, DOCX_TYPE],
  ] as const)('keeps %s as %s and hands back the same bytes', async (fileName, bytes, mediaType, served) => {
    const draft = await createDraft(t);
    const res = await upload(t, t.sender, draft.id, bytes, fileName);
    expect(res.statusCode, res.body).toBe(201);
    const added = res.json<AttachmentJson>();
    expect(added).not.toHaveProperty('scannedAt');
    expect(added).toMatchObject({
      referralId: draft.id,
      number: 1,
      fileName,
      mediaType,
      sizeBytes: bytes.length,
      sha256: sha256(bytes),
      // No scanner in this installation: kept, readable, and marked as never scanned.
      scanState: 'not-scanned',
      available: true,
      addedBy: 'sender',
      authorInstitution: { idType: 'hci', id: 'S1234A', name: 'Bukit Timah Family Clinic' },
    });
    expect(res.headers.location).toBe(`${base(draft.id)}/${added.id}`);
    // The answer says the referral's version since: one past the draft's, as nothing else changed it.
    const { referralVersion, ...attachment } = added as AttachmentJson & { referralVersion: number };
    expect(referralVersion).toBe(draft.version + 1);

    expect(await listed(t, t.sender, draft.id)).toEqual([attachment]);
    const meta = await read(t, t.sender, `${base(draft.id)}/${added.id}`);
    expect(meta.json()).toEqual(attachment);

    const content = await read(t, t.sender, `${base(draft.id)}/${added.id}/content`);
    expect(content.statusCode).toBe(200);
    expect(content.rawPayload.equals(bytes)).toBe(true);
    expect(content.headers['content-type']).toBe(served);
    expect(content.headers['content-length']).toBe(String(bytes.length));
    expect(content.headers['content-digest']).toBe(
      `sha-256=:${createHash('sha256').update(bytes).digest('base64')}:`,
    );
    expect(content.headers.etag).toBe(`"${sha256(bytes)}"`);
    expect(content.headers['x-content-type-options']).toBe('nosniff');
    expect(content.headers['content-disposition']).toContain(
      `filename*=UTF-8''${encodeURIComponent(fileName)}`,
    );
  });

  it('changes the referral: a new version and a timeline sentence that names the type and size, not the file', async () => {
    const draft = await createDraft(t);
    const res = await upload(t, t.sender, draft.id, LETTER, 'Tan Ah Kow referral.pdf');
    expect(res.statusCode).toBe(201);
    const after = (await read(t, t.sender, `/api/v1/referrals/${draft.id}`)).json<
      ReferralJson & { timelineEvents: TimelineJson[]; allowedActions: string[] }
    >();
    expect(after.version).toBe(draft.version + 1);
    const event = after.timelineEvents.at(-1);
    expect(event).toMatchObject({
      type: 'referral.attachment-added',
      description: `Bukit Timah Family Clinic attached a file (PDF, ${LETTER.length} bytes).`,
    });
    expect(JSON.stringify(after.timelineEvents)).not.toContain('Tan Ah Kow');
    expect(after.allowedActions).toContain('add-attachment');
  });

  it('numbers a referral’s files in order and refuses one past the limit', async () => {
    const draft = await createDraft(t);
    for (const n of [1, 2, 3]) {
      const res = await upload(t, t.sender, draft.id, PNG, `scan-${n}.png`);
      expect(res.json()).toMatchObject({ number: n });
    }
    const fourth = await upload(t, t.sender, draft.id, PNG, 'scan-4.png');
    expect(fourth.statusCode).toBe(409);
    expect(fourth.json()).toMatchObject({
      code: 'limit_exceeded',
      detail: 'A referral can have at most 3 attachments.',
    });
    expect(await listed(t, t.sender, draft.id)).toHaveLength(3);
  });

  it('keeps the limit and numbers without gaps when uploads race', async () => {
    const draft = await createDraft(t);
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, n) => upload(t, t.sender, draft.id, PNG, `race-${n}.png`)),
    );
    // Each upload is a compare-and-set on the referral's version: a loser reads again and counts again.
    // Three wins at most: a loser loses to each of them once before it counts three and is refused.
    expect(answers.map((res) => res.statusCode).sort()).toEqual([201, 201, 201, 409, 409]);
    for (const res of answers.filter((r) => r.statusCode === 409))
      expect(res.json()).toMatchObject({ code: 'limit_exceeded' });
    expect((await listed(t, t.sender, draft.id)).map((a) => a.number)).toEqual([1, 2, 3]);
  });

  describe('refusals', () => {
    let draft: ReferralJson;
    beforeAll(async () => {
      draft = await createDraft(t);
    });

    it.each([
      ['an empty file', Buffer.alloc(0), 'empty.txt', {}, 400, 'empty-file'],
      ['a type not accepted', GIF, 'image.gif', {}, 415, 'type-not-accepted'],
      ['a name whose extension the bytes contradict', PNG, 'report.pdf', {}, 415, 'type-mismatch'],
      [
        'a declared type the bytes contradict',
        PNG,
        'scan',
        { 'content-type': 'application/pdf' },
        415,
        'type-mismatch',
      ],
      [
        'a PDF with JavaScript',
        pdf(CATALOG, '<< /S /JavaScript /JS (app.alert(1)) >>'),
        'letter.pdf',
        {},
        400,
        'pdf-active-content',
      ],
      [
        'a PDF with an embedded file',
        pdf(CATALOG, '<< /Type /EmbeddedFile >>'),
        'letter.pdf',
        {},
        400,
        'pdf-active-content',
      ],
    ] as const)('refuses %s', async (_label, bytes, fileName, headers, status, reason) => {
      const res = await upload(t, t.sender, draft.id, bytes, fileName, headers);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ code: 'attachment_refused', reason, status });
      expect(res.json<ProblemJson>().errors).toEqual([
        { path: 'body', message: res.json<ProblemJson>().detail },
      ]);
      expect(await listed(t, t.sender, draft.id)).toEqual([]);
    });

    it.each(Object.entries(HIDDEN_ACTIVE_CONTENT))('refuses %s, storing nothing', async (_label, bytes) => {
      const res = await upload(t, t.sender, draft.id, bytes, 'letter.pdf');
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ code: 'attachment_refused', reason: 'pdf-active-content' });
      expect(await listed(t, t.sender, draft.id)).toEqual([]);
    });

    it.each([
      ['a path', 'attachment; filename="../../etc/passwd.txt"', 'The file name holds a path'],
      ['control characters', `attachment; filename*=UTF-8''a%0Ab.txt`, 'control or direction characters'],
      ['a direction override', `attachment; filename*=UTF-8''evil%E2%80%AEtxt.exe`, 'direction characters'],
      ['no name', 'attachment', 'names no file'],
      ['a malformed header', 'attachment filename=notes.txt', 'not well-formed'],
    ])('refuses a file name with %s, naming the header', async (_label, disposition, words) => {
      const res = await upload(t, t.sender, draft.id, TEXT, 'x.txt', { 'content-disposition': disposition });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ code: 'attachment_refused', reason: 'file-name' });
      expect(res.json<ProblemJson>().detail).toContain(words);
      expect(res.json<ProblemJson>().errors?.[0]?.path).toBe('header.Content-Disposition');
      expect(await listed(t, t.sender, draft.id)).toEqual([]);
    });

    it('refuses an upload without Content-Disposition', async () => {
      const res = await t.request(t.sender, {
        method: 'POST',
        url: base(draft.id),
        query: { ...t.sender.institution },
        headers: { 'content-type': 'text/plain' },
        payload: TEXT,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'validation_failed' });
      expect(res.json<ProblemJson>().errors).toEqual([
        { path: 'header.Content-Disposition', message: 'is required' },
      ]);
    });

    it('refuses a file past the size limit with 413, saying the limit', async () => {
      const res = await upload(t, t.sender, draft.id, Buffer.alloc(1024 * 1024 + 1, 'a'), 'big.txt');
      expect(res.statusCode).toBe(413);
      expect(res.json()).toMatchObject({
        code: 'payload_too_large',
        detail: 'The request body is larger than 1 MiB.',
      });
      // A file of exactly the limit is taken.
      const exact = await upload(t, t.sender, draft.id, Buffer.alloc(1024 * 1024, 'a'), 'big.txt');
      expect(exact.statusCode, exact.body).toBe(201);
      await t.request(t.sender, {
        method: 'DELETE',
        url: `${base(draft.id)}/${exact.json<AttachmentJson>().id}`,
        query: { ...t.sender.institution },
      });
    });

    it('takes a body of no declared length (chunked) within the limit, and refuses one past it', async () => {
      const send = (bytes: Buffer) =>
        t.request(t.sender, {
          method: 'POST',
          url: base(draft.id),
          query: { ...t.sender.institution },
          headers: { 'content-type': 'text/plain', 'content-disposition': 'attachment; filename="big.txt"' },
          payload: Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]),
        });
      const taken = await send(Buffer.alloc(300_000, 'a'));
      expect(taken.statusCode, taken.body).toBe(201);
      const refused = await send(Buffer.alloc(1024 * 1024 + 1, 'a'));
      expect(refused.statusCode).toBe(413);
      expect(refused.json<ProblemJson>().code).toBe('payload_too_large');
      await t.request(t.sender, {
        method: 'DELETE',
        url: `${base(draft.id)}/${taken.json<AttachmentJson>().id}`,
        query: { ...t.sender.institution },
      });
    });

    it('refuses a body shorter than its Content-Length says', async () => {
      const res = await upload(t, t.sender, draft.id, TEXT, 'notes.txt', {
        'content-length': String(TEXT.length + 10),
      });
      expect(res.statusCode).toBe(400);
      expect(res.json<ProblemJson>()).toMatchObject({ code: 'bad_request' });
      expect(await listed(t, t.sender, draft.id)).toEqual([]);
    });

    it('keeps JSON bodies of other routes to their own limit', async () => {
      const res = await t.request(t.sender, {
        method: 'POST',
        url: `/api/v1/referrals/${draft.id}/notes`,
        payload: { ...t.sender.institution, content: 'x'.repeat(300 * 1024) },
      });
      expect(res.statusCode).toBe(413);
      expect(res.json<ProblemJson>().detail).toBe('The request body is larger than 256 KiB.');
    });
  });

  describe('who may attach, read and remove', () => {
    it('hides a referral’s files from other institutions, and a draft’s from its provider', async () => {
      const draft = await createDraft(t);
      const added = (await upload(t, t.sender, draft.id, TEXT, 'notes.txt')).json<AttachmentJson>();
      for (const who of [t.otherSender, t.provider, t.otherProvider]) {
        for (const url of [
          base(draft.id),
          `${base(draft.id)}/${added.id}`,
          `${base(draft.id)}/${added.id}/content`,
        ]) {
          const res = await read(t, who, url);
          expect(res.statusCode, `${url}: ${res.body}`).toBe(404);
          expect(res.json<ProblemJson>().code).toBe('referral_not_found');
        }
        const res = await upload(t, who, draft.id, TEXT, 'notes.txt');
        expect(res.statusCode).toBe(404);
      }
      const ops = await t.request(t.ops, {
        method: 'GET',
        url: base(draft.id),
        query: { ...t.sender.institution },
      });
      expect(ops.statusCode).toBe(403);
    });

    it('lets the provider read the sender’s files once submitted, and attach once it accepted', async () => {
      const referral = await createDraft(t);
      const added = (await upload(t, t.sender, referral.id, TEXT, 'notes.txt')).json<AttachmentJson>();
      const submitted = await referralIn(t, 'pending-acceptance');
      // The sender's own files of a submitted referral stay; it may add no more until asked.
      const late = await upload(t, t.sender, submitted.id, TEXT, 'late.txt');
      expect(late.statusCode).toBe(409);
      expect(late.json()).toMatchObject({ code: 'invalid_transition', reason: 'not-in-status' });
      const early = await upload(t, t.provider, submitted.id, TEXT, 'reply.txt');
      expect(early.statusCode).toBe(409);

      await t.request(t.sender, {
        method: 'POST',
        url: `/api/v1/referrals/${referral.id}/submit`,
        payload: { ...t.sender.institution },
      });
      const content = await read(t, t.provider, `${base(referral.id)}/${added.id}/content`);
      expect(content.statusCode).toBe(200);
      expect(content.rawPayload.equals(TEXT)).toBe(true);

      const accepted = await referralIn(t, 'accepted');
      const reply = await upload(t, t.provider, accepted.id, LETTER, 'consultation.pdf');
      expect(reply.statusCode, reply.body).toBe(201);
      expect(reply.json()).toMatchObject({
        addedBy: 'provider',
        authorInstitution: { id: 'S9001Z', name: 'Central General Hospital' },
      });
      expect(
        (await read(t, t.sender, `${base(accepted.id)}/${reply.json<AttachmentJson>().id}/content`))
          .statusCode,
      ).toBe(200);
    });

    it('lets the sender remove a file from a draft only', async () => {
      const draft = await createDraft(t);
      const added = (await upload(t, t.sender, draft.id, TEXT, 'notes.txt')).json<AttachmentJson>();
      const url = `${base(draft.id)}/${added.id}`;
      const removed = await t.request(t.sender, {
        method: 'DELETE',
        url,
        query: { ...t.sender.institution },
      });
      expect(removed.statusCode, removed.body).toBe(200);
      // The attachment as it was; the upload's answer alone says the referral's version since.
      expect(removed.json()).toEqual(
        Object.fromEntries(Object.entries(added).filter(([field]) => field !== 'referralVersion')),
      );
      expect((await read(t, t.sender, url)).json<ProblemJson>().code).toBe('attachment_not_found');
      expect((await read(t, t.sender, `${url}/content`)).statusCode).toBe(404);
      const again = await t.request(t.sender, { method: 'DELETE', url, query: { ...t.sender.institution } });
      expect(again.statusCode).toBe(404);
      const after = (await read(t, t.sender, `/api/v1/referrals/${draft.id}`)).json<{
        timelineEvents: TimelineJson[];
      }>();
      expect(after.timelineEvents.at(-1)).toMatchObject({
        type: 'referral.attachment-removed',
        description: `Bukit Timah Family Clinic removed a file (plain text, ${TEXT.length} bytes).`,
      });

      const submitted = await createDraft(t);
      const kept = (await upload(t, t.sender, submitted.id, TEXT, 'notes.txt')).json<AttachmentJson>();
      await t.request(t.sender, {
        method: 'POST',
        url: `/api/v1/referrals/${submitted.id}/submit`,
        payload: { ...t.sender.institution },
      });
      const refused = await t.request(t.sender, {
        method: 'DELETE',
        url: `${base(submitted.id)}/${kept.id}`,
        query: { ...t.sender.institution },
      });
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toMatchObject({ code: 'invalid_transition', reason: 'not-in-status' });
      const byProvider = await t.request(t.provider, {
        method: 'DELETE',
        url: `${base(submitted.id)}/${kept.id}`,
        query: { ...t.provider.institution },
      });
      expect(byProvider.statusCode).toBe(403);
      expect(await listed(t, t.sender, submitted.id)).toHaveLength(1);
    });

    it('honours If-Match, so a file goes with the version the client read', async () => {
      const draft = await createDraft(t);
      const stale = await upload(t, t.sender, draft.id, TEXT, 'notes.txt', {
        'if-match': `W/"${draft.version + 5}"`,
      });
      expect(stale.statusCode).toBe(412);
      const fresh = await upload(t, t.sender, draft.id, TEXT, 'notes.txt', {
        'if-match': `W/"${draft.version}"`,
      });
      expect(fresh.statusCode).toBe(201);
      expect(await listed(t, t.sender, draft.id)).toHaveLength(1);
    });

    it('audits every read of a file, naming the referral', async () => {
      const draft = await createDraft(t);
      const added = (await upload(t, t.sender, draft.id, TEXT, 'notes.txt')).json<AttachmentJson>();
      await read(t, t.sender, base(draft.id));
      await read(t, t.sender, `${base(draft.id)}/${added.id}/content`);
      const rows = await t.ctx.db
        .selectFrom('audit_events')
        .select(['action', 'outcome', 'referral_ids'])
        .where('action', 'like', 'referral.%attachment%')
        .execute();
      const mine = rows.filter((r) => JSON.stringify(r.referral_ids).includes(draft.id));
      expect(mine.map((r) => r.action).sort()).toEqual([
        'referral.add-attachment',
        'referral.read-attachment-content',
        'referral.read-attachments',
      ]);
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the first answer to a retry with the same file, and refuses another file under the key', async () => {
      const draft = await createDraft(t);
      const key = `upload-${draft.id}`;
      const first = await upload(t, t.sender, draft.id, PNG, 'scan.png', { 'idempotency-key': key });
      const retry = await upload(t, t.sender, draft.id, PNG, 'scan.png', { 'idempotency-key': key });
      expect(first.statusCode).toBe(201);
      expect(retry.statusCode).toBe(201);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.json()).toEqual(first.json());
      expect(retry.headers.location).toBe(first.headers.location);
      expect(await listed(t, t.sender, draft.id)).toHaveLength(1);

      const other = await upload(t, t.sender, draft.id, JPEG, 'scan.png', { 'idempotency-key': key });
      expect(other.statusCode).toBe(422);
      const renamed = await upload(t, t.sender, draft.id, PNG, 'other.png', { 'idempotency-key': key });
      expect(renamed.statusCode).toBe(422);
    });
  });

  describe('the scan guards the content', () => {
    it('answers 409 while a file waits for its scan, 410 once rejected, and the bytes once clean', async () => {
      const scanned = await createTestApp(engine, { env: { ATTACHMENT_SCANNER: 'clamd://127.0.0.1:9' } });
      try {
        const draft = await createDraft(scanned);
        const clean = (
          await upload(scanned, scanned.sender, draft.id, LETTER, 'letter.pdf')
        ).json<AttachmentJson>();
        const infected = (
          await upload(scanned, scanned.sender, draft.id, TEXT, 'notes.txt')
        ).json<AttachmentJson>();
        expect(clean).toMatchObject({ scanState: 'pending-scan', available: false });
        expect(clean).not.toHaveProperty('scannedAt');

        const waiting = await read(scanned, scanned.sender, `${base(draft.id)}/${clean.id}/content`);
        expect(waiting.statusCode).toBe(409);
        expect(waiting.json()).toMatchObject({ code: 'attachment_pending_scan' });
        expect(waiting.headers['retry-after']).toBe('5');
        // The upload left the scan to the outbox, in the same statement.
        const rows = await scanned.ctx.db
          .selectFrom('outbox')
          .select(['topic', 'referral_id'])
          .where('referral_id', '=', draft.id)
          .execute();
        expect(rows).toEqual([
          { topic: 'attachment-scan', referral_id: draft.id },
          { topic: 'attachment-scan', referral_id: draft.id },
        ]);

        const repo = attachmentRepository(scanned.ctx.db);
        const at = scanned.ctx.clock.now();
        await repo.recordScan(clean.id, { kind: 'clean' }, at);
        await repo.recordScan(infected.id, { kind: 'infected', signature: 'Refhub.Test.EICAR' }, at);

        const ok = await read(scanned, scanned.sender, `${base(draft.id)}/${clean.id}/content`);
        expect(ok.statusCode).toBe(200);
        expect(ok.rawPayload.equals(LETTER)).toBe(true);
        const gone = await read(scanned, scanned.sender, `${base(draft.id)}/${infected.id}/content`);
        expect(gone.statusCode).toBe(410);
        expect(gone.json()).toMatchObject({ code: 'attachment_rejected' });
        const meta = (
          await read(scanned, scanned.sender, `${base(draft.id)}/${infected.id}`)
        ).json<AttachmentJson>();
        expect(meta).toMatchObject({ scanState: 'rejected', available: false, scannedAt: at.toISOString() });
        // The signature is kept for operators, never handed to clients.
        expect(JSON.stringify(meta)).not.toContain('EICAR');
      } finally {
        await scanned.close();
      }
    });
  });

  describe('where qpdf is missing', () => {
    it('refuses every PDF with 415, storing nothing, and still takes the other types', async () => {
      const unchecked = await createTestApp(engine, { env: { QPDF_PATH: '/nonexistent/bin/qpdf' } });
      try {
        const draft = await createDraft(unchecked);
        const refused = await upload(unchecked, unchecked.sender, draft.id, LETTER, 'letter.pdf');
        expect(refused.statusCode, refused.body).toBe(415);
        expect(refused.json()).toMatchObject({ code: 'attachment_refused', reason: 'pdf-not-checked' });
        expect(await listed(unchecked, unchecked.sender, draft.id)).toEqual([]);
        const png = await upload(unchecked, unchecked.sender, draft.id, PNG, 'scan.png');
        expect(png.statusCode, png.body).toBe(201);
      } finally {
        await unchecked.close();
      }
    });
  });

  it('keeps a canary file’s name and content out of every log line', async () => {
    const canaryName = 'CANARY-FILE-NAME-Tan-Ah-Kow.txt';
    const canaryContent = Buffer.from('CANARY-FILE-CONTENT S1234567D Tan Ah Kow\n');
    const draft = await createDraft(t);
    const added = (await upload(t, t.sender, draft.id, canaryContent, canaryName)).json<AttachmentJson>();
    await read(t, t.sender, `${base(draft.id)}/${added.id}/content`);
    await upload(t, t.sender, draft.id, Buffer.concat([canaryContent, GIF]), 'CANARY-FILE-NAME.gif');
    await upload(t, t.sender, draft.id, canaryContent, 'CANARY-FILE-NAME/../x.txt');
    // A PDF refused for what it holds, and one that cannot be read, each with the canary in it.
    const canaryPdf = pdf(
      '<< /Type /Catalog /Pages 2 0 R /OpenAction 3 0 R /CANARY-PDF-NAME (Tan Ah Kow) >>',
      PAGES,
      '<< /S /JavaScript /JS (CANARY-PDF-SCRIPT S1234567D) >>',
    );
    for (const bytes of [canaryPdf, canaryPdf.subarray(0, canaryPdf.indexOf('xref'))]) {
      const res = await upload(t, t.sender, draft.id, bytes, 'CANARY-FILE-NAME.pdf');
      expect(res.statusCode, res.body).toBe(400);
      expect(res.body).not.toMatch(/CANARY|Tan Ah Kow|S1234567D/);
    }
    const logs = t.logs.join('');
    expect(logs).not.toContain('CANARY-PDF');
    expect(logs).not.toContain('CANARY-FILE');
    expect(logs).not.toContain('Tan Ah Kow');
  });
});
