// Answers a slow client has not read are bounded (RESPONSES_IN_FLIGHT_MIB, api/response-budget.ts).
// A client asks for a large referral over a Unix socket (whose buffers take about 200 KiB, so most of
// the answer stays in the process) and stops reading. While its answer is held, another read whose
// answer does not fit is answered 503 with Retry-After, in problem+json; a write still goes. Once the
// client reads to the end, the bytes are given back and reads are answered again.
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/bridge.ts';
import { call, createDraft, type ReferralJson } from '../support/scenarios.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const NOTES = 100;

async function gauge(t: TestApp): Promise<number> {
  const metric = await t.ctx.metrics.registry.getSingleMetric('refhub_http_response_bytes_in_flight')?.get();
  return metric?.values[0]?.value ?? 0;
}

describe('answers held for slow clients', () => {
  let t: TestApp;
  let dir: string;
  let socketPath: string;
  let referral: ReferralJson;
  let readUrl: string;

  beforeAll(async () => {
    t = await createTestApp('pglite', { env: { RESPONSES_IN_FLIGHT_MIB: '1' } });
    referral = await createDraft(t);
    const acting = { institutionIdType: 'hci', institutionId: t.sender.institution.institutionId };
    for (let i = 0; i < NOTES; i++) {
      await call(
        t,
        t.sender,
        'POST',
        `/api/v1/referrals/${referral.id}/notes`,
        { ...acting, content: `Note ${i}: ${'lorem ipsum dolor sit amet '.repeat(290)}` },
        201,
      );
    }
    readUrl = `/api/v1/referrals/${referral.id}?requesterIdentifier=dr%40example.org&institutionIdType=hci&institutionId=${acting.institutionId}&additionalField=ehrForm`;
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'refhub-answers-'));
    socketPath = path.join(dir, 'api.sock');
    await t.app.listen({ path: socketPath });
  }, 120_000);
  afterAll(async () => {
    await t.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** A GET over the socket that stops reading once the head has arrived. */
  function slowRead(url: string): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const request = http.get({
        socketPath,
        path: url,
        headers: { authorization: `ApiKey ${t.sender.key}` },
      });
      request.on('response', (response) => {
        response.pause();
        resolve(response);
      });
      request.on('error', reject);
    });
  }

  function readToEnd(response: http.IncomingMessage): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
      response.on('error', reject);
      response.resume();
    });
  }

  it('answers a read 503 while a slow client holds the budget, and again once it has read', async () => {
    const slow = await slowRead(readUrl);
    expect(slow.statusCode).toBe(200);
    // The state: the process holds the unread answer (more than the 1 MiB budget).
    const held = await eventually('the unread answer held', async () => {
      const bytes = await gauge(t);
      return bytes > 1024 * 1024 ? bytes : undefined;
    });

    const refused = await t.request(t.sender, { method: 'GET', url: readUrl });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.headers.etag).toBeUndefined();
    expect(refused.json()).toMatchObject({
      status: 503,
      code: 'unavailable',
      requestId: refused.headers['x-request-id'],
    });
    const shed = await t.ctx.metrics.registry.getSingleMetric('refhub_http_responses_shed_total')?.get();
    expect(shed?.values[0]?.value).toBe(1);

    // A write goes whatever the budget holds: its change has committed.
    const acting = { institutionIdType: 'hci', institutionId: t.sender.institution.institutionId };
    const note = await t.request(t.sender, {
      method: 'POST',
      url: `/api/v1/referrals/${referral.id}/notes`,
      payload: { ...acting, content: 'Written while a slow client reads.' },
    });
    expect(note.statusCode).toBe(201);
    expect(await gauge(t)).toBe(held);

    // The slow client reads its whole answer, and the bytes are given back.
    const body = JSON.parse(await readToEnd(slow)) as ReferralJson & { ehrForm: string };
    expect(body.id).toBe(referral.id);
    expect(body.ehrForm.length).toBeGreaterThan(100_000);
    await eventually('the bytes given back', async () => ((await gauge(t)) === 0 ? true : undefined));
    const again = await t.request(t.sender, { method: 'GET', url: readUrl });
    expect(again.statusCode).toBe(200);
    expect(await gauge(t)).toBe(0);
  }, 60_000);
});
