// Every number the API reads is bounded by what its column or type holds: a page size, an offset, a
// wait, a limit or an If-Match version past int4, bigint or JavaScript's safe integers is refused 400
// naming the parameter, before it reaches the database (where it would fail as a 500).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { feedUrl } from '../../support/event-feed.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { createDraft } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const INT4_PAST = '2147483648';
const BIGINT_PAST = '9223372036854775808';
const UNSAFE = '9007199254740993';

describe.each(APP_ENGINES)('numbers past their type on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const list = (query: Record<string, string>) =>
    `/api/v1/institutions/hci/S1234A/referrals?${new URLSearchParams({ requesterIdentifier: REQUESTER, ...query }).toString()}`;

  it.each([
    ['referrals pageSize', () => list({ pageSize: INT4_PAST }), 'query.pageSize'],
    ['referrals offset', () => list({ offset: BIGINT_PAST }), 'query.offset'],
    ['referrals offset, unsafe', () => list({ offset: UNSAFE }), 'query.offset'],
    ['referrals offset, 1e300', () => list({ offset: '1e300' }), 'query.offset'],
    ['events limit', (t: TestApp) => feedUrl(t.sender, { limit: BIGINT_PAST }), 'query.limit'],
    ['events wait', (t: TestApp) => feedUrl(t.sender, { wait: UNSAFE }), 'query.wait'],
    [
      'webhook attempts limit',
      () =>
        `/api/v1/institutions/hci/S1234A/webhook-subscriptions/${randomUUID()}/attempts?limit=${INT4_PAST}`,
      'query.limit',
    ],
  ])('%s → 400 naming it', async (_label, url, path) => {
    const logsBefore = t.logs.length;
    const res = await t.request(t.sender, { method: 'GET', url: url(t) });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ code: 'validation_failed', errors: [{ path }] });
    expect(t.logs.slice(logsBefore).join('\n')).not.toContain('a defect in refhub');
  });

  it.each([INT4_PAST, BIGINT_PAST, UNSAFE])('If-Match "%s" → 400 naming header.If-Match', async (version) => {
    const draft = await createDraft(t);
    const res = await t.request(t.sender, {
      method: 'PATCH',
      url: `/api/v1/referrals/${draft.id}`,
      headers: { 'if-match': `W/"${version}"` },
      payload: { ...t.sender.institution, isUrgent: true },
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ errors: [{ path: 'header.If-Match' }] });
  });

  it('the largest If-Match it reads (nine digits) is a stale version (412), not a database error', async () => {
    const draft = await createDraft(t);
    const res = await t.request(t.sender, {
      method: 'PATCH',
      url: `/api/v1/referrals/${draft.id}`,
      headers: { 'if-match': 'W/"999999999"' },
      payload: { ...t.sender.institution, isUrgent: true },
    });
    expect(res.statusCode, res.body).toBe(412);
  });
});
