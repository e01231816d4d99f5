// The room uploads take in an API process (api/upload-budget.ts, docs/attachments.md "Storage"), seen
// from clients on real connections: one institution's slow upload does not hold up another's; each
// credential and each institution stays within its share; an upload that finds no room within its
// wait is answered 503 with Retry-After and nothing of it is stored; a client that goes away gives its
// room back; and the web form's uploads share the same room and rules.
import { PassThrough } from 'node:stream';
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../support/engines.ts';
import { PATIENT } from '../support/fixtures/patients.ts';
import { rawRequest, uploadHead, type RawRequest } from '../support/raw-http.ts';
import { createDraft, type ReferralJson } from '../support/scenarios.ts';
import { countRows } from '../support/store-inspection.ts';
import { createTestApp, listeningUrl, type TestApp, type TestParty } from '../support/test-app.ts';
import { getPage, newFormSession, OWN_PAGE_HEADERS, postFile } from '../support/web.ts';

const MIB = 1024 * 1024;

async function uploadBytesInFlight(t: TestApp): Promise<number> {
  const metric = await t.ctx.metrics.registry.getSingleMetric('refhub_upload_bytes_in_flight')?.get();
  return metric?.values[0]?.value ?? 0;
}

async function uploadsWaiting(t: TestApp): Promise<number> {
  const metric = await t.ctx.metrics.registry.getSingleMetric('refhub_uploads_waiting')?.get();
  return metric?.values[0]?.value ?? 0;
}

