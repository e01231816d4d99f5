// The request log: one line per request at info, except the probes. A load balancer or an orchestrator
// asks /healthz and /readyz every few seconds, and the README's walk-through polls /readyz while refhub
// starts; at info, those lines would outnumber every other line of a quiet service. They are logged at
// debug, and readiness changes have lines of their own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/test-app.ts';

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly route?: string;
  readonly status?: number;
}

const DEBUG = 20;
const INFO = 30;

describe.each(['info', 'debug'] as const)('the request log at LOG_LEVEL=%s', (level) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('pglite', { env: { LOG_LEVEL: level } });
  });
  afterAll(async () => {
    await t.close();
  });

  const requestLines = () =>
    t.logs
      .flatMap((chunk) => chunk.split('\n').filter((line) => line !== ''))
      .map((line) => JSON.parse(line) as LogLine)
      .filter((line) => line.msg === 'request completed');

  it('logs an API request at info and the probes only at debug', async () => {
    t.logs.length = 0;
    const probes = await Promise.all(
      ['/healthz', '/readyz'].map((url) => t.app.inject({ method: 'GET', url })),
    );
    expect(probes.map((r) => r.statusCode)).toEqual([200, expect.any(Number)]);
    const list = await t.request(t.sender, {
      method: 'GET',
      url: '/api/v1/institutions/hci/S1234A/referrals?requesterIdentifier=dr@example.org',
    });
    expect(list.statusCode).toBe(200);

    const lines = requestLines();
    expect(lines.filter((line) => line.level === INFO).map((line) => line.route)).toEqual([
      '/api/v1/institutions/:institutionIdType/:institutionId/referrals',
    ]);
    expect(
      lines
        .filter((line) => line.level === DEBUG)
        .map((line) => line.route)
        .sort(),
    ).toEqual(level === 'debug' ? ['/healthz', '/readyz'] : []);
  });
});
