// A replay from the ops pages, end to end on the real bridge (the workers running, the sandbox EHR its
// own process): one referral's forward refused for good by the EHR (HTTP 422), another delivered. The
// dry run names both and would replay one; the POST, from the ops pages with OPS_DASHBOARD_WRITE=true,
// queues it again, the real worker delivers it once, and its new ledger row names the attempt it
// repeats; the delivered referral is never sent twice. A POST that does not come from the ops pages
// themselves is refused and replays nothing.
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { adminAudit, opsGet, opsRequest } from '../../support/ops-client.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call, createDraft } from '../../support/scenarios.ts';

describe.each(APP_ENGINES)('replaying forwards from the ops pages on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  let failedId: string;
  let deliveredId: string;
  const from = new Date(Date.now() - 3_600_000).toISOString();
  const to = () => new Date(Date.now() + 3_600_000).toISOString();

  const ledgerOf = (referralId: string) =>
    t.ctx.db
      .selectFrom('ehr_submissions')
      .select(['id', 'outcome', 'http_status', 'replay_of'])
      .where('referral_id', '=', referralId)
      .orderBy('attempted_at')
      .execute();
  const stateOf = async (referralId: string) =>
    (
      await t.ctx.db
        .selectFrom('referrals')
        .select('ehr_state')
        .where('id', '=', referralId)
        .executeTakeFirstOrThrow()
    ).ehr_state;

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp(engine, ehr, { env: { OPS_DASHBOARD_WRITE: 'true', EHR_MAX_ATTEMPTS: '3' } });
    t.startBackground();
    await ehr.setBehaviour({ statuses: [422] });
    failedId = (await createDraft(t)).id;
    await call(t, t.sender, 'POST', `/api/v1/referrals/${failedId}/submit`, {});
    await eventually(
      'the forward refused for good',
      async () => ((await stateOf(failedId)) === 'failed' ? true : undefined),
      t.forwardWithinMs,
    );
    deliveredId = (await createDraft(t)).id;
    await call(t, t.sender, 'POST', `/api/v1/referrals/${deliveredId}/submit`, {});
    await eventually(
      'the forward delivered',
      async () => ((await stateOf(deliveredId)) === 'forwarded' ? true : undefined),
      t.forwardWithinMs,
    );
  }, 120_000);
  afterAll(async () => {
    await t.close();
    await ehr.stop();
  });

  const query = () => new URLSearchParams({ ledger: 'forwards', from, to: to() }).toString();

  it('refuses a replay that does not come from the ops pages, and replays nothing', async () => {
    const res = await opsRequest(t, t.ops, {
      method: 'POST',
      url: '/admin/ledger/replay',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
      payload: query(),
    });
    expect(res.statusCode).toBe(403);
    expect(String(res.headers['content-type'])).toContain('application/problem+json');
    expect((await ledgerOf(failedId)).map((r) => r.outcome)).toEqual(['failed']);
  });

  it('says first what it would replay, then replays it once through the worker, never what the EHR took', async () => {
    const dry = await opsGet(t, `/admin/ledger/replay?${query()}`);
    expect(dry.statusCode, dry.body).toBe(200);
    const $ = cheerio.load(dry.body);
    expect($('[data-matched]').attr('data-matched')).toBe('2');
    expect($('[data-replay]').attr('data-replay')).toBe('1');
    expect($('[data-reason="acknowledged"]').text()).toContain('1 skipped');
    const [failedAttempt] = await ledgerOf(failedId);
    expect($(`tr[data-candidate="${failedAttempt?.id}"]`).length).toBe(1);
    // The confirmation's form carries the filter to the POST.
    const fields = new URLSearchParams(
      $('form[method="post"] input[type="hidden"]')
        .toArray()
        .map((input): [string, string] => [$(input).attr('name') ?? '', $(input).attr('value') ?? '']),
    );
    expect(fields.get('from')).toBe(from);

    const done = await opsRequest(t, t.ops, {
      method: 'POST',
      url: '/admin/ledger/replay',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'sec-fetch-site': 'same-origin',
        origin: 'http://localhost:80',
      },
      payload: fields.toString(),
    });
    expect(done.statusCode, done.body).toBe(200);
    const $done = cheerio.load(done.body);
    expect($done('[data-replayed]').attr('data-replayed')).toBe('1');

    await eventually(
      'the replayed forward delivered',
      async () => ((await stateOf(failedId)) === 'forwarded' ? true : undefined),
      t.forwardWithinMs,
    );
    const rows = await ledgerOf(failedId);
    expect(rows.map((r) => [r.outcome, r.http_status])).toEqual([
      ['failed', 422],
      ['delivered', 201],
    ]);
    expect(rows[1]?.replay_of).toBe(failedAttempt?.id);
    expect(await ehr.deliveries({ referralId: failedId })).toHaveLength(1);
    expect(await ehr.deliveries({ referralId: deliveredId })).toHaveLength(1);
    expect((await ledgerOf(deliveredId)).map((r) => r.outcome)).toEqual(['delivered']);

    const replays = await t.ctx.db
      .selectFrom('ledger_replays')
      .select(['ledger', 'matched', 'replayed'])
      .execute();
    expect(replays).toEqual([{ ledger: 'forwards', matched: 2, replayed: 1 }]);
    expect((await adminAudit(t)).map((r) => r.action)).toContain('admin.ledger.dry-run');
  });
});
