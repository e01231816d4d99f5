// The sandbox EHR's endpoint, run as its own process (`refhub sandbox-ehr --port 0`) and driven over
// real sockets: what it records for a delivery, replays and conflicts, and every way it refuses a
// request (400, 401, 404, 405, 413, 415).
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { contentDigest, sha256Hex } from '../../src/domain/forwarding/content-digest.ts';
import { MAX_FORWARD_BODY_BYTES } from '../../src/domain/forwarding/forward-request.ts';
import { messageIdOf } from '../../src/domain/ids.ts';
import type { EhrAttachmentRequest } from '../../src/domain/forwarding/forward-request.ts';
import {
  attachmentRequestFor,
  forwardRequestFor,
  postForward,
  startSandboxEhrProcess,
  type SandboxEhrProcess,
} from '../support/sandbox-ehr-process.ts';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const REFERENCE = /^EHR-[0-9A-F]{12}$/;

function expectProblem(
  answer: { status: number; headers: Headers; json: Record<string, unknown> },
  status: number,
  code: string,
): void {
  expect(answer.status, JSON.stringify(answer.json)).toBe(status);
  expect(answer.headers.get('content-type')).toBe('application/problem+json');
  expect(answer.json).toMatchObject({
    type: `urn:refhub:sandbox-ehr:${code}`,
    title: expect.any(String) as unknown,
    status,
    detail: expect.any(String) as unknown,
    code,
  });
}

