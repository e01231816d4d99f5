// Incidents and the ops webhooks, through the context the serving processes build (OPS_WEBHOOK_URL set
// to a real HTTP receiver of the test's own): the EHR's circuit opened in the database opens one
// incident and sends one signed `incident.opened`, however many sweeps see it open; closed, the
// incident resolves and sends one `incident.resolved`, after the opening. An event the receiver
// refuses is sent again once its wait has passed (not before), and the receiver gets each event once
// it takes it. A failed retention run opens an incident of its own, resolved by the next that
// succeeds. No event carries patient data: a canary referral's values appear in none.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { v7 as uuidv7 } from 'uuid';
import { newSigningSecret } from '../../src/domain/webhooks-signature.ts';
import { opsWebhookBackoffMs } from '../../src/domain/incidents.ts';
import { ENGINES } from '../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../support/fixtures/patients.ts';
import { createDraft } from '../support/scenarios.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const SWEEPS_WHILE_OPEN = 5;

interface Event {
  readonly type: string;
  readonly data: {
    readonly id: string;
    readonly condition: string;
    readonly resolvedAt: string | null;
    readonly evidence: Record<string, unknown>;
  };
}

describe.each(ENGINES)('incidents on %s', (engine) => {
  const secret = newSigningSecret();
  let receiver: WebhookReceiver;
  let t: TestApp;
  let now = new Date('2030-03-01T09:00:00.000Z');
  const later = (ms: number) => {
    now = new Date(now.getTime() + ms);
  };

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    t = await createTestApp(engine, {
      clock: { now: () => now },
      env: { OPS_WEBHOOK_URL: `${receiver.url}/ops`, OPS_WEBHOOK_SECRET: secret },
    });
    // A referral full of patient data, which no event may carry.
    await createDraft(t, CANARY);
  });
  afterEach(() => {
    receiver.answer({ status: 204 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const circuit = () => t.ctx.stores.forwarding.circuit;
  /**
   * The events of the circuit's incidents the receiver took, each signature checked with the
   * `standardwebhooks` package as a receiver checks it (its `verify` would also hold the timestamp to
   * the real clock, which this test moves on).
   */
  const circuitEvents = () =>
    receiver
      .deliveries()
      .filter((d) => d.status >= 200 && d.status < 300)
      .map((d) => {
        const signed = new Webhook(secret).sign(
          d.headers['webhook-id'] ?? '',
          new Date(Number(d.headers['webhook-timestamp']) * 1000),
          d.body,
        );
        expect(d.headers['webhook-signature']?.split(' ')).toContain(signed);
        return JSON.parse(d.body) as Event;
      })
      .filter((e) => e.data.condition === 'ehr-circuit-open');

  /** Every delivery of the circuit's events, taken or refused. */
  const circuitDeliveries = () =>
    receiver.deliveries().filter((d) => d.body.includes('"condition":"ehr-circuit-open"'));

  it('sends one opening while the condition stays true, and one resolving once it is false', async () => {
    await t.ctx.incidents.sweep();
    expect(circuitDeliveries()).toEqual([]);

    expect(await circuit().open(now, 15_000)).toBe(true);
    for (let i = 0; i < SWEEPS_WHILE_OPEN; i++) {
      later(60_000);
      await t.ctx.incidents.sweep();
    }
    const opened = circuitEvents();
    expect(opened.map((e) => e.type)).toEqual(['incident.opened']);
    expect(opened[0]?.data.evidence).toMatchObject({ open: true });
    expect((await t.ctx.stores.incidents.open()).map((i) => i.condition)).toContain('ehr-circuit-open');

    expect(await circuit().close(now)).toBe(true);
    later(60_000);
    await t.ctx.incidents.sweep();
    expect((await t.ctx.stores.incidents.open()).map((i) => i.condition)).not.toContain('ehr-circuit-open');
    for (let i = 0; i < SWEEPS_WHILE_OPEN; i++) {
      later(60_000);
      await t.ctx.incidents.sweep();
    }
    const events = circuitEvents();
    expect(events.map((e) => e.type)).toEqual(['incident.opened', 'incident.resolved']);
    expect(new Set(events.map((e) => e.data.id)).size).toBe(1);
    expect(typeof events[1]?.data.resolvedAt).toBe('string');
    // Each event's ID stays the same on a retry, so a receiver can drop a repeat.
    const ids = circuitDeliveries().map((d) => d.headers['webhook-id']);
    expect(ids).toEqual([`${events[0]?.data.id}.opened`, `${events[0]?.data.id}.resolved`]);
  });

  it('sends an event the receiver refused again once its wait has passed, then the next in order', async () => {
    const before = circuitDeliveries().length;
    receiver.answer({ status: 503 });
    expect(await circuit().open(now, 15_000)).toBe(true);
    expect((await t.ctx.incidents.sweep()).failed).toBe(1);
    expect(circuitDeliveries().map((d) => d.status)).toEqual([...Array<number>(before).fill(204), 503]);

    // Closed before the opening was delivered: both wait, the opening first.
    expect(await circuit().close(now)).toBe(true);
    receiver.answer({ status: 204 });
    later(opsWebhookBackoffMs(1) / 2);
    await t.ctx.incidents.sweep();
    expect(circuitDeliveries()).toHaveLength(before + 1);

    later(opsWebhookBackoffMs(1));
    await t.ctx.incidents.sweep();
    const events = circuitEvents();
    expect(events.slice(2).map((e) => e.type)).toEqual(['incident.opened', 'incident.resolved']);
    expect(events[2]?.data.id).toBe(events[3]?.data.id);
    expect(events[2]?.data.id).not.toBe(events[0]?.data.id);

    later(60_000);
    await t.ctx.incidents.sweep();
    expect(circuitDeliveries()).toHaveLength(before + 3);
  });

  // The in-process twin of RefhubRetentionFailing: the last retention run failed (or died and was ended
  // as abandoned) opens it; the next run that succeeds resolves it.
  it('opens an incident when the last retention run failed, and resolves it when one succeeds', async () => {
    const retentionEvents = () =>
      receiver
        .deliveries()
        .filter((d) => d.status >= 200 && d.status < 300)
        .map((d) => JSON.parse(d.body) as Event)
        .filter((e) => e.data.condition === 'retention-failing');
    const run = (outcome: 'failed' | 'succeeded') =>
      t.ctx.db
        .insertInto('retention_runs')
        .values({
          id: uuidv7(),
          started_by: `retention.test.${outcome}`,
          started_at: now,
          heartbeat_at: now,
          finished_at: now,
          outcome,
        })
        .execute();
    await run('failed');
    later(60_000);
    await t.ctx.incidents.sweep();
    await t.ctx.incidents.sweep();
    expect(retentionEvents().map((e) => e.type)).toEqual(['incident.opened']);
    expect(retentionEvents()[0]?.data.evidence).toMatchObject({
      lastRunFailed: true,
      lastRunAbandoned: false,
    });

    await run('succeeded');
    later(60_000);
    await t.ctx.incidents.sweep();
    await t.ctx.incidents.sweep();
    expect(retentionEvents().map((e) => e.type)).toEqual(['incident.opened', 'incident.resolved']);
  });

  it('carries no patient data', () => {
    const deliveries = receiver.deliveries();
    expect(deliveries.length).toBeGreaterThan(0);
    const everything = deliveries.map((d) => `${d.path}\n${JSON.stringify(d.headers)}\n${d.body}`).join('\n');
    for (const marker of [...CANARY_MARKERS, CANARY.clinicalInfo]) expect(everything).not.toContain(marker);
    for (const d of deliveries) {
      const evidence = (JSON.parse(d.body) as Event).data.evidence;
      for (const value of Object.values(evidence)) expect(['number', 'boolean']).toContain(typeof value);
    }
  });
});
