// Scaled out: two `refhub api` and two `refhub worker` processes on one PostgreSQL and one Redis.
// 300 referrals are created and submitted through both APIs; every one reaches the EHR with one
// message ID of its own, every timeline reads the same, and no transition was applied twice.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createBridgeApp,
  databaseUrlOf,
  eventually,
  startEhr,
  testRedisUrl,
  type BridgeApp,
} from '../../support/bridge.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { startRefhubProcess, type RefhubCommand, type WorkerProcess } from '../../support/worker-process.ts';

const REFERRALS = 300;
const CONCURRENCY = 20;

describe('two API and two worker processes', () => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  const processes: WorkerProcess[] = [];

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp('postgres', ehr);
    const settings = {
      databaseUrl: await databaseUrlOf(t),
      redisUrl: testRedisUrl(),
      queuePrefix: t.prefix,
      ehrUrl: ehr.url,
      env: { RATE_LIMIT_PER_MINUTE: '100000' },
    };
    const commands: RefhubCommand[] = ['api', 'api', 'worker', 'worker'];
    processes.push(...(await Promise.all(commands.map((c) => startRefhubProcess(c, settings)))));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await t.close();
    await ehr.stop();
  });

  const api = (i: number) => processes[i % 2]?.address ?? '';
  const post = async (base: string, path: string, body: Record<string, unknown>) => {
    const res = await request(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `ApiKey ${t.sender.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ institutionIdType: 'hci', institutionId: 'S1234A', ...body }),
    });
    const text = await res.body.text();
    expect(res.statusCode, text).toBeLessThan(300);
    return JSON.parse(text) as { id: string; version: number };
  };

  it(`forwards all ${REFERRALS} referrals submitted across both APIs, each once`, async () => {
    const ids: string[] = [];
    for (let start = 0; start < REFERRALS; start += CONCURRENCY) {
      const batch = Array.from({ length: Math.min(CONCURRENCY, REFERRALS - start) }, (_, k) => start + k);
      ids.push(
        ...(await Promise.all(
          batch.map(async (i) => {
            // Created on one API, submitted on the other.
            const draft = await post(api(i), '/api/v1/referrals', { offeringId: 'cgh-gastro', ...PATIENT });
            await post(api(i + 1), `/api/v1/referrals/${draft.id}/submit`, {});
            return draft.id;
          }),
        )),
      );
    }

    await eventually(
      `${REFERRALS} deliveries`,
      async () => ((await ehr.deliveries()).length >= REFERRALS ? true : undefined),
      120_000,
    );
    const deliveries = await ehr.deliveries();
    expect(deliveries).toHaveLength(REFERRALS);
    expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(REFERRALS);
    expect(new Set(deliveries.map((d) => d.referralId))).toEqual(new Set(ids));
    // Submitting made version 2; that is the version every EHR message carries.
    expect(deliveries.every((d) => d.version === 2 && d.messageId === `${d.referralId}.v2`)).toBe(true);

    // Every referral reaches forwarded, and every timeline is the same three sentences, in order.
    await eventually(
      'every referral recorded as forwarded',
      async () => {
        const rows = await t.ctx.db
          .selectFrom('referrals')
          .select('id')
          .where('id', 'in', ids)
          .where('ehr_state', '=', 'forwarded')
          .execute();
        return rows.length === REFERRALS ? true : undefined;
      },
      30_000,
    );
    const events = await t.ctx.db
      .selectFrom('timeline_events')
      .select(['referral_id', 'type'])
      .where('referral_id', 'in', ids)
      .orderBy('seq')
      .execute();
    const byReferral = new Map<string, string[]>();
    for (const e of events) byReferral.set(e.referral_id, [...(byReferral.get(e.referral_id) ?? []), e.type]);
    for (const id of ids) {
      expect(byReferral.get(id), id).toEqual([
        'referral.created',
        'referral.pending-acceptance',
        'ehr.forwarded',
      ]);
    }
    const referrals = await t.ctx.db
      .selectFrom('referrals')
      .select(['version', 'status', 'ehr_attempts'])
      .where('id', 'in', ids)
      .execute();
    // Recording the delivery is the bridge's bookkeeping: the version stays the one forwarded.
    expect(
      referrals.every((r) => r.version === 2 && r.status === 'pending-acceptance' && r.ehr_attempts === 1),
    ).toBe(true);
    // No transition was applied twice: one submit audited per referral, one attempt in each ledger.
    const submits = await t.ctx.db
      .selectFrom('audit_events')
      .select('referral_ids')
      .where('action', '=', 'referral.submit')
      .execute();
    expect(submits.flatMap((a) => a.referral_ids).sort()).toEqual([...ids].sort());
    const attempts = await t.ctx.db
      .selectFrom('ehr_submissions')
      .select('referral_id')
      .where('referral_id', 'in', ids)
      .execute();
    expect(attempts).toHaveLength(REFERRALS);
    expect((await ehr.requests()).duplicates).toBe(0);

    // Both workers took a share, and each says so on its own /metrics.
    const delivered = await Promise.all(
      processes.slice(2).map(async (worker) => {
        const res = await request(`${worker.address}/metrics`, {
          headers: { authorization: `ApiKey ${t.ops.key}` },
        });
        const text = await res.body.text();
        const line =
          /^refhub_ehr_forward_attempts_total\{outcome="delivered",status_class="2xx"\} (\d+)$/m.exec(text);
        return Number(line?.[1] ?? 0);
      }),
    );
    expect(
      delivered.every((n) => n > 0),
      `deliveries per worker: ${delivered.join(', ')}`,
    ).toBe(true);
    expect(delivered.reduce((a, b) => a + b, 0)).toBe(REFERRALS);
  }, 240_000);
});
