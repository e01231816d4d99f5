// /metrics after a walk-through: every metric the operations guide names is there, with non-zero
// values where traffic happened, and no label carries an ID or patient data. Scraping needs an ops
// key or the METRICS_TOKEN.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/domain/clock.ts';
import { createReconciler } from '../../src/queue/reconciler.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../support/bridge.ts';
import { CANARY, CANARY_MARKERS } from '../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';
import { call, createDraft } from '../support/scenarios.ts';

const TOKEN = 'metrics-token-of-at-least-32-characters';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/** The value of one sample line, e.g. `refhub_reminders_sent_total 2`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-z_]+)(\{([^}]*)\})? (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const present = new Map(
      [...(match[3] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']),
    );
    if (Object.entries(labels).every(([k, v]) => present.get(k) === v)) return Number(match[4]);
  }
  return undefined;
}

describe('metrics', () => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  let text = '';

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp('postgres', ehr, {
      env: {
        METRICS_TOKEN: TOKEN,
        RATE_LIMIT_PER_MINUTE: '25',
        REMINDER_AFTER_SECONDS: '1',
        REMINDER_INTERVAL_SECONDS: '1',
        REMINDER_MAX: '1',
      },
    });
    t.startBackground();

    // A referral that is forwarded and reminded about.
    const forwarded = await createDraft(t, CANARY);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${forwarded.id}/submit`, {});
    await eventually('the forward and the reminder', async () => {
      const rows = await t.ctx.db
        .selectFrom('reminder_notifications')
        .select('id')
        .where('referral_id', '=', forwarded.id)
        .execute();
      const delivered = await ehr.deliveries({ referralId: forwarded.id });
      return rows.length > 0 && delivered.length > 0 ? true : undefined;
    });

    // A forward whose job was lost after its outbox row was dispatched: the reconciler repairs it.
    const lost = await createDraft(t);
    await t.background?.relay.stop();
    await call(t, t.sender, 'POST', `/api/v1/referrals/${lost.id}/submit`, {});
    await t.ctx.db
      .updateTable('outbox')
      .set({ processed_at: new Date() })
      .where('referral_id', '=', lost.id)
      .execute();
    await createReconciler({
      stores: t.ctx.stores,
      clock: systemClock,
      logger: t.ctx.logger,
      producer: t.ctx.queues,
      metrics: t.ctx.metrics,
      reminderScheduleFor: (id) => t.ctx.reminders.scheduleFor(id),
      quietMs: 0,
    }).reconcileOnce();
    await eventually('the repaired forward', async () =>
      (await ehr.deliveries({ referralId: lost.id })).length > 0 ? true : undefined,
    );

    // Past the rate limit.
    for (let i = 0; i < 30; i++) {
      await t.request(t.sender, {
        method: 'GET',
        url: `/api/v1/institutions/hci/S1234A/referrals`,
      });
    }

    const res = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `ApiKey ${t.ops.key}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    text = res.body;
  }, 120_000);
  afterAll(async () => {
    await t.close();
    await ehr.stop();
  });

  it('times HTTP requests by route pattern, method and status class', () => {
    expect(
      sample(text, 'refhub_http_request_duration_seconds_count', {
        route: '/api/v1/referrals/:referralId/submit',
        method: 'POST',
        status_class: '2xx',
      }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      sample(text, 'refhub_http_request_duration_seconds_count', {
        route: '/api/v1/institutions/:institutionIdType/:institutionId/referrals',
        status_class: '4xx',
      }),
    ).toBeGreaterThan(0);
  });

  it('counts rate-limit rejections', () => {
    expect(sample(text, 'refhub_rate_limit_rejections_total')).toBeGreaterThan(0);
  });

  it('reports each queue’s waiting, active, delayed and failed jobs', () => {
    for (const queue of ['ehr-forward', 'reminders']) {
      for (const state of ['waiting', 'active', 'delayed', 'failed']) {
        expect(
          sample(text, 'refhub_queue_jobs', { queue, state }),
          `${queue} ${state}`,
        ).toBeGreaterThanOrEqual(0);
      }
    }
  });

  it('reports the outbox backlog and the oldest row’s age', () => {
    expect(sample(text, 'refhub_outbox_backlog')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'refhub_outbox_oldest_age_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('counts EHR forward outcomes by status class, with an attempt-latency histogram', () => {
    expect(
      sample(text, 'refhub_ehr_forward_attempts_total', { outcome: 'delivered', status_class: '2xx' }),
    ).toBe(2);
    expect(sample(text, 'refhub_ehr_forward_attempt_duration_seconds_count', { outcome: 'delivered' })).toBe(
      2,
    );
  });

  it('counts reminders sent and reconciler repairs', () => {
    expect(sample(text, 'refhub_reminders_sent_total')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'refhub_reconciler_repairs_total', { kind: 'forward' })).toBe(1);
  });

  it('has no ID and no patient data in any label or value', () => {
    expect(text).not.toMatch(UUID);
    for (const marker of CANARY_MARKERS) expect(text).not.toContain(marker);
  });

  it('takes the METRICS_TOKEN as a bearer token, and refuses other callers', async () => {
    const scrape = (authorization?: string) =>
      t.app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
    expect((await scrape(`Bearer ${TOKEN}`)).statusCode).toBe(200);
    for (const [authorization, status, code] of [
      [undefined, 401, 'unauthorized'],
      [`Bearer ${TOKEN}x`, 401, 'unauthorized'],
      ['ApiKey rfh_test_notakeyatall', 401, 'unauthorized'],
      [`ApiKey ${t.sender.key}`, 403, 'forbidden_role'],
    ] as const) {
      const res = await scrape(authorization);
      expect(res.statusCode, String(authorization)).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ code });
    }
  });
});
