// The sandbox EHR as a misbehaving peer, and as a process: staged statuses with Retry-After, staged
// redirects, latency, dropped connections; validation of the control API; that no patient data is
// kept, answered or logged; and the command's start-up and shutdown.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { request as undiciRequest } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/domain/forwarding/content-digest.ts';
import { auditSigningKeySetting, testAuditSigningKey } from '../support/audit-signing-key.ts';
import {
  forwardRequestFor,
  postForward,
  runSandboxEhrCommand,
  startSandboxEhrProcess,
  type SandboxEhrProcess,
} from '../support/sandbox-ehr-process.ts';
import { makeSandboxTls } from '../support/sandbox-tls.ts';

const HELPER = path.resolve(import.meta.dirname, '../support/sandbox-ehr-process.ts');

/** The error code under a failed fetch (undici puts the socket's in `cause`). */
async function socketFailure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return cause?.code ?? String(error);
  }
  throw new Error('the request did not fail');
}

describe('staged failures', () => {
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

  it('answers staged statuses in order, with Retry-After on 429 and 503, then delivers', async () => {
    const staged = await sandbox.setBehaviour({ statuses: [503, 429, 500, 408], retryAfterSeconds: 7 });
    expect(staged).toEqual({
      statuses: [503, 429, 500, 408],
      retryAfterSeconds: 7,
      latencyMs: 0,
      resets: 0,
      fileStatuses: [],
    });
    const request = forwardRequestFor(randomUUID());
    const answers = [];
    for (let i = 0; i < 5; i += 1) answers.push(await postForward(sandbox.url, request));
    expect(answers.map((a) => a.status)).toEqual([503, 429, 500, 408, 201]);
    expect(answers.map((a) => a.headers.get('retry-after'))).toEqual(['7', '7', null, null, null]);
    expect(answers[0]?.json).toMatchObject({ code: 'staged_failure', status: 503 });
    expect(await sandbox.behaviour()).toEqual({
      statuses: [],
      retryAfterSeconds: 7,
      latencyMs: 0,
      resets: 0,
      fileStatuses: [],
    });
    // Every request carried the message ID, so the delivery shows five attempts.
    expect(await sandbox.deliveries()).toMatchObject([{ messageId: request.messageId, attempts: 5 }]);
    expect(await sandbox.requests()).toEqual({
      total: 5,
      byStatus: { '201': 1, '408': 1, '429': 1, '500': 1, '503': 1 },
      resets: 0,
      duplicates: 0,
    });
  });

  it('sends no Retry-After when none was staged', async () => {
    await sandbox.setBehaviour({ statuses: [503] });
    const answer = await postForward(sandbox.url, forwardRequestFor(randomUUID()));
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBeNull();
  });

  it('stages failures whatever the request holds, even one it would refuse', async () => {
    await sandbox.setBehaviour({ statuses: [502] });
    const answer = await postForward(sandbox.url, forwardRequestFor(randomUUID()), { body: 'not json' });
    expect(answer.status).toBe(502);
    expect(
      (await postForward(sandbox.url, forwardRequestFor(randomUUID()), { body: 'not json' })).status,
    ).toBe(400);
  });

  it('stages a redirect back to the endpoint, which a client must not follow', async () => {
    await sandbox.setBehaviour({ statuses: [307] });
    const request = forwardRequestFor(randomUUID());
    const answer = await undiciRequest(sandbox.url, {
      method: 'POST',
      body: JSON.stringify(request),
      headers: { 'content-type': 'application/json' },
    });
    await answer.body.dump();
    expect(answer.statusCode).toBe(307);
    expect(answer.headers.location).toBe('/ehr/referrals');
    expect(await sandbox.deliveries()).toEqual([]);
  });

  it('waits the staged latency before every answer', async () => {
    await sandbox.setBehaviour({ latencyMs: 400 });
    for (const request of [forwardRequestFor(randomUUID()), forwardRequestFor(randomUUID())]) {
      const started = performance.now();
      expect((await postForward(sandbox.url, request)).status).toBe(201);
      expect(performance.now() - started).toBeGreaterThanOrEqual(380);
    }
  });

  it('lets a client give up during the latency, and answers nobody', async () => {
    await sandbox.setBehaviour({ latencyMs: 1500 });
    const request = forwardRequestFor(randomUUID());
    const error = await postForward(sandbox.url, request, { signal: AbortSignal.timeout(150) }).catch(
      (e: unknown) => e,
    );
    expect((error as Error).name).toBe('TimeoutError');
    await sandbox.setBehaviour({});
    // The abandoned request arrived and was counted, but got no status and delivered nothing.
    await expect.poll(async () => (await sandbox.requests()).total).toBe(1);
    expect((await sandbox.requests()).byStatus).toEqual({});
    expect(await sandbox.deliveries()).toEqual([]);
  });

  it('drops the connection of the next requests as staged, observable as a socket error', async () => {
    await sandbox.setBehaviour({ resets: 2, statuses: [503] });
    const request = forwardRequestFor(randomUUID());
    const socketCodes = ['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE'];
    expect(socketCodes).toContain(await socketFailure(postForward(sandbox.url, request)));
    expect(socketCodes).toContain(await socketFailure(postForward(sandbox.url, request)));
    // Resets come before staged statuses.
    expect((await postForward(sandbox.url, request)).status).toBe(503);
    expect((await postForward(sandbox.url, request)).status).toBe(201);
    expect(await sandbox.deliveries()).toMatchObject([{ messageId: request.messageId, attempts: 4 }]);
    expect(await sandbox.requests()).toEqual({
      total: 4,
      byStatus: { '201': 1, '503': 1 },
      resets: 2,
      duplicates: 0,
    });
  });

  it('replaces the whole behaviour on PUT, and DELETE clears everything', async () => {
    await sandbox.setBehaviour({ statuses: [503, 503], latencyMs: 10, resets: 1, retryAfterSeconds: 1 });
    expect(await sandbox.setBehaviour({ latencyMs: 5 })).toEqual({
      statuses: [],
      retryAfterSeconds: null,
      latencyMs: 5,
      resets: 0,
      fileStatuses: [],
    });
    expect((await postForward(sandbox.url, forwardRequestFor(randomUUID()))).status).toBe(201);
    await sandbox.reset();
    expect(await sandbox.behaviour()).toEqual({
      statuses: [],
      retryAfterSeconds: null,
      latencyMs: 0,
      resets: 0,
      fileStatuses: [],
    });
    expect(await sandbox.deliveries()).toEqual([]);
    expect(await sandbox.requests()).toEqual({ total: 0, byStatus: {}, resets: 0, duplicates: 0 });
  });
});