describe('sandbox EHR without a token', () => {
  let sandbox: SandboxEhrProcess;

  beforeAll(async () => {
    sandbox = await startSandboxEhrProcess();
  });
  afterAll(async () => {
    await sandbox.stop();
  });
  beforeEach(async () => {
    await sandbox.reset();
  });

  it('prints one line with the endpoint URL on the port it bound', () => {
    expect(sandbox.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ehr\/referrals$/);
    expect(sandbox.url).not.toContain(':0/');
    expect(sandbox.output().stdout).toBe(`sandbox EHR listening on ${sandbox.url}\n`);
  });

  it('accepts a delivery and records the SHA-256 of the exact form text, and nothing else', async () => {
    const request = forwardRequestFor(randomUUID(), 2);
    const before = Date.now();
    const answer = await postForward(sandbox.url, request);
    expect(answer.status).toBe(201);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.json).toEqual({
      reference: expect.stringMatching(REFERENCE) as unknown,
      messageId: request.messageId,
    });

    const deliveries = await sandbox.deliveries();
    expect(deliveries).toHaveLength(1);
    const [delivery] = deliveries;
    expect(Object.keys(delivery!).sort()).toEqual(
      ['attempts', 'messageId', 'receivedAt', 'reference', 'referralId', 'sha256', 'version'].sort(),
    );
    // The form holds non-ASCII text: the digest is over its UTF-8 bytes, as the forwarder records it.
    const expected = createHash('sha256').update(Buffer.from(request.notesItem.text, 'utf8')).digest('hex');
    expect(delivery).toEqual({
      messageId: request.messageId,
      referralId: request.referralId,
      version: 2,
      sha256: expected,
      receivedAt: expect.stringMatching(ISO_MS) as unknown,
      reference: answer.json.reference,
      attempts: 1,
    });
    expect(sha256Hex(request.notesItem.text)).toBe(expected);
    expect(Date.parse(delivery!.receivedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(delivery!.receivedAt)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(await sandbox.requests()).toEqual({ total: 1, byStatus: { '201': 1 }, resets: 0, duplicates: 0 });
  });

  it('answers a replay of the same bytes with 200 and the same reference, counted as a duplicate', async () => {
    const request = forwardRequestFor(randomUUID());
    const first = await postForward(sandbox.url, request);
    const second = await postForward(sandbox.url, request);
    const third = await postForward(sandbox.url, request);
    expect([first.status, second.status, third.status]).toEqual([201, 200, 200]);
    expect(second.json).toEqual(first.json);
    expect(third.json).toEqual(first.json);
    const [delivery, ...others] = await sandbox.deliveries();
    expect(others).toEqual([]);
    expect(delivery).toMatchObject({
      messageId: request.messageId,
      attempts: 3,
      reference: first.json.reference,
    });
    expect(await sandbox.requests()).toEqual({
      total: 3,
      byStatus: { '200': 2, '201': 1 },
      resets: 0,
      duplicates: 2,
    });
  });

  it('refuses the same message ID with another body (409) and keeps the first delivery', async () => {
    const request = forwardRequestFor(randomUUID());
    const first = await postForward(sandbox.url, request);
    const changed = await postForward(sandbox.url, {
      ...request,
      notesItem: { text: '<p>Another form</p>' },
    });
    expectProblem(changed, 409, 'message_id_conflict');
    expect(changed.json.detail).toContain(request.messageId);
    // The same JSON serialised differently is other bytes too: the forwarder must resend its exact bytes.
    const reformatted = await postForward(sandbox.url, request, { body: JSON.stringify(request, null, 2) });
    expectProblem(reformatted, 409, 'message_id_conflict');
    const [delivery] = await sandbox.deliveries({ messageId: request.messageId });
    expect(delivery).toMatchObject({
      sha256: sha256Hex(request.notesItem.text),
      reference: first.json.reference,
      attempts: 3,
    });
    expect((await sandbox.requests()).byStatus).toEqual({ '201': 1, '409': 2 });
  });

  it('keeps each version of a referral as its own delivery, and filters them', async () => {
    const referralId = randomUUID();
    const other = forwardRequestFor(randomUUID());
    for (const request of [forwardRequestFor(referralId, 1), forwardRequestFor(referralId, 2), other]) {
      expect((await postForward(sandbox.url, request)).status).toBe(201);
    }
    const ofReferral = await sandbox.deliveries({ referralId });
    expect(ofReferral.map((d) => d.messageId)).toEqual([
      messageIdOf(referralId, 1),
      messageIdOf(referralId, 2),
    ]);
    expect(new Set(ofReferral.map((d) => d.reference)).size).toBe(2);
    expect(await sandbox.deliveries({ messageId: messageIdOf(referralId, 2) })).toHaveLength(1);
    expect(await sandbox.deliveries({ referralId, messageId: other.messageId })).toEqual([]);
    expect(await sandbox.deliveries({ referralId: randomUUID() })).toEqual([]);
    expect(await sandbox.deliveries()).toHaveLength(3);
  });

  it('gives a message the same reference after the sandbox forgets it', async () => {
    const request = forwardRequestFor(randomUUID());
    const first = await postForward(sandbox.url, request);
    await sandbox.reset();
    const again = await postForward(sandbox.url, request);
    expect(again.status).toBe(201);
    expect(again.json.reference).toBe(first.json.reference);
  });

  describe('a file sent with a form', () => {
    const LETTER = Buffer.from('%PDF-1.7\nA consultation letter, with é and 心.\n%%EOF\n');

    it('accepts it as a document of its own, recording its digest, type and size, never its name', async () => {
      const referralId = randomUUID();
      const request = attachmentRequestFor(referralId, 2, 1, LETTER);
      const answer = await postForward(sandbox.url, request);
      expect(answer.status, JSON.stringify(answer.json)).toBe(201);
      expect(answer.json).toEqual({
        reference: expect.stringMatching(REFERENCE) as unknown,
        messageId: `${referralId}.v2.a1`,
      });
      const [delivery] = await sandbox.deliveries({ messageId: request.messageId });
      expect(delivery).toEqual({
        messageId: `${referralId}.v2.a1`,
        referralId,
        version: 2,
        sha256: createHash('sha256').update(LETTER).digest('hex'),
        document: {
          formMessageId: messageIdOf(referralId, 2),
          number: 1,
          mediaType: 'application/pdf',
          sizeBytes: LETTER.length,
        },
        receivedAt: expect.stringMatching(ISO_MS) as unknown,
        reference: answer.json.reference,
        attempts: 1,
      });
      expect(JSON.stringify(await sandbox.deliveries())).not.toContain('letter-1.pdf');
      // A replay is a duplicate, as for a form; other bytes under the same message ID are a conflict.
      expect((await postForward(sandbox.url, request)).status).toBe(200);
      const other = attachmentRequestFor(referralId, 2, 1, Buffer.from('%PDF-1.7\nAnother letter\n'));
      expectProblem(await postForward(sandbox.url, other), 409, 'message_id_conflict');
    });

    it.each([
      [
        'content whose SHA-256 is not the one stated',
        (r: EhrAttachmentRequest): EhrAttachmentRequest => ({
          ...r,
          document: { ...r.document, sha256: '0'.repeat(64) },
        }),
        '/document/sha256',
      ],
      [
        'content of another size than stated',
        (r: EhrAttachmentRequest): EhrAttachmentRequest => ({
          ...r,
          document: { ...r.document, sizeBytes: r.document.sizeBytes + 1 },
        }),
        '/document/sizeBytes',
      ],
      [
        'a message ID of another number',
        (r: EhrAttachmentRequest): EhrAttachmentRequest => ({ ...r, messageId: `${r.formMessageId}.a2` }),
        '/messageId',
      ],
      [
        'a form of another version',
        (r: EhrAttachmentRequest): EhrAttachmentRequest => ({
          ...r,
          formMessageId: messageIdOf(r.referralId, r.version + 1),
        }),
        '/formMessageId',
      ],
      [
        'content that is not base64',
        (r: EhrAttachmentRequest): EhrAttachmentRequest => ({
          ...r,
          document: { ...r.document, contentBase64: 'not base64!' },
        }),
        '/document/contentBase64',
      ],
    ])('refuses %s with 400 naming the field', async (_label, change, field) => {
      const request = change(attachmentRequestFor(randomUUID(), 1, 1, LETTER));
      const answer = await postForward(sandbox.url, request);
      expectProblem(answer, 400, 'validation_failed');
      expect(JSON.stringify(answer.json.errors)).toContain(field);
      expect(await sandbox.deliveries()).toEqual([]);
    });
  });

  describe('refuses with 400', () => {
    const body = (request = forwardRequestFor(randomUUID())) => JSON.stringify(request);

    it.each<[string, () => Parameters<typeof postForward>, string]>([
      [
        'a missing Content-Digest',
        () => [sandbox.url, forwardRequestFor(randomUUID()), { headers: { 'content-digest': null } }],
        'invalid_content_digest',
      ],
      [
        'a Content-Digest of other bytes',
        () => [
          sandbox.url,
          forwardRequestFor(randomUUID()),
          { headers: { 'content-digest': contentDigest(body()) } },
        ],
        'invalid_content_digest',
      ],
      [
        'a Content-Digest with sha-512 only',
        () => {
          const request = forwardRequestFor(randomUUID());
          const sha512 = createHash('sha512').update(body(request)).digest('base64');
          return [sandbox.url, request, { headers: { 'content-digest': `sha-512=:${sha512}:` } }];
        },
        'invalid_content_digest',
      ],
      [
        'a malformed Content-Digest',
        () => {
          const request = forwardRequestFor(randomUUID());
          const hex = sha256Hex(body(request));
          return [sandbox.url, request, { headers: { 'content-digest': `sha-256=${hex}` } }];
        },
        'invalid_content_digest',
      ],
      [
        'a missing Idempotency-Key',
        () => [sandbox.url, forwardRequestFor(randomUUID()), { headers: { 'idempotency-key': null } }],
        'missing_idempotency_key',
      ],
      [
        'an Idempotency-Key for another version',
        () => {
          const request = forwardRequestFor(randomUUID(), 3);
          return [
            sandbox.url,
            request,
            { headers: { 'idempotency-key': messageIdOf(request.referralId, 2) } },
          ];
        },
        'idempotency_key_mismatch',
      ],
      [
        'a body that is not JSON',
        () => [sandbox.url, forwardRequestFor(randomUUID()), { body: 'not json' }],
        'malformed_json',
      ],
      [
        'a body that is not UTF-8',
        () => [
          sandbox.url,
          forwardRequestFor(randomUUID()),
          { body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]) },
        ],
        'malformed_json',
      ],
    ])('for %s', async (_name, args, code) => {
      expectProblem(await postForward(...args()), 400, code);
      expect(await sandbox.deliveries()).toEqual([]);
      expect((await sandbox.requests()).byStatus).toEqual({ '400': 1 });
    });

    it('for a body of the wrong shape, listing every problem', async () => {
      const request = forwardRequestFor(randomUUID());
      const broken = {
        ...request,
        version: 0,
        patient: { ...request.patient, uin: 'not-a-uin', extra: 'x' },
        notesItem: {},
      };
      const answer = await postForward(sandbox.url, request, { body: JSON.stringify(broken) });
      expectProblem(answer, 400, 'validation_failed');
      const paths = (answer.json.errors as { path: string }[]).map((e) => e.path).sort();
      expect(paths).toEqual(['/notesItem/text', '/patient/extra', '/patient/uin', '/version']);
      expect(await sandbox.deliveries()).toEqual([]);
    });

    it('for a message ID that is not referralId.v<version>', async () => {
      const request = forwardRequestFor(randomUUID(), 2);
      const wrong = { ...request, messageId: messageIdOf(randomUUID(), 2) };
      const answer = await postForward(sandbox.url, wrong);
      expectProblem(answer, 400, 'validation_failed');
      expect(answer.json.errors).toEqual([
        { path: '/messageId', message: expect.stringContaining(request.messageId) as unknown },
      ]);
    });
  });

  it('refuses a body that is not application/json (415), and takes a UTF-8 charset', async () => {
    const request = forwardRequestFor(randomUUID());
    for (const type of ['text/plain', 'application/json; charset=latin1', 'application/jsonx']) {
      expectProblem(
        await postForward(sandbox.url, request, { headers: { 'content-type': type } }),
        415,
        'unsupported_media_type',
      );
    }
    const answer = await postForward(sandbox.url, request, {
      headers: { 'content-type': 'Application/JSON; charset=UTF-8' },
    });
    expect(answer.status).toBe(201);
  });

  it('refuses a body over the limit with 413 and reads on, so the client sees the answer', async () => {
    const request = forwardRequestFor(randomUUID(), 1, { text: 'x'.repeat(MAX_FORWARD_BODY_BYTES) });
    const answer = await postForward(sandbox.url, request);
    expectProblem(answer, 413, 'payload_too_large');
    expect(answer.headers.get('connection')).not.toBe('close');
    expect(await sandbox.deliveries()).toEqual([]);
  });

  it('refuses a declared body far over the limit at once, and closes the connection', async () => {
    const url = new URL(sandbox.url);
    const { status, connection } = await new Promise<{
      status: number | undefined;
      connection: string | undefined;
    }>((resolve, reject) => {
      const req = http.request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(1024 ** 3) },
      });
      req.once('response', (res) => {
        res.resume();
        resolve({ status: res.statusCode, connection: res.headers.connection });
        req.destroy();
      });
      req.once('error', reject);
      req.flushHeaders();
    });
    expect(status).toBe(413);
    expect(connection).toBe('close');
  });

  it('answers other paths with 404 and other methods with 405, without counting them', async () => {
    const unknown = await fetch(`${sandbox.baseUrl}/ehr/referral`, { method: 'POST' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { code: string }).code).toBe('not_found');
    const get = await fetch(sandbox.url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    await get.body?.cancel();
    expect((await sandbox.requests()).total).toBe(0);
  });

  it('routes the raw request path: a doubled slash is not a host, an absolute URL is refused', async () => {
    const statusOf = (path: string) =>
      new Promise<number | undefined>((resolve, reject) => {
        const { hostname, port } = new URL(sandbox.baseUrl);
        const req = http.request({ hostname, port, path, method: 'GET' }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        req.once('error', reject);
        req.end();
      });
    expect(await statusOf('//sandbox.invalid/_sandbox/health')).toBe(404);
    expect(await statusOf('http://sandbox.invalid/_sandbox/health')).toBe(400);
    expect(await statusOf('/_sandbox/health?any=query')).toBe(200);
  });
});