async function refused(t: TestApp, reason: string): Promise<number> {
  const metric = await t.ctx.metrics.registry.getSingleMetric('refhub_uploads_refused_total')?.get();
  return metric?.values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

const attachmentsPath = (referralId: string, who: TestParty) =>
  `/api/v1/referrals/${referralId}/attachments?${new URLSearchParams({ ...who.institution }).toString()}`;

/** A draft of `who` (a sender) to one of the demo catalog's offerings. */
async function draftOf(t: TestApp, who: TestParty): Promise<ReferralJson> {
  if (who.institution.institutionId === t.sender.institution.institutionId) return createDraft(t);
  const res = await t.request(who, {
    method: 'POST',
    url: '/api/v1/referrals',
    payload: { ...who.institution, offeringId: 'erh-cardio', ...PATIENT },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<ReferralJson>();
}

/** A small upload by a real HTTP client, with its whole body at once. */
async function send(
  base: string,
  who: TestParty,
  referralId: string,
  bytes: Buffer,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${base}${attachmentsPath(referralId, who)}`, {
    method: 'POST',
    headers: {
      authorization: `ApiKey ${who.key}`,
      'content-type': 'text/plain',
      'content-disposition': 'attachment; filename="note.txt"',
      ...headers,
    },
    body: bytes,
  });
  return {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: (await res.json()) as Record<string, unknown>,
  };
}

/**
 * An upload that declares `declared` bytes and trickles them, a byte every `everyMs`, until the test
 * sends the rest or closes it: a clinic's system on a very slow link.
 */
async function trickle(
  port: number,
  who: TestParty,
  referralId: string,
  declared: number,
  everyMs = 200,
): Promise<RawRequest & { finish(): void }> {
  const upload = await rawRequest(
    port,
    uploadHead(attachmentsPath(referralId, who), who.key, { 'Content-Length': String(declared) }),
  );
  let sent = 0;
  const drip = () => {
    if (upload.open && sent < declared - 1) {
      upload.write('a');
      sent += 1;
    }
  };
  drip();
  const timer = setInterval(drip, everyMs);
  void upload.closed.then(() => {
    clearInterval(timer);
  });
  return Object.assign(upload, {
    /** Sends the rest of the body at once. */
    finish() {
      clearInterval(timer);
      upload.write(Buffer.alloc(declared - sent, 'a'));
    },
  });
}

describe.each(APP_ENGINES)('the room for uploads on %s', (engine) => {
  describe('with the default room, and 10 seconds for a request', () => {
    const REQUEST_TIMEOUT_S = 10;
    let t: TestApp;
    let base: string;
    let port: number;
    beforeAll(async () => {
      t = await createTestApp(engine, { env: { HTTP_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S) } });
      base = await listeningUrl(t);
      port = Number(new URL(base).port);
    });
    afterAll(async () => {
      await t.close();
    });

    it('answers another institution’s 1 KB upload while one institution’s 10 MiB upload trickles', async () => {
      const slowDraft = await draftOf(t, t.sender);
      const quickDraft = await draftOf(t, t.otherSender);
      const slow = await trickle(port, t.sender, slowDraft.id, 10 * MIB);
      // The slow upload is in flight once it holds room for the bytes it has sent.
      await expect
        .poll(() => uploadBytesInFlight(t), { timeout: REQUEST_TIMEOUT_S * 1000 })
        .toBeGreaterThan(0);

      const quick = await send(base, t.otherSender, quickDraft.id, Buffer.alloc(1024, 'b'));
      expect(quick.status, JSON.stringify(quick.body)).toBe(201);
      // …answered while the slow one is still arriving, unanswered, on its open connection.
      expect(slow.answered).toBe(false);
      expect(slow.open).toBe(true);
      // A declared 10 MiB holds only what has arrived, in blocks, not ten (or fifty) MiB before it
      // (once the quick one has given its room back, as its connection closes).
      await expect.poll(() => uploadBytesInFlight(t)).toBe(256 * 1024);

      // The slow upload then sends the rest and is stored too.
      slow.finish();
      expect((await slow.answer).status).toBe(201);
      await expect.poll(() => uploadBytesInFlight(t)).toBe(0);
      slow.destroy();
    });

    it('gives back the room of a client that goes away mid-upload, and stores nothing of it', async () => {
      const draft = await draftOf(t, t.sender);
      const before = await countRows(t, 'attachment_contents');
      const gone = await trickle(port, t.sender, draft.id, 10 * MIB);
      await expect
        .poll(() => uploadBytesInFlight(t), { timeout: REQUEST_TIMEOUT_S * 1000 })
        .toBeGreaterThan(0);
      gone.destroy();
      await expect.poll(() => uploadBytesInFlight(t), { timeout: REQUEST_TIMEOUT_S * 1000 }).toBe(0);
      expect(await countRows(t, 'attachment_contents')).toBe(before);
      // Its claim on the credential's share went with it: a 10 MiB upload of the same key is taken.
      const again = await send(base, t.sender, draft.id, Buffer.alloc(10 * MIB, 'c'));
      expect(again.status, JSON.stringify(again.body)).toBe(201);
    });
  });

  describe('with room for one 1 MiB body arriving, and a wait as long as a request', () => {
    const REQUEST_TIMEOUT_S = 10;
    let t: TestApp;
    let port: number;
    beforeAll(async () => {
      t = await createTestApp(engine, {
        env: {
          ATTACHMENT_MAX_MIB: '1',
          ATTACHMENT_UPLOADS_IN_FLIGHT_MIB: '6',
          ATTACHMENT_UPLOAD_WAIT_MS: String(REQUEST_TIMEOUT_S * 1000),
          HTTP_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S),
        },
      });
      port = Number(new URL(await listeningUrl(t)).port);
    });
    afterAll(async () => {
      await t.close();
    });

    it('lets two bodies that cannot both fit arrive one after the other, not both wait for ever', async () => {
      const drafts = [await draftOf(t, t.sender), await draftOf(t, t.otherSender)];
      const [first, second] = await Promise.all(
        [t.sender, t.otherSender].map((who, i) =>
          rawRequest(
            port,
            uploadHead(attachmentsPath(drafts[i]!.id, who), who.key, { 'Content-Length': String(MIB) }),
          ),
        ),
      );
      // Each sends more than half of its body: both cannot be kept at once.
      first!.write(Buffer.alloc(600 * 1024, 'j'));
      await expect.poll(() => uploadBytesInFlight(t), { timeout: 5000 }).toBe(768 * 1024);
      second!.write(Buffer.alloc(600 * 1024, 'k'));
      // The second is kept waiting rather than given room the first will need…
      await expect.poll(() => uploadsWaiting(t), { timeout: 5000 }).toBe(1);
      expect(await uploadBytesInFlight(t)).toBe(768 * 1024);
      first!.write(Buffer.alloc(MIB - 600 * 1024, 'j'));
      expect((await first!.answer).status).toBe(201);
      // …and takes it once the first has arrived.
      second!.write(Buffer.alloc(MIB - 600 * 1024, 'k'));
      expect((await second!.answer).status).toBe(201);
      expect(await refused(t, 'server')).toBe(0);
      await expect.poll(() => uploadBytesInFlight(t)).toBe(0);
      first!.destroy();
      second!.destroy();
    });
  });

  describe('with shares of 1 MiB and a wait of 300 ms', () => {
    const WAIT_MS = 300;
    let t: TestApp;
    let base: string;
    let port: number;
    /** Another key of the sender's institution. */
    let colleague: TestParty;
    beforeAll(async () => {
      t = await createTestApp(engine, {
        env: {
          ATTACHMENT_MAX_MIB: '1',
          ATTACHMENT_UPLOADS_IN_FLIGHT_MIB: '6',
          ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB: '1',
          ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB: '1',
          ATTACHMENT_UPLOAD_WAIT_MS: String(WAIT_MS),
          HTTP_REQUEST_TIMEOUT_SECONDS: '10',
        },
      });
      base = await listeningUrl(t);
      port = Number(new URL(base).port);
      const { key } = await t.ctx.apiKeys.create({
        system: 'HAS',
        role: 'sender',
        institutions: [{ idType: 'hci', id: t.sender.institution.institutionId }],
        environment: 'test',
      });
      colleague = { key, institution: t.sender.institution };
    });
    afterAll(async () => {
      await t.close();
    });

    const expectBusy = (
      res: Awaited<ReturnType<typeof send>>,
      reason: 'credential-share' | 'institution-share' | 'server-busy',
    ) => {
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).toMatchObject({ status: 503, code: 'uploads_busy', reason });
      expect(JSON.stringify(res.body)).not.toContain('note.txt');
    };

    it('keeps each credential and each institution within its share: 503 with Retry-After, nothing stored', async () => {
      const draft = await draftOf(t, t.sender);
      const otherDraft = await draftOf(t, t.otherSender);
      const rows = await countRows(t, 'attachments');
      // The sender's key claims its whole share (and its institution's) and trickles.
      const slow = await trickle(port, t.sender, draft.id, MIB);
      await expect.poll(() => uploadBytesInFlight(t), { timeout: 5000 }).toBeGreaterThan(0);

      const key = 'f0c3c6a2-6c1e-4b53-9a55-0d7d2b7f4a11';
      expectBusy(
        await send(base, t.sender, draft.id, Buffer.alloc(1024, 'd'), { 'idempotency-key': key }),
        'credential-share',
      );
      expectBusy(await send(base, colleague, draft.id, Buffer.alloc(1024, 'e')), 'institution-share');
      expect(await refused(t, 'credential')).toBe(1);
      expect(await refused(t, 'institution')).toBe(1);
      // Another institution is not held back by either.
      const other = await send(base, t.otherSender, otherDraft.id, Buffer.alloc(1024, 'f'));
      expect(other.status, JSON.stringify(other.body)).toBe(201);
      expect(slow.answered).toBe(false);
      expect(await countRows(t, 'attachments')).toBe(rows + 1);

      // Once the slow one has gone, the refused upload is taken when sent again under its key: the
      // refusal left no trace of the key, so it is carried out, then replayed as usual.
      slow.destroy();
      await expect.poll(() => uploadBytesInFlight(t)).toBe(0);
      const retried = await send(base, t.sender, draft.id, Buffer.alloc(1024, 'd'), {
        'idempotency-key': key,
      });
      expect(retried.status, JSON.stringify(retried.body)).toBe(201);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
      const replayed = await send(base, t.sender, draft.id, Buffer.alloc(1024, 'd'), {
        'idempotency-key': key,
      });
      expect(replayed.status).toBe(201);
      expect(replayed.headers['idempotent-replayed']).toBe('true');
      expect(await countRows(t, 'attachments')).toBe(rows + 2);
      // The log says why, by the room lacked, never the file.
      const lines = t.logs.filter((line) => line.includes('upload refused'));
      expect(lines.length).toBe(2);
      for (const line of lines) expect(line).not.toContain('note.txt');
    });

    it('answers 503 when bodies arriving fill the server’s room, and keeps the room for storing them', async () => {
      const draft = await draftOf(t, t.sender);
      const otherDraft = await draftOf(t, t.otherSender);
      const rows = await countRows(t, 'attachments');
      // Another institution's 1 MiB arrives but its last byte: the room for arriving bodies (6 MiB
      // less five times the largest file) is full.
      const big = await rawRequest(
        port,
        uploadHead(attachmentsPath(otherDraft.id, t.otherSender), t.otherSender.key, {
          'Content-Length': String(MIB),
        }),
      );
      big.write(Buffer.alloc(MIB - 1, 'g'));
      await expect.poll(() => uploadBytesInFlight(t), { timeout: 5000 }).toBe(MIB);

      expectBusy(await send(base, t.sender, draft.id, Buffer.alloc(1024, 'h')), 'server-busy');
      expect(await refused(t, 'server')).toBe(1);
      // The body that has arrived is stored: the room to check and store it was never lent out.
      big.write('g');
      expect((await big.answer).status).toBe(201);
      big.destroy();
      expect(await countRows(t, 'attachments')).toBe(rows + 1);
      await expect.poll(() => uploadBytesInFlight(t)).toBe(0);
      const after = await send(base, t.sender, draft.id, Buffer.alloc(1024, 'h'));
      expect(after.status, JSON.stringify(after.body)).toBe(201);
    });

    it('refuses a key that may not act for the institution before reading its upload', async () => {
      const draft = await draftOf(t, t.sender);
      const upload = await rawRequest(
        port,
        uploadHead(attachmentsPath(draft.id, t.sender).replace('S1234A', 'S2345B'), t.sender.key, {
          'Content-Length': String(MIB),
        }),
      );
      // Nothing of the body is sent: the answer does not wait for it.
      const answer = await upload.answer;
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'institution_not_permitted' });
      expect(await uploadBytesInFlight(t)).toBe(0);
      upload.destroy();
    });

    describe('the web form', () => {
      it('shares the room and the rules: a page with 503 and Retry-After while the key’s share is taken', async () => {
        const session = await newFormSession(t);
        const rows = await countRows(t, 'attachments');
        // The key that made the link holds its share through the API, trickling.
        const slow = await trickle(port, t.sender, session.referralId, MIB);
        await expect.poll(() => uploadBytesInFlight(t), { timeout: 5000 }).toBeGreaterThan(0);

        const file = { name: 'scan.txt', bytes: Buffer.from('Referral letter, page 1\n') };
        const busy = await postFile(t, session, file);
        expect(busy.statusCode).toBe(503);
        expect(busy.headers['retry-after']).toBe('1');
        expect(busy.headers['content-type']).toMatch(/^text\/html/);
        const words = cheerio.load(busy.body)('#field-file-error').text();
        expect(words).toContain('many files are being attached at the same time');
        expect(words).toContain('Nothing was saved');
        expect(await countRows(t, 'attachments')).toBe(rows);

        slow.destroy();
        await expect.poll(() => uploadBytesInFlight(t)).toBe(0);
        const taken = await postFile(t, session, file);
        expect(taken.statusCode, taken.body.slice(0, 300)).toBe(303);
        expect(await countRows(t, 'attachments')).toBe(rows + 1);
      });

      it('holds its own upload within the key’s share: the API waits, then answers 503', async () => {
        const session = await newFormSession(t);
        const page = cheerio.load((await getPage(t, session, `/form/${session.referralId}`)).body);
        const form = page('form[enctype="multipart/form-data"]');
        const boundary = '----refhubUploadRoom';
        // A browser's post whose file part is still arriving.
        const body = new PassThrough();
        const posted = t.app.inject({
          method: 'POST',
          url: form.attr('action')!,
          headers: {
            cookie: session.cookie,
            'content-type': `multipart/form-data; boundary=${boundary}`,
            ...OWN_PAGE_HEADERS,
          },
          payload: body,
        });
        body.write(
          `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n` +
            `${form.find('input[name=_csrf]').attr('value') ?? ''}\r\n` +
            `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="scan.txt"\r\n` +
            'Content-Type: text/plain\r\n\r\nReferral letter, page 1\n',
        );
        await expect.poll(() => uploadBytesInFlight(t), { timeout: 5000 }).toBeGreaterThan(0);

        const draft = await draftOf(t, t.sender);
        expectBusy(await send(base, t.sender, draft.id, Buffer.alloc(1024, 'i')), 'credential-share');

        body.end(`page 2\n\r\n--${boundary}--\r\n`);
        expect((await posted).statusCode).toBe(303);
        await expect.poll(() => uploadBytesInFlight(t)).toBe(0);
      });
    });
  });
});
