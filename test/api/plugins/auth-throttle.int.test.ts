// Failed authentication is throttled per client address: after a few wrong API keys, or unknown
// one-time link tokens, an address gets 429 with Retry-After for the rest of the window, counted in
// a metric. Other addresses are not affected, and a valid key keeps working from the throttled one
// (keys and tokens carry 256 random bits: the throttle spares the audit trail and the store, and
// tells operators, rather than standing between a guesser and a key).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const WRONG_KEY = `rfh_test_${'x'.repeat(43)}`;
const ATTEMPTS = 30;

describe.each(APP_ENGINES)('failed authentication on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const list = (key: string, remoteAddress: string) =>
    t.app.inject({
      method: 'GET',
      url: `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals`,
      headers: { authorization: `ApiKey ${key}` },
      remoteAddress,
    });
  const metric = async (kind: string, outcome: string) => {
    const text = await t.ctx.metrics.registry.metrics();
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`refhub_auth_failures_total{kind="${kind}",outcome="${outcome}"}`));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };

  it('answers wrong API keys 401, then 429 with Retry-After; others and valid keys go on', async () => {
    const statuses: number[] = [];
    let throttled;
    for (let i = 0; i < ATTEMPTS; i++) {
      const res = await list(WRONG_KEY, '203.0.113.7');
      statuses.push(res.statusCode);
      if (res.statusCode === 429) throttled = res;
    }
    const firstThrottled = statuses.indexOf(429);
    expect(firstThrottled).toBeGreaterThanOrEqual(3);
    expect(firstThrottled).toBeLessThanOrEqual(20);
    expect(statuses.slice(0, firstThrottled).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(firstThrottled).every((s) => s === 429)).toBe(true);
    expect(throttled?.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    expect(throttled?.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(throttled?.json()).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(throttled?.body).not.toContain(WRONG_KEY);

    expect((await list(WRONG_KEY, '198.51.100.20')).statusCode).toBe(401);
    expect((await list(t.sender.key, '203.0.113.7')).statusCode).toBe(200);
    expect(await metric('api-key', 'throttled')).toBe(ATTEMPTS - firstThrottled);
    expect(await metric('api-key', 'refused')).toBe(firstThrottled + 1);
  });

  it('answers unknown link tokens 404, then 429 with Retry-After, as a page', async () => {
    const statuses: number[] = [];
    let throttled;
    for (let i = 0; i < ATTEMPTS; i++) {
      const token = `${String(i).padStart(3, '0')}${'A'.repeat(40)}`;
      const res = await t.app.inject({ method: 'GET', url: `/l/${token}`, remoteAddress: '203.0.113.9' });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) throttled = res;
    }
    const firstThrottled = statuses.indexOf(429);
    expect(firstThrottled).toBeGreaterThanOrEqual(3);
    expect(firstThrottled).toBeLessThanOrEqual(20);
    expect(statuses.slice(0, firstThrottled).every((s) => s === 404)).toBe(true);
    expect(statuses.slice(firstThrottled).every((s) => s === 429)).toBe(true);
    expect(throttled?.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    expect(throttled?.headers['content-type']).toMatch(/^text\/html/);
    const other = await t.app.inject({
      method: 'GET',
      url: `/l/${'B'.repeat(43)}`,
      remoteAddress: '198.51.100.30',
    });
    expect(other.statusCode).toBe(404);
    expect(await metric('link-token', 'throttled')).toBe(ATTEMPTS - firstThrottled);
  });
});
