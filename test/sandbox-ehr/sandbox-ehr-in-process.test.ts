// The sandbox EHR inside the test process, as `refhub all` runs it when EHR_URL is unset: its
// listen/close life cycle, its handler on a server of one's own, its in-memory state API with an
// injected clock, and the memory rules underneath (staged failures, attempts, forgetting the oldest).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.ts';
import { loadConfig } from '../../src/config.ts';
import { sha256Hex } from '../../src/domain/forwarding/content-digest.ts';
import { serveSandboxEhr } from '../../src/composition/commands.ts';
import { createSandboxEhr, EHR_PATH } from '../../src/sandbox-ehr/sandbox-ehr.ts';
import {
  createSandboxEhrState,
  MAX_TRACKED_MESSAGES,
  referenceFor,
} from '../../src/sandbox-ehr/sandbox-ehr-state.ts';
import { forwardRequestFor, postForward } from '../support/sandbox-ehr-process.ts';

const fixedClock = { now: () => new Date('2026-06-04T03:15:00.000Z') };

describe('createSandboxEhr in-process', () => {
  it('listens on a free port, records with its clock, and closes with keep-alive connections open', async () => {
    const sandbox = createSandboxEhr({ clock: fixedClock, token: 'in-process' });
    const running = await sandbox.listen({ port: 0 });
    try {
      expect(running.url).toBe(`${running.baseUrl}${EHR_PATH}`);
      const request = forwardRequestFor(randomUUID(), 4);
      const answer = await postForward(running.url, request, { token: 'in-process' });
      expect(answer.json).toEqual({
        reference: referenceFor(request.messageId),
        messageId: request.messageId,
      });
      expect(sandbox.state.deliveries()).toEqual([
        {
          messageId: request.messageId,
          referralId: request.referralId,
          version: 4,
          sha256: sha256Hex(request.notesItem.text),
          receivedAt: '2026-06-04T03:15:00.000Z',
          reference: referenceFor(request.messageId),
          attempts: 1,
        },
      ]);
    } finally {
      // fetch keeps its connection alive; close() must not wait for it to time out.
      const started = performance.now();
      await running.close();
      expect(performance.now() - started).toBeLessThan(1000);
    }
    await expect(fetch(`${running.baseUrl}/_sandbox/health`)).rejects.toThrow();
  });

  it('serves from its handler on a server of the caller’s own', async () => {
    const sandbox = createSandboxEhr();
    sandbox.state.setBehaviour({ statuses: [429], retryAfterSeconds: 2 });
    const server = http.createServer(sandbox.handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await postForward(
        `http://127.0.0.1:${port}${EHR_PATH}`,
        forwardRequestFor(randomUUID()),
      );
      expect([answer.status, answer.headers.get('retry-after')]).toEqual([429, '2']);
      expect(sandbox.state.requests()).toEqual({
        total: 1,
        byStatus: { '429': 1 },
        resets: 0,
        duplicates: 0,
      });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reports a port in use as a listen error', async () => {
    const first = await createSandboxEhr().listen({ port: 0 });
    try {
      const port = Number(new URL(first.url).port);
      await expect(createSandboxEhr().listen({ port })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await first.close();
    }
  });

  it('refuses to serve in production before it listens', async () => {
    const production = { ...loadConfig({}), env: 'production' } satisfies Config;
    await expect(serveSandboxEhr(production, { port: 0, host: '127.0.0.1' })).rejects.toThrow(
      'the sandbox EHR does not run with NODE_ENV=production',
    );
  });
});

describe('createSandboxEhrState', () => {
  const request = (version = 1) => forwardRequestFor('0190a0b2-1c2d-7e3f-8a9b-0c1d2e3f4a5b', version);

  it('uses up resets before statuses, and adds Retry-After to 429 and 503 only', () => {
    const state = createSandboxEhrState({ clock: fixedClock });
    state.setBehaviour({ resets: 1, statuses: [503, 500, 429], retryAfterSeconds: 3 });
    expect([1, 2, 3, 4, 5].map(() => state.takeStagedFailure(false))).toEqual([
      { kind: 'reset' },
      { kind: 'status', status: 503, retryAfterSeconds: 3 },
      { kind: 'status', status: 500, retryAfterSeconds: null },
      { kind: 'status', status: 429, retryAfterSeconds: 3 },
      undefined,
    ]);
  });

  it('answers requests carrying a file from fileStatuses first, and leaves forms to statuses', () => {
    const state = createSandboxEhrState({ clock: fixedClock });
    state.setBehaviour({ statuses: [500], fileStatuses: [503, 422], retryAfterSeconds: 2 });
    expect(state.takeStagedFailure(true)).toEqual({ kind: 'status', status: 503, retryAfterSeconds: 2 });
    expect(state.takeStagedFailure(false)).toEqual({ kind: 'status', status: 500, retryAfterSeconds: null });
    expect(state.takeStagedFailure(false)).toBeUndefined();
    expect(state.takeStagedFailure(true)).toEqual({ kind: 'status', status: 422, retryAfterSeconds: null });
    expect(state.takeStagedFailure(true)).toBeUndefined();
  });

  it('counts attempts before and after the delivery under the Idempotency-Key', () => {
    const state = createSandboxEhrState({ clock: fixedClock });
    const first = request();
    state.noteArrival(first.messageId);
    state.noteArrival(first.messageId);
    state.noteArrival(undefined);
    expect(state.accept(first, 'body-1').outcome).toBe('created');
    state.noteArrival(first.messageId);
    expect(state.accept(first, 'body-1')).toMatchObject({ outcome: 'duplicate', delivery: { attempts: 3 } });
    state.noteArrival(first.messageId);
    expect(state.accept(first, 'body-2')).toMatchObject({ outcome: 'conflict', delivery: { attempts: 4 } });
    expect(state.requests()).toMatchObject({ total: 5, duplicates: 1 });
  });

  it('forgets the oldest message IDs past its bound', () => {
    const state = createSandboxEhrState({ clock: fixedClock });
    for (let version = 1; version <= MAX_TRACKED_MESSAGES + 1; version += 1) {
      expect(state.accept(request(version), `body-${version}`).outcome).toBe('created');
    }
    const deliveries = state.deliveries();
    expect(deliveries).toHaveLength(MAX_TRACKED_MESSAGES);
    expect(deliveries[0]?.version).toBe(2);
    expect(state.accept(request(1), 'other-body').outcome).toBe('created');
  });
});
