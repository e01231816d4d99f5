// The queue dashboard and the /admin page against the real bridge: real Redis under a queue prefix of
// this app, the workers running, the sandbox EHR as its own process, and the store on both engines.
// Read-only unless OPS_DASHBOARD_WRITE=true, on the server and not only in bull-board's buttons; a
// failed forward can be retried from it in write mode; the /admin page counts what waits; and no
// dashboard answer carries a canary patient's data.
import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import * as cheerio from 'cheerio';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NOT_SHOWN, REASON_NOT_SHOWN } from '../../../src/api/admin/job-redaction.ts';
import {
  BROWSER_TIME_LOCALE,
  browserDateTimeFormat,
  displayTimeIn,
} from '../../../src/domain/display-time.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { createBridgeApp, eventually, startEhr, testRedisUrl, type BridgeApp } from '../../support/bridge.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call, createDraft, type ReferralJson } from '../../support/scenarios.ts';
import { apiKeyIdOf } from '../../support/store-inspection.ts';
import { adminAudit, opsGet, opsRequest } from '../../support/ops-client.ts';

const API = '/admin/queues/api';
const STATUSES = [
  'latest',
  'active',
  'waiting',
  'waiting-children',
  'prioritized',
  'completed',
  'failed',
  'delayed',
  'paused',
];

interface BoardJob {
  id: string;
  failedReason?: string;
  data: Record<string, unknown>;
}
interface BoardQueue {
  name: string;
  readOnlyMode: boolean;
  allowRetries: boolean;
  isPaused: boolean;
  counts: Record<string, number>;
  jobs: BoardJob[];
}

