// The EHR's circuit. Its decisions, on both engines, with a clock of the test's own: failures in a row
// open it, an answer in between starts the count again, an open circuit lets one probe through at
// growing intervals and closes on the first answer. Then the whole bridge against a sandbox EHR that
// fails for a few seconds and recovers: forwarding pauses by itself, no forward is lost or counted
// as failed although each may only make four attempts, and it resumes by itself, logged, counted and
// audited.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ehrCircuitRepository } from '../../../src/db/forwarding/circuit.ts';
import type { Store } from '../../../src/db/database.ts';
import { createStores } from '../../../src/db/stores.ts';
import type { EhrAnswer } from '../../../src/workers/forwarding/ehr-client.ts';
import { createEhrCircuit, type CircuitSettings } from '../../../src/workers/forwarding/ehr-circuit.ts';
import { createLogger } from '../../../src/logger.ts';
import { createMetrics } from '../../../src/observability/metrics.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import { testDataKeys } from '../../support/data-keys.ts';
import { APP_ENGINES, openTestStore } from '../../support/engines.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call, createDraft } from '../../support/scenarios.ts';

const UNAVAILABLE: EhrAnswer = { kind: 'response', status: 503, reference: null, retryAfterMs: undefined };
const REFUSED: EhrAnswer = { kind: 'network-error', code: 'ECONNREFUSED' };
const ACCEPTED: EhrAnswer = { kind: 'response', status: 201, reference: 'EHR-1', retryAfterMs: undefined };
const INVALID: EhrAnswer = { kind: 'response', status: 422, reference: null, retryAfterMs: undefined };

const SETTINGS: CircuitSettings = {
  failures: 3,
  windowMs: 60_000,
  probeBaseMs: 10_000,
  probeMaxMs: 40_000,
  probeLeaseMs: 35_000,
};

describe.each(APP_ENGINES)("the EHR circuit's decisions on %s", (engine) => {
  let store: Store;
  let at = Date.parse('2026-06-04T03:00:00.000Z');
  const clock = { now: () => new Date(at) };
  const tick = (ms: number) => {
    at += ms;
  };
  const lines: string[] = [];
  const logger = createLogger(
    { logLevel: 'info', env: 'test' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );

  beforeAll(async () => {
    store = await openTestStore(engine);
  });
  afterAll(async () => {
    await store.close();
  });

  const circuit = (onClosed?: () => Promise<void>) =>
    createEhrCircuit({
      stores: createStores(store.db, testDataKeys()),
      clock,
      logger,
      metrics: createMetrics(),
      settings: SETTINGS,
      random: () => 0,
      ...(onClosed === undefined ? {} : { onClosed }),
    });
  const row = () => ehrCircuitRepository(store.db).read();

  it('stays closed while answers come between failures, and opens after three in a row', async () => {
    const c = circuit();
    await c.observe(UNAVAILABLE, false);
    await c.observe(REFUSED, false);
    await c.observe(INVALID, false); // a refusal is an answer: the EHR is there
    expect(await row()).toMatchObject({ state: 'closed', failures: 0 });
    await c.observe(UNAVAILABLE, false);
    await c.observe(UNAVAILABLE, false);
    tick(61_000); // the window passed: the count starts again
    await c.observe(UNAVAILABLE, false);
    expect(await row()).toMatchObject({ state: 'closed', failures: 1 });
    await c.observe(REFUSED, false);
    await c.observe(UNAVAILABLE, false);
    expect(await row()).toMatchObject({ state: 'open', probeIntervalMs: 10_000 });
    expect(await c.admit()).toEqual({ kind: 'wait', until: new Date(at + 10_000) });
  });

  it('lets one probe through when it is due, and waits longer after each failed probe', async () => {
    const c = circuit();
    const other = circuit();
    tick(10_000);
    expect(await c.admit()).toEqual({ kind: 'probe' });
    // Another worker meanwhile: the probe is taken, so it waits.
    expect((await other.admit()).kind).toBe('wait');
    await c.observe(UNAVAILABLE, true);
    expect(await row()).toMatchObject({ state: 'open', probeIntervalMs: 20_000 });
    const failedAt = at;
    tick(1_001); // what a worker knows of the circuit is at most a second old
    expect(await other.admit()).toEqual({ kind: 'wait', until: new Date(failedAt + 20_000) });
    tick(19_000);
    expect(await other.admit()).toEqual({ kind: 'probe' });
    await other.observe(REFUSED, true);
    expect(await row()).toMatchObject({ probeIntervalMs: 40_000 });
    tick(40_000);
    expect(await c.admit()).toEqual({ kind: 'probe' });
    await c.observe(UNAVAILABLE, true);
    expect(await row()).toMatchObject({ probeIntervalMs: 40_000 }); // at most probeMaxMs
  });

  it('closes on the first answer to a probe, and lets every forward go again', async () => {
    let resumed = 0;
    const c = circuit(() => {
      resumed++;
      return Promise.resolve();
    });
    tick(40_000);
    expect(await c.admit()).toEqual({ kind: 'probe' });
    await c.observe(ACCEPTED, true);
    expect(await row()).toMatchObject({ state: 'closed', failures: 0, probeAt: null });
    expect(resumed).toBe(1);
    expect(await c.admit()).toEqual({ kind: 'send' });
    const audit = await store.db
      .selectFrom('audit_events')
      .select(['action', 'system', 'api_key_id'])
      .where('action', 'like', 'ehr.circuit.%')
      .orderBy('seq')
      .execute();
    expect(audit).toEqual([
      { action: 'ehr.circuit.opened', system: 'refhub', api_key_id: null },
      { action: 'ehr.circuit.closed', system: 'refhub', api_key_id: null },
    ]);
    const messages = lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages.filter((m) => m.startsWith('ehr circuit opened'))).toHaveLength(1);
    expect(messages.filter((m) => m.startsWith('ehr circuit closed'))).toHaveLength(1);
    expect(messages.filter((m) => m.startsWith('ehr circuit probe failed'))).toHaveLength(3);
  });
});