describe('control API validation', () => {
  let sandbox: SandboxEhrProcess;

  beforeAll(async () => {
    sandbox = await startSandboxEhrProcess();
  });
  afterAll(async () => {
    await sandbox.stop();
  });

  async function call(method: string, path: string, body?: string, contentType = 'application/json') {
    const response = await fetch(`${sandbox.baseUrl}${path}`, {
      method,
      body: body ?? null,
      headers: body === undefined ? {} : { 'content-type': contentType },
    });
    const text = await response.text();
    return {
      status: response.status,
      allow: response.headers.get('allow'),
      json: (text === '' ? null : JSON.parse(text)) as { code?: string; errors?: { path: string }[] } | null,
    };
  }

  it.each([
    ['a 2xx status', { statuses: [200] }, '/statuses/0'],
    ['a status out of range', { statuses: [503, 600] }, '/statuses/1'],
    ['a status that is not an integer', { statuses: [503.5] }, '/statuses/0'],
    ['statuses that are not a list', { statuses: 503 }, '/statuses'],
    ['too many statuses', { statuses: Array.from({ length: 1001 }, () => 503) }, '/statuses'],
    ['a negative latency', { latencyMs: -1 }, '/latencyMs'],
    ['a latency over two minutes', { latencyMs: 120_001 }, '/latencyMs'],
    ['a fractional reset count', { resets: 1.5 }, '/resets'],
    ['Retry-After as text', { retryAfterSeconds: '7' }, '/retryAfterSeconds'],
    ['an unknown field', { status: [503] }, '/status'],
    ['a list instead of an object', [], ''],
  ])('refuses a behaviour with %s (400)', async (_name, body, path) => {
    const answer = await call('PUT', '/_sandbox/behaviour', JSON.stringify(body));
    expect(answer.status).toBe(400);
    expect(answer.json?.code).toBe('validation_failed');
    expect(answer.json?.errors?.map((e) => e.path)).toContain(path);
    expect(await sandbox.behaviour()).toEqual({
      statuses: [],
      retryAfterSeconds: null,
      latencyMs: 0,
      resets: 0,
      fileStatuses: [],
    });
  });

  it('refuses a behaviour that is not JSON (400), not declared as JSON (415), or too big (413)', async () => {
    expect((await call('PUT', '/_sandbox/behaviour', '{"statuses":')).json?.code).toBe('malformed_json');
    const plain = await call('PUT', '/_sandbox/behaviour', '{}', 'text/plain');
    expect([plain.status, plain.json?.code]).toEqual([415, 'unsupported_media_type']);
    const big = await call(
      'PUT',
      '/_sandbox/behaviour',
      JSON.stringify({ statuses: [], pad: 'x'.repeat(70_000) }),
    );
    expect([big.status, big.json?.code]).toEqual([413, 'payload_too_large']);
  });

  it.each([
    ['an unknown filter', '?status=201', '/status'],
    ['a repeated filter', '?referralId=a&referralId=b', '/referralId'],
    ['an empty filter', '?messageId=', '/messageId'],
    ['a filter too long', `?referralId=${'a'.repeat(37)}`, '/referralId'],
  ])('refuses deliveries with %s (400)', async (_name, query, path) => {
    const answer = await call('GET', `/_sandbox/deliveries${query}`);
    expect(answer.status).toBe(400);
    expect(answer.json?.errors?.map((e) => e.path)).toEqual([path]);
  });

  it('answers unknown control paths with 404 and other methods with 405 and Allow', async () => {
    expect((await call('GET', '/_sandbox/nothing')).status).toBe(404);
    expect((await call('GET', '/_sandbox/deliveries/1')).status).toBe(404);
    expect(await call('POST', '/_sandbox/behaviour', '{}')).toMatchObject({ status: 405, allow: 'GET, PUT' });
    expect(await call('GET', '/_sandbox')).toMatchObject({ status: 405, allow: 'DELETE' });
    expect(await call('DELETE', '/_sandbox/requests')).toMatchObject({ status: 405, allow: 'GET' });
    expect((await call('GET', '/_sandbox/health')).json).toEqual({ status: 'ok' });
    expect((await call('DELETE', '/_sandbox')).status).toBe(204);
  });
});

