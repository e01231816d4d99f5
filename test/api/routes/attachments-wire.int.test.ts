// Uploads over a real connection, as clients send them when they do not know the length beforehand
// (Transfer-Encoding: chunked): within the limit the file is stored; past it the client gets 413
// problem+json, not a reset connection, the connection stays usable, and the refusal is logged
// without the file's name or content. Nothing of a refused body is stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { rawRequest, uploadHead } from '../../support/raw-http.ts';
import { createDraft } from '../../support/scenarios.ts';
import { countRows } from '../../support/store-inspection.ts';
import { createTestApp, listeningUrl, type TestApp } from '../../support/test-app.ts';

const MIB = 1024 * 1024;
const PIECE = 64 * 1024;
const FILE_NAME = 'Quokkamark-referral.txt';

describe.each(APP_ENGINES)('attachments over a real connection on %s', (engine) => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp(engine, { env: { ATTACHMENT_MAX_MIB: '1', HTTP_REQUEST_TIMEOUT_SECONDS: '10' } });
    port = Number(new URL(await listeningUrl(t)).port);
  });
  afterAll(async () => {
    await t.close();
  });

  const head = (referralId: string) =>
    uploadHead(
      `/api/v1/referrals/${referralId}/attachments?institutionIdType=hci&institutionId=S1234A`,
      t.sender.key,
      { 'Transfer-Encoding': 'chunked' },
      FILE_NAME,
    );

  it('stores a chunked upload within the limit', async () => {
    const draft = await createDraft(t);
    const upload = await rawRequest(port, head(draft.id));
    for (let sent = 0; sent < MIB; sent += PIECE) upload.writeChunk(Buffer.alloc(PIECE, 'q'));
    upload.writeChunk(Buffer.alloc(0));
    const answer = await upload.answer;
    expect(answer.status, answer.body).toBe(201);
    expect(JSON.parse(answer.body)).toMatchObject({ sizeBytes: MIB });
    upload.destroy();
  });

  it('answers a chunked upload past the limit 413 problem+json, logs it, and stores nothing', async () => {
    const draft = await createDraft(t);
    const rows = await countRows(t, 'attachments');
    const upload = await rawRequest(port, head(draft.id));
    // The client sends past the limit, a piece at a time, for as long as nobody answers it.
    let sent = 0;
    while (!upload.answered && upload.open && sent <= 2 * MIB) {
      upload.writeChunk(Buffer.alloc(PIECE, 'q'));
      sent += PIECE;
      await new Promise((resolve) => setImmediate(resolve));
    }
    upload.writeChunk(Buffer.alloc(0));
    const answer = await upload.answer;
    expect(upload.reset).toBe(false);
    expect(answer.status, answer.body).toBe(413);
    expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(answer.body)).toMatchObject({
      status: 413,
      code: 'payload_too_large',
      detail: 'The request body is larger than 1 MiB.',
      requestId: answer.headers['x-request-id'],
    });
    expect(await countRows(t, 'attachments')).toBe(rows);

    // One log line says what happened to the request, by its route; none names the file or quotes it.
    const lines = t.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    const logged = lines.filter((line) => line.reqId === answer.headers['x-request-id']);
    expect(logged).toContainEqual(
      expect.objectContaining({
        msg: 'request completed',
        status: 413,
        route: '/api/v1/referrals/:referralId/attachments',
      }),
    );
    for (const line of t.logs) {
      expect(line).not.toContain('Quokkamark');
      expect(line).not.toContain('qqqq');
    }
    // Its room is given back.
    await expect
      .poll(async () => {
        const metric = await t.ctx.metrics.registry.getSingleMetric('refhub_upload_bytes_in_flight')?.get();
        return metric?.values[0]?.value ?? 0;
      })
      .toBe(0);
    upload.destroy();
  });
});