describe.each(APP_ENGINES)('an EHR that fails for a while, and recovers, on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  const REFERRALS = 4;

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp(engine, ehr, {
      env: {
        EHR_MAX_ATTEMPTS: '4',
        EHR_CIRCUIT_FAILURES: '3',
        EHR_CIRCUIT_PROBE_SECONDS: '1',
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await ehr.stop();
  });

  it('pauses forwarding, probes, and resumes by itself; no forward is lost or failed', async () => {
    await ehr.setBehaviour({ statuses: Array.from({ length: 1000 }, () => 503) });
    const ids: string[] = [];
    for (let i = 0; i < REFERRALS; i++) {
      const draft = await createDraft(t);
      await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
      ids.push(draft.id);
    }
    t.startBackground();
    await eventually('the circuit open', async () =>
      (await ehrCircuitRepository(t.ctx.db).read()).state === 'open' ? true : undefined,
    );
    expect(await t.ctx.metrics.registry.getSingleMetricAsString('refhub_ehr_circuit_open')).toMatch(/ 1$/m);
    // The EHR stays down for a while: without the circuit, four attempts each (the backoff starts at
    // 20 ms) would be used up in well under a second, and every forward would fail.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const duringOutage = (await ehr.requests()).total;
    await ehr.setBehaviour({});

    await eventually(
      'every referral forwarded',
      async () => {
        const rows = await t.ctx.db
          .selectFrom('referrals')
          .select('ehr_state')
          .where('id', 'in', ids)
          .execute();
        return rows.every((r) => r.ehr_state === 'forwarded') ? rows : undefined;
      },
      30_000,
    );
    // While open, the EHR got probes only: the first failures, then one probe a second at most.
    expect(duringOutage).toBeLessThanOrEqual(REFERRALS + 4);
    const ledger = await t.ctx.db
      .selectFrom('ehr_submissions')
      .select(['outcome'])
      .where('referral_id', 'in', ids)
      .execute();
    expect(ledger.filter((r) => r.outcome === 'failed')).toEqual([]);
    expect(ledger.filter((r) => r.outcome === 'delivered')).toHaveLength(REFERRALS);
    expect(await ehrCircuitRepository(t.ctx.db).read()).toMatchObject({ state: 'closed' });
    const transitions = await t.ctx.metrics.registry.getSingleMetricAsString(
      'refhub_ehr_circuit_transitions_total',
    );
    expect(transitions).toMatch(/to="open"} 1$/m);
    expect(transitions).toMatch(/to="closed"} 1$/m);
    const logged = t.logs.map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(logged.some((m) => m.startsWith('ehr circuit opened'))).toBe(true);
    expect(logged.some((m) => m.startsWith('ehr circuit closed'))).toBe(true);
  });
});