describe('privacy', () => {
  const CANARY_NAME = `Canary Patient ${randomUUID()}`;
  const CANARY_UIN = 'T9876543Z';

  it('keeps, answers and logs no patient data, whatever happens to the request', async () => {
    const sandbox = await startSandboxEhrProcess({ logLevel: 'trace' });
    try {
      const request = forwardRequestFor(randomUUID(), 1, {
        patientName: CANARY_NAME,
        uin: CANARY_UIN,
        text: `<!doctype html><p data-field="patient.name">${CANARY_NAME}</p><p>${CANARY_UIN}</p>`,
      });
      const answers = [
        await postForward(sandbox.url, request),
        await postForward(sandbox.url, request),
        await postForward(sandbox.url, { ...request, notesItem: { text: `<p>${CANARY_NAME} again</p>` } }),
        await postForward(sandbox.url, {
          ...request,
          patient: { ...request.patient, dob: CANARY_NAME },
        }),
        await postForward(sandbox.url, request, {
          body: `{"patient":{"name":"${CANARY_NAME}","uin":"${CANARY_UIN}"`,
        }),
        await postForward(sandbox.url, request, { headers: { 'content-digest': 'sha-256=:AAAA:' } }),
      ];
      expect(answers.map((a) => a.status)).toEqual([201, 200, 409, 400, 400, 400]);

      const state = JSON.stringify({
        deliveries: await sandbox.deliveries(),
        requests: await sandbox.requests(),
        behaviour: await sandbox.behaviour(),
      });
      expect(state).toContain(sha256Hex(request.notesItem.text));
      const { stdout, stderr } = sandbox.output();
      expect(stderr).toContain('sandbox EHR answered');
      for (const text of [state, stdout, stderr, JSON.stringify(answers.map((a) => a.json))]) {
        expect(text).not.toContain(CANARY_NAME);
        expect(text).not.toContain('Canary Patient');
        expect(text).not.toContain(CANARY_UIN);
      }
    } finally {
      await sandbox.stop();
    }
  });
});