describe.each(APP_ENGINES)('the queue dashboard on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;

  beforeAll(async () => {
    ehr = await startEhr();
  });
  afterAll(async () => {
    await ehr.stop();
  });
  afterEach(async () => {
    await t.close();
    await ehr.reset();
  });

  const open = async (env: Record<string, string> = {}, clock?: { now(): Date }) => {
    t = await createBridgeApp(engine, ehr, {
      env: { EHR_MAX_ATTEMPTS: '3', ...env },
      ...(clock === undefined ? {} : { clock }),
    });
    return t;
  };
  const read = async (id: string) =>
    (await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${id}?requesterIdentifier=dr.lim@example.org&institutionIdType=hci&institutionId=S1234A`,
    )) as ReferralJson & { ehrForwarding: { state: string } };
  const settled = (id: string, state: string) =>
    eventually(`ehrForwarding.state ${state}`, async () => {
      const r = await read(id);
      return r.ehrForwarding.state === state ? r : undefined;
    });
  /** A referral whose forward the EHR refused for good (HTTP 422). */
  const failedForward = async (fields: Record<string, unknown> = {}) => {
    await ehr.setBehaviour({ statuses: [422] });
    const draft = await createDraft(t, fields);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
    t.startBackground();
    await settled(draft.id, 'failed');
    return draft;
  };
  const queue = async (name: string, status = 'latest'): Promise<BoardQueue> => {
    const res = await opsGet(t, `${API}/queues?activeQueue=${name}&status=${status}&page=1&jobsPerPage=50`);
    expect(res.statusCode, res.body).toBe(200);
    const found = res.json<{ queues: BoardQueue[] }>().queues.find((q) => q.name === name);
    expect(found).toBeDefined();
    return found!;
  };
  const failedJobOf = async (referralId: string): Promise<BoardJob> =>
    eventually('the failed job', async () =>
      (await queue('ehr-forward', 'failed')).jobs.find((j) => j.data.referralId === referralId),
    );

  it('tells the board’s page the display zone, and one format for every time it shows', async () => {
    await open({ DISPLAY_TIME_ZONE: 'Europe/London' });
    const res = await opsGet(t, '/admin/queues');
    expect(res.statusCode, res.body).toBe(200);
    const config = JSON.parse(cheerio.load(res.body)('script#__UI_CONFIG__').text()) as {
      locale: { lng: string };
      dateFormats: Record<'short' | 'common' | 'full', Intl.DateTimeFormatOptions>;
    };
    expect(config.locale).toEqual({ lng: BROWSER_TIME_LOCALE });
    const format = browserDateTimeFormat('Europe/London');
    expect(config.dateFormats).toEqual({ short: format, common: format, full: format });
    // What a browser writes with it: the page's format, in the display zone, with the zone named.
    const at = new Date('2026-07-25T00:05:00.000Z');
    expect(new Intl.DateTimeFormat(config.locale.lng, config.dateFormats.full).format(at)).toBe(
      'Sat, 25 Jul 2026, 01:05 BST',
    );
    expect(displayTimeIn('Europe/London').dateTime(at)).toBe('Sat 25 Jul 2026, 01:05 BST');
  });

  it('is read-only by default, and the server refuses every change, not only the board', async () => {
    await open();
    const draft = await failedForward();
    const job = await failedJobOf(draft.id);
    const before = await queue('ehr-forward');
    expect(before).toMatchObject({ readOnlyMode: true, allowRetries: false, isPaused: false });

    const changes: ['PUT' | 'POST' | 'PATCH', string, Record<string, unknown>?][] = [
      ['PUT', `${API}/queues/ehr-forward/${job.id}/retry`],
      ['PUT', `${API}/queues/ehr-forward/retry/failed`],
      ['PUT', `${API}/queues/ehr-forward/${job.id}/clean`],
      ['PUT', `${API}/queues/ehr-forward/clean/failed`],
      ['PUT', `${API}/queues/ehr-forward/promote`],
      ['PUT', `${API}/queues/ehr-forward/pause`],
      ['PUT', `${API}/queues/pause`],
      ['PUT', `${API}/queues/ehr-forward/empty`],
      ['PUT', `${API}/queues/ehr-forward/obliterate`, {}],
      ['POST', `${API}/queues/ehr-forward/add`, { name: 'forward', data: { referralId: draft.id } }],
      ['PATCH', `${API}/queues/ehr-forward/${job.id}/update-data`, { data: { referralId: draft.id } }],
    ];
    const auditBefore = (await adminAudit(t)).length;
    for (const [method, url, payload] of changes) {
      const res = await opsRequest(t, t.ops, { method, url, ...(payload === undefined ? {} : { payload }) });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      const problem = res.json<{ code: string; detail: string }>();
      expect(problem.code).toBe('forbidden_role');
      expect(problem.detail).toContain('OPS_DASHBOARD_WRITE=true');
    }
    const after = await queue('ehr-forward');
    expect(after.counts).toEqual(before.counts);
    expect(after.isPaused).toBe(false);
    expect((await failedJobOf(draft.id)).id).toBe(job.id);
    expect((await read(draft.id)).ehrForwarding.state).toBe('failed');

    const denied = (await adminAudit(t)).slice(auditBefore);
    expect(denied).toHaveLength(changes.length);
    expect(denied[0]).toMatchObject({
      action: 'admin.queues.retry',
      outcome: 'denied',
      apiKeyId: await apiKeyIdOf(t, t.ops),
      referralIds: [draft.id],
    });
    expect(new Set(denied.map((r) => r.outcome))).toEqual(new Set(['denied']));
  });

  it('retries a failed forward from the dashboard when OPS_DASHBOARD_WRITE=true', async () => {
    await open({ OPS_DASHBOARD_WRITE: 'true' });
    const draft = await failedForward();
    const job = await failedJobOf(draft.id);
    expect(job.failedReason).toBe('HTTP_422');
    expect(await queue('ehr-forward')).toMatchObject({ readOnlyMode: false, allowRetries: true });

    // The EHR accepts again (its one 422 is spent): the retry delivers the referral's current form.
    const res = await opsRequest(t, t.ops, {
      method: 'PUT',
      url: `${API}/queues/ehr-forward/${job.id}/retry`,
    });
    expect(res.statusCode, res.body).toBe(204);
    await settled(draft.id, 'forwarded');
    const ledger = (await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${draft.id}/ehr-submissions?institutionIdType=hci&institutionId=S1234A`,
    )) as unknown as { data: { outcome: string; httpStatus?: number }[] };
    expect(ledger.data.map((r) => [r.outcome, r.httpStatus])).toEqual([
      ['failed', 422],
      ['delivered', 201],
    ]);
    expect(await ehr.deliveries({ referralId: draft.id })).toHaveLength(1);
    expect((await adminAudit(t)).filter((r) => r.action === 'admin.queues.retry')).toEqual([
      expect.objectContaining({ outcome: 'success', referralIds: [draft.id] }),
    ]);
  });

  it('in write mode still refuses all but retry, promote and remove, and changes sent from another site', async () => {
    await open({ OPS_DASHBOARD_WRITE: 'true' });
    const refused: ['PUT' | 'POST', string, Record<string, string>, string][] = [
      ['PUT', `${API}/queues/ehr-forward/retry/completed`, {}, 'retry, promote and remove'],
      ['PUT', `${API}/queues/ehr-forward/pause`, {}, 'retry, promote and remove'],
      ['PUT', `${API}/queues/ehr-forward/empty`, {}, 'retry, promote and remove'],
      ['POST', `${API}/queues/ehr-forward/add`, {}, 'retry, promote and remove'],
      [
        'PUT',
        `${API}/queues/ehr-forward/retry/failed`,
        { origin: 'https://elsewhere.example' },
        'another site',
      ],
      ['PUT', `${API}/queues/ehr-forward/retry/failed`, { 'sec-fetch-site': 'cross-site' }, 'another site'],
      ['PUT', `${API}/queues/ehr-forward/retry/failed`, { origin: 'null' }, 'another site'],
    ];
    for (const [method, url, headers, reason] of refused) {
      const res = await opsRequest(t, t.ops, { method, url, headers });
      expect(res.statusCode, `${method} ${url} ${JSON.stringify(headers)}`).toBe(403);
      expect(res.json<{ detail: string }>().detail).toContain(reason);
    }
    // The dashboard's own page sends its Origin, which names this host.
    const own = await opsRequest(t, t.ops, {
      method: 'PUT',
      url: `${API}/queues/ehr-forward/retry/failed`,
      headers: { origin: 'http://localhost:80', 'sec-fetch-site': 'same-origin' },
    });
    expect(own.statusCode, own.body).toBe(200);
    expect(own.json()).toEqual({ retried: 0, skipped: 0 });
  });

  it('shows the outbox backlog, its oldest row, the queue counts and the failed forwards on /admin', async () => {
    let offsetMs = 0;
    await open({}, { now: () => new Date(Date.now() + offsetMs) });
    // Submitted while nothing runs in the background: its work waits in the outbox.
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
    const { count } = await t.ctx.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('processed_at', 'is', null)
      .executeTakeFirstOrThrow();
    expect(Number(count)).toBeGreaterThan(0);
    // The backlog counts the events no webhook relay has read yet too: the draft's and the submit's.
    const events = await t.ctx.db
      .selectFrom('referral_events')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('referral_id', '=', draft.id)
      .executeTakeFirstOrThrow();
    expect(Number(events.count)).toBe(2);

    const page = async () => {
      const res = await opsGet(t, '/admin');
      expect(res.statusCode, res.body).toBe(200);
      return cheerio.load(res.body);
    };
    const stat = ($: cheerio.CheerioAPI, id: string) => $(`[data-stat="${id}"] .stat__value`).text().trim();
    offsetMs = 2 * 3600_000;
    let $ = await page();
    expect(stat($, 'outbox-backlog')).toBe(String(Number(count) + Number(events.count)));
    expect(stat($, 'outbox-oldest')).toBe('2 h 0 min');
    expect(stat($, 'failed-forwards')).toBe('0');
    expect(stat($, 'redis')).toBe('Healthy');
    expect($('[data-failed-none]')).toHaveLength(1);

    // Now the background runs, and the EHR refuses the forward for good.
    await ehr.setBehaviour({ statuses: [422] });
    t.startBackground();
    await settled(draft.id, 'failed');
    $ = await eventually('the outbox to drain', async () => {
      const current = await page();
      return stat(current, 'outbox-backlog') === '0' ? current : undefined;
    });
    expect(stat($, 'outbox-oldest')).toBe('None');
    expect(stat($, 'failed-forwards')).toBe('1');
    const row = $(`[data-failed-forward="${draft.id}"] td`)
      .map((_i, el) => $(el).text().trim())
      .get();
    expect(row[0]).toBe(draft.id);
    // The last attempt's time as every page writes times: in the display zone, with the zone named.
    const failed = await t.ctx.db
      .selectFrom('referrals')
      .select('ehr_last_attempt_at')
      .where('id', '=', draft.id)
      .executeTakeFirstOrThrow();
    expect(row[1]).toBe(t.ctx.displayTime.dateTime(failed.ehr_last_attempt_at!));
    expect(row[1]).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} SGT$/);
    expect(row.slice(2)).toEqual(['HTTP 422', '1']);
    expect($('[data-queue="ehr-forward"] [data-count="failed"]').text()).toBe('1');

    const audit = (await adminAudit(t)).filter((r) => r.action === 'admin.overview.read');
    expect(audit.at(-1)).toMatchObject({ outcome: 'success', referralIds: [draft.id] });
  });

  it('keeps canary patient data out of every dashboard answer and out of the logs', async () => {
    await open({ OPS_DASHBOARD_WRITE: 'true' });
    const refused = await failedForward(CANARY);
    const delivered = await createDraft(t, CANARY);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${delivered.id}/submit`, {});
    await settled(delivered.id, 'forwarded');

    const bodies: string[] = [];
    const fetch = async (url: string) => {
      const res = await opsGet(t, url);
      expect(res.statusCode, `${url}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
      bodies.push(res.body);
      return res;
    };
    await fetch('/admin');
    await fetch('/admin/queues');
    await fetch(`${API}/queues`);
    await fetch(`${API}/job-schedulers`);
    await fetch(`${API}/redis/stats`);
    const jobs = new Map<string, { name: string; id: string }>();
    for (const name of ['ehr-forward', 'reminders']) {
      for (const path of ['metrics', 'default-job-options', 'workers', 'rate-limit', 'job-data-schema']) {
        await fetch(`${API}/queues/${name}/${path}`);
      }
      for (const status of STATUSES) {
        const res = await fetch(`${API}/queues?activeQueue=${name}&status=${status}&page=1&jobsPerPage=50`);
        const listed = res.json<{ queues: BoardQueue[] }>().queues.find((q) => q.name === name);
        for (const job of listed?.jobs ?? []) jobs.set(`${name}/${job.id}`, { name, id: job.id });
      }
    }
    // The refused forward, the delivered one, and at least one reminder firing waiting to fire.
    expect(jobs.size).toBeGreaterThanOrEqual(3);
    for (const { name, id } of jobs.values()) {
      const job = encodeURIComponent(id);
      await fetch(`/admin/queues/queue/${name}/${job}`);
      for (const suffix of ['', '/logs', '/flow']) await fetch(`${API}/queues/${name}/${job}${suffix}`);
    }

    const everything = bodies.join('\n');
    expect(everything).toContain(refused.id);
    expect(everything).toContain(delivered.id);
    expect(everything).toContain('HTTP_422');
    for (const marker of CANARY_MARKERS) {
      expect(everything).not.toContain(marker);
      expect(t.logs.join('\n')).not.toContain(marker);
    }
  });

  it('redacts what a defective job would carry: its data, error, stack, progress, logs and result', async () => {
    await open();
    // Jobs written past the registry's types, as a defect elsewhere could: the board must still hide it.
    const referralId = randomUUID();
    const defective = { referralId, version: 1, requestId: randomUUID(), patientName: CANARY.patientName };
    const forwards = t.ctx.queues.queues['ehr-forward'];
    await forwards.add('forward', defective, { jobId: `${referralId}.v1` });
    await forwards.add('forward', defective, { jobId: `${referralId}.v2` });
    const connection = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    const worker = new Worker('ehr-forward', null, {
      connection,
      prefix: t.ctx.config.queuePrefix,
      autorun: false,
    });
    try {
      const first = await worker.getNextJob('manual');
      await first.log(`processing ${CANARY.patientName}`);
      await first.updateProgress({ uin: CANARY.patientUin });
      await first.moveToFailed(new Error(`duplicate key: (uin)=(${CANARY.patientUin})`), 'manual', false);
      const second = await worker.getNextJob('manual');
      await second.moveToCompleted({ patient: CANARY.patientName, dob: CANARY.dob }, 'manual', false);
    } finally {
      await worker.close();
      connection.disconnect();
    }
    expect(await t.redisDump()).toContain(CANARY.patientUin);

    const bodies: string[] = [];
    const fetch = async (url: string) => {
      const res = await opsGet(t, url);
      expect(res.statusCode, url).toBe(200);
      bodies.push(res.body);
      return res.json<Record<string, unknown>>();
    };
    const failed = await queue('ehr-forward', 'failed');
    bodies.push(JSON.stringify(failed));
    bodies.push(JSON.stringify(await queue('ehr-forward', 'completed')));
    const detail = (await fetch(`${API}/queues/ehr-forward/${referralId}.v1`)).job;
    expect(detail).toMatchObject({
      data: { referralId, version: 1, requestId: defective.requestId, [NOT_SHOWN]: 1 },
      failedReason: REASON_NOT_SHOWN,
      stacktrace: [],
      progress: 0,
    });
    expect((await fetch(`${API}/queues/ehr-forward/${referralId}.v2`)).job).toMatchObject({
      returnValue: { patient: NOT_SHOWN, dob: NOT_SHOWN },
    });
    expect(await fetch(`${API}/queues/ehr-forward/${referralId}.v1/logs`)).toEqual([]);

    const everything = bodies.join('\n');
    expect(everything).toContain(referralId);
    for (const marker of CANARY_MARKERS) expect(everything).not.toContain(marker);
  });
});