describe('sandbox EHR with a token', () => {
  const token = `sandbox-${randomUUID()}`;
  let sandbox: SandboxEhrProcess;

  beforeAll(async () => {
    sandbox = await startSandboxEhrProcess({ token });
  });
  afterAll(async () => {
    await sandbox.stop();
  });

  it('refuses an EHR request without the bearer token (401) and accepts one with it', async () => {
    const request = forwardRequestFor(randomUUID());
    const missing = await postForward(sandbox.url, request);
    expectProblem(missing, 401, 'unauthorized');
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expectProblem(await postForward(sandbox.url, request, { token: `${token}x` }), 401, 'unauthorized');
    expectProblem(
      await postForward(sandbox.url, request, { headers: { authorization: `Basic ${token}` } }),
      401,
      'unauthorized',
    );
    const accepted = await postForward(sandbox.url, request, { token });
    expect(accepted.status).toBe(201);
    expect(await sandbox.deliveries()).toMatchObject([{ messageId: request.messageId, attempts: 4 }]);
  });

  it('guards the control API with the same token', async () => {
    for (const path of [
      '/_sandbox/health',
      '/_sandbox/deliveries',
      '/_sandbox/requests',
      '/_sandbox/behaviour',
    ]) {
      const response = await fetch(`${sandbox.baseUrl}${path}`);
      expect(response.status, path).toBe(401);
      await response.body?.cancel();
    }
    const wipe = await fetch(`${sandbox.baseUrl}/_sandbox`, {
      method: 'DELETE',
      headers: { authorization: 'Bearer wrong' },
    });
    expect(wipe.status).toBe(401);
    expect(await sandbox.deliveries()).toHaveLength(1);
    const health = await fetch(`${sandbox.baseUrl}/_sandbox/health`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await health.json()).toEqual({ status: 'ok' });
  });
});