describe('the refhub sandbox-ehr command', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('stops cleanly on %s', async (signal) => {
    const sandbox = await startSandboxEhrProcess();
    expect(await sandbox.stop(signal)).toEqual({ code: 0, signal: null });
    expect(sandbox.output().stderr).toContain('sandbox EHR stopping');
    expect(sandbox.output().stdout).toBe(`sandbox EHR listening on ${sandbox.url}\n`);
    await expect(fetch(`${sandbox.baseUrl}/_sandbox/health`)).rejects.toThrow();
  });

  it('stops by itself when the process that started it is killed outright', async () => {
    // A parent that starts the sandbox through the support helper, prints its URL, then idles.
    const script = [
      `import { startSandboxEhrProcess } from ${JSON.stringify(HELPER)};`,
      'const sandbox = await startSandboxEhrProcess();',
      'process.stdout.write(`${sandbox.baseUrl}\\n`);',
      'setInterval(() => {}, 60_000);',
    ].join('\n');
    const parent = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const baseUrl = await new Promise<string>((resolve, reject) => {
        let out = '';
        parent.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) resolve(out.trim());
        });
        parent.once('exit', (code) => {
          reject(new Error(`the parent exited (${code}) early: ${out}`));
        });
      });
      expect((await fetch(`${baseUrl}/_sandbox/health`)).status).toBe(200);
      parent.kill('SIGKILL');
      await expect
        .poll(
          () =>
            fetch(`${baseUrl}/_sandbox/health`).then(
              () => 'serving',
              () => 'stopped',
            ),
          { timeout: 10_000 },
        )
        .toBe('stopped');
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it.each([
    [['--port', '65536'], 'expected a port number'],
    [['--port', 'http'], 'expected a port number'],
    [['--token', 'has space'], 'expected 1 to 512 printable characters'],
  ])('refuses %j', async (args, message) => {
    const result = await runSandboxEhrCommand(args);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe('');
  });

  it('serves https with the certificate it is given, which a client verifies against its CA', async () => {
    const tls = makeSandboxTls();
    const sandbox = await startSandboxEhrProcess({ tls });
    try {
      expect(sandbox.url.startsWith('https://127.0.0.1:')).toBe(true);
      // The control client trusts the CA: a round trip over TLS.
      expect(await sandbox.requests()).toMatchObject({ total: 0 });
      // A client that was not given the CA refuses the certificate.
      expect(await socketFailure(fetch(`${sandbox.baseUrl}/_sandbox/health`))).toBe(
        'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      );
    } finally {
      await sandbox.stop();
    }
  });

  it('refuses half a certificate, a file it cannot read, and files that are not PEM, naming them', async () => {
    const tls = makeSandboxTls();
    const cases: [readonly string[], string][] = [
      [['--tls-cert', tls.cert], '--tls-cert and --tls-key go together'],
      [['--tls-key', tls.key], '--tls-cert and --tls-key go together'],
      [
        ['--tls-cert', `${tls.dir}/missing.pem`, '--tls-key', tls.key],
        `cannot read --tls-cert ${tls.dir}/missing.pem (ENOENT)`,
      ],
      [['--tls-cert', tls.cert, '--tls-key', tls.dir], `cannot read --tls-key ${tls.dir} (EISDIR)`],
      [['--tls-cert', tls.key, '--tls-key', tls.cert], 'cannot serve https with --tls-cert and --tls-key'],
    ];
    for (const [args, message] of cases) {
      const result = await runSandboxEhrCommand(['--port', '0', ...args]);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr, args.join(' ')).toContain(message);
      expect(result.stdout).toBe('');
    }
  });

  it('refuses a port that is taken, naming it', async () => {
    const first = await startSandboxEhrProcess();
    try {
      const port = new URL(first.url).port;
      const result = await runSandboxEhrCommand(['--port', port]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${port} (EADDRINUSE)`);
    } finally {
      await first.stop();
    }
  });

  it('does not start in production', async () => {
    // Every setting production requires is given, so that what stops it is the sandbox's own refusal.
    const result = await runSandboxEhrCommand(['--port', '0'], {
      NODE_ENV: 'production',
      EHR_URL: 'https://ehr.example.org/referrals',
      SESSION_SECRET: 's'.repeat(32),
      DATA_KEYS: `kek-1:${Buffer.alloc(32, 1).toString('base64')}`,
      AUDIT_SIGNING_KEY: auditSigningKeySetting(await testAuditSigningKey()),
      ATTACHMENT_SCANNING: 'elsewhere',
      QUEUE_BACKEND: 'postgres',
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^refhub: .*the sandbox EHR does not run with NODE_ENV=production/);
  });
});
