// SIGTERM under load: `refhub all` as a real process, with clients submitting referrals and forwards
// in flight at a slow EHR. It reports itself draining, stops accepting connections, serves the
// requests it accepted, lets the active jobs finish, and exits 0 within its grace period. No request fails, and no job stalls: a
// stalled job would be run again, and the EHR would see its message twice.
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
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { createDraft } from '../../support/scenarios.ts';
import { startRefhubProcess, type WorkerProcess } from '../../support/worker-process.ts';

const CLIENTS = 8;
const DRAFTS = 300;
const GRACE_SECONDS = 20;

describe('graceful shutdown', () => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  let server: WorkerProcess;

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp('postgres', ehr);
    server = await startRefhubProcess('all', {
      databaseUrl: await databaseUrlOf(t),
      redisUrl: testRedisUrl(),
      queuePrefix: t.prefix,
      ehrUrl: ehr.url,
      env: { SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS), RATE_LIMIT_PER_MINUTE: '100000' },
    });
  });
  afterAll(async () => {
    await server.stop();
    await t.close();
    await ehr.stop();
  });

  it('serves every accepted request, finishes active jobs and exits 0 on SIGTERM', async () => {
    // Each EHR answer takes a while, so that forwards are running when the signal comes.
    await ehr.setBehaviour({ latencyMs: 400 });
    const drafts = await Promise.all(Array.from({ length: DRAFTS }, () => createDraft(t)));
    const queue = drafts.map((d) => d.id);
    const submitted: string[] = [];
    const failures: string[] = [];
    let stopping = false;

    const client = async () => {
      // A client sends no new request once the process is told to stop, as a load balancer would.
      while (!stopping) {
        const id = queue.shift();
        if (id === undefined) return;
        try {
          const res = await request(`${server.address}/api/v1/referrals/${id}/submit`, {
            method: 'POST',
            reset: true,
            headers: { authorization: `ApiKey ${t.sender.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ institutionIdType: 'hci', institutionId: 'S1234A' }),
          });
          await res.body.text();
          if (res.statusCode === 200) submitted.push(id);
          else failures.push(`${id}: HTTP ${res.statusCode}`);
        } catch (error) {
          failures.push(`${id}: ${(error as Error).message}`);
        }
      }
    };
    const clients = Array.from({ length: CLIENTS }, client);

    await eventually('forwards in flight', async () =>
      (await t.ctx.queues.queues['ehr-forward'].getActiveCount()) > 0 && submitted.length > 20
        ? true
        : undefined,
    );
    const signalledAt = Date.now();
    stopping = true;
    process.kill(server.pid, 'SIGTERM');
    // While it drains, readiness fails, so that a load balancer takes it out.
    const readyz = await request(`${server.address}/readyz`, { reset: true });
    expect(readyz.statusCode).toBe(503);
    expect(await readyz.body.json()).toMatchObject({ status: 'draining' });
    // A second signal, as when `npm start` passes on the one a terminal sent its whole process group,
    // changes nothing: the shutdown under way goes on.
    process.kill(server.pid, 'SIGTERM');
    const exit = await server.exited;
    await Promise.all(clients);

    expect(failures).toEqual([]);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(GRACE_SECONDS * 1000);
    expect(server.output().stdout).toMatch(/"msg":"stopped"/);
    // Nothing was left running: the jobs that were active finished before the process exited.
    expect(await t.ctx.queues.queues['ehr-forward'].getActiveCount()).toBe(0);

    // What was still waiting is forwarded by the next process, each message exactly once.
    await ehr.setBehaviour({ latencyMs: 0 });
    t.startBackground();
    await eventually(
      'every submitted referral forwarded',
      async () => ((await ehr.deliveries()).length === submitted.length ? true : undefined),
      60_000,
    );
    const deliveries = await ehr.deliveries();
    expect(new Set(deliveries.map((d) => d.referralId))).toEqual(new Set(submitted));
    expect(deliveries.every((d) => d.attempts === 1)).toBe(true);
    expect((await ehr.requests()).duplicates).toBe(0);
    const attempts = await t.ctx.db
      .selectFrom('ehr_submissions')
      .select(['referral_id'])
      .where('referral_id', 'in', submitted)
      .execute();
    expect(attempts).toHaveLength(submitted.length);
  }, 180_000);
});
