// The outbox relay on both engines, with real Redis under a queue prefix of its own: it claims due rows
// oldest first, deletes each once dispatched, shares them between relays without dispatching one twice,
// takes back the rows of a relay that died once their lease ends, and records failures as codes.
// Dispatching a row again (after a crash between the dispatch and the delete) adds no second job, and
// triggers that come while a job waits coalesce into it.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { outboxRepository, type OutboxMessage } from '../../src/db/outbox.repository.ts';
import { systemClock, type Clock } from '../../src/domain/clock.ts';
import { createOutboxRelay, type OutboxHandlers, type RelayDeps } from '../../src/queue/outbox-relay.ts';
import { forwardJobId, QUEUE_NAMES } from '../../src/queue/registry.ts';
import { outboxBatchHandlers, outboxHandlers } from '../../src/queue/outbox-topics.ts';
import { createQueueApp, manualForwardWorker, type QueueApp } from '../support/bridge.ts';
import { ENGINES } from '../support/engines.ts';
import { PATIENT } from '../support/fixtures/patients.ts';
import { call, createDraft, type ReferralJson } from '../support/scenarios.ts';

const later = (ms: number): Clock => ({ now: () => new Date(Date.now() + ms) });

describe.each(ENGINES)('the outbox relay on %s', (engine) => {
  let t: QueueApp;
  let referralIds: string[];

  beforeAll(async () => {
    t = await createQueueApp(engine);
    referralIds = [];
    for (let i = 0; i < 3; i++) referralIds.push((await createDraft(t)).id);
  });
  afterAll(async () => {
    await t.close();
  });
  beforeEach(async () => {
    await t.ctx.db.deleteFrom('outbox').execute();
  });
  afterEach(async () => {
    await Promise.all(QUEUE_NAMES.map((name) => t.ctx.queues.queues[name].obliterate({ force: true })));
  });

  const relayWith = (handlers: OutboxHandlers, options: Partial<RelayDeps> = {}) =>
    createOutboxRelay({
      stores: t.ctx.stores,
      clock: systemClock,
      logger: t.ctx.logger,
      handlers,
      ...options,
    });
  /** Handlers that note each dispatch, or do what `act` says for a row. */
  const recording = (act: (m: OutboxMessage) => Promise<void> = () => Promise.resolve()) => {
    const seen: string[] = [];
    const handler = async (m: OutboxMessage) => {
      seen.push(m.id);
      await act(m);
    };
    return {
      seen,
      handlers: {
        'ehr-forward': handler,
        'ehr-forward-again': handler,
        reminders: handler,
        'attachment-scan': handler,
      },
    };
  };
  /** Adds `n` rows in one insert, so their IDs ascend in order; returns the IDs. */
  const addRows = async (n: number): Promise<string[]> => {
    const at = new Date();
    await outboxRepository(t.ctx.db).add(
      Array.from({ length: n }, (_, i) => ({
        topic: 'ehr-forward' as const,
        referralId: referralIds[i % referralIds.length] ?? '',
        version: i + 1,
        requestId: `req-${i}`,
        at,
      })),
    );
    return (await rows()).map((r) => r.id);
  };
  const rows = () => t.ctx.db.selectFrom('outbox').selectAll().orderBy('id').execute();

  it('claims due rows in batches, oldest first, and deletes them once dispatched', async () => {
    const ids = await addRows(25);
    // One row waits for a later try: it is not due, so it is not claimed.
    await outboxRepository(t.ctx.db).markFailed(ids[0] ?? '', 'ECONNREFUSED', new Date(Date.now() + 60_000));
    const { seen, handlers } = recording();
    const relay = relayWith(handlers, { batchSize: 10 });

    expect(await relay.drainOnce()).toEqual({ dispatched: 10, failed: 0 });
    expect(seen).toEqual(ids.slice(1, 11));
    expect(await relay.drainOnce()).toEqual({ dispatched: 10, failed: 0 });
    expect(await relay.drainOnce()).toEqual({ dispatched: 4, failed: 0 });
    expect(await relay.drainOnce()).toEqual({ dispatched: 0, failed: 0 });
    expect(seen).toEqual(ids.slice(1));
    // Only the row waiting for its later try is left.
    const after = await rows();
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: ids[0], processed_at: null, last_error: 'ECONNREFUSED' });
  });

  it('dispatches each row once when two relays drain at the same time', async () => {
    const ids = await addRows(200);
    const counts = new Map<string, number>();
    const handlers: OutboxHandlers = {
      'ehr-forward': async (m) => {
        counts.set(m.id, (counts.get(m.id) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 3)));
      },
      'ehr-forward-again': () => Promise.reject(new Error('no retry rows here')),
      reminders: () => Promise.reject(new Error('no reminder rows here')),
      'attachment-scan': () => Promise.reject(new Error('no scan rows here')),
    };
    const drain = async (relay: ReturnType<typeof relayWith>) => {
      let dispatched = 0;
      for (let round = 0; round < 200; round++) {
        const result = await relay.drainOnce();
        expect(result.failed).toBe(0);
        if (result.dispatched === 0) return dispatched;
        dispatched += result.dispatched;
      }
      throw new Error('the relay never ran dry');
    };
    const [first, second] = await Promise.all([
      drain(relayWith(handlers, { batchSize: 7 })),
      drain(relayWith(handlers, { batchSize: 7 })),
    ]);
    // Both relays did part of the work, and no row was dispatched twice.
    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(0);
    expect(first + second).toBe(200);
    expect([...counts.keys()].sort()).toEqual([...ids].sort());
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(await rows()).toEqual([]);
  });

  it('takes back the rows of a relay that died holding them, once their lease has ended', async () => {
    const ids = await addRows(5);
    const now = new Date();
    // A relay claims the rows and dies before dispatching them.
    const claimed = await outboxRepository(t.ctx.db).claim(10, now, new Date(now.getTime() + 30_000));
    expect(claimed.map((m) => m.id)).toEqual(ids);

    const { seen, handlers } = recording();
    expect(await relayWith(handlers).drainOnce()).toEqual({ dispatched: 0, failed: 0 });
    expect(await relayWith(handlers, { clock: later(29_000) }).drainOnce()).toEqual({
      dispatched: 0,
      failed: 0,
    });
    // Claimed once, by the relay that died.
    expect((await rows()).map((r) => r.attempts)).toEqual(ids.map(() => 1));
    expect(await relayWith(handlers, { clock: later(31_000) }).drainOnce()).toEqual({
      dispatched: 5,
      failed: 0,
    });
    expect(seen).toEqual(ids);
    expect(await rows()).toEqual([]);
  });

  it('leaves a row whose dispatch failed for later, with a code and never a message', async () => {
    const [refused, broken, hanging, fine] = await addRows(4);
    const failing = new Set([refused, broken, hanging]);
    const { handlers } = recording((m) => {
      const id = m.id;
      if (!failing.has(id)) return Promise.resolve();
      if (id === refused) {
        return Promise.reject(
          Object.assign(new Error(`could not reach the queue for ${PATIENT.patientName}`), {
            code: 'ECONNREFUSED',
          }),
        );
      }
      if (id === broken) return Promise.reject(new TypeError(`unexpected ${PATIENT.patientUin}`));
      return new Promise<void>(() => undefined);
    });
    const started = Date.now();
    expect(await relayWith(handlers, { dispatchTimeoutMs: 200 }).drainOnce()).toEqual({
      dispatched: 1,
      failed: 3,
    });
    const finished = Date.now();
    const byId = new Map((await rows()).map((r) => [r.id, r]));
    expect(byId.has(fine ?? '')).toBe(false);
    expect([refused, broken, hanging].map((id) => byId.get(id ?? '')?.last_error)).toEqual([
      'ECONNREFUSED',
      'TypeError',
      'DISPATCH_TIMEOUT',
    ]);
    for (const id of [refused, broken, hanging]) {
      const row = byId.get(id ?? '');
      expect(row?.processed_at).toBeNull();
      // The first retry waits a second.
      const wait = (row?.available_at.getTime() ?? 0) - started;
      expect(wait).toBeGreaterThanOrEqual(1_000);
      expect(wait).toBeLessThanOrEqual(1_000 + (finished - started));
    }
    expect(JSON.stringify([...byId.values()])).not.toMatch(/Tan Ah Kow|S1234567D|could not reach|unexpected/);

    // Not due yet; a second failure waits twice as long; then the rows go through.
    expect(await relayWith(handlers).drainOnce()).toEqual({ dispatched: 0, failed: 0 });
    const second = Date.now() + 1_500;
    expect(await relayWith(handlers, { clock: later(1_500), dispatchTimeoutMs: 200 }).drainOnce()).toEqual({
      dispatched: 0,
      failed: 3,
    });
    for (const row of (await rows()).filter((r) => failing.has(r.id))) {
      expect(row.attempts).toBe(2);
      expect(row.available_at.getTime() - second).toBeGreaterThanOrEqual(2_000);
    }
    failing.clear();
    expect(await relayWith(handlers, { clock: later(5_000) }).drainOnce()).toEqual({
      dispatched: 3,
      failed: 0,
    });
    expect(await rows()).toEqual([]);
  });

  /** The relay as refhub runs it: forward rows a batch at a time (addBulk), or row by row. */
  const production = (mode: 'in a batch' | 'row by row', options: Partial<RelayDeps> = {}) =>
    relayWith(outboxHandlers(t.ctx), {
      ...(mode === 'in a batch' ? { batchHandlers: outboxBatchHandlers(t.ctx) } : {}),
      ...options,
    });
  const MODES = ['in a batch', 'row by row'] as const;

  it('dispatches a topic with a batch handler in one call, in order, and fails it as one', async () => {
    const ids = await addRows(5);
    const calls: string[][] = [];
    let fail = true;
    const batchHandlers = {
      'ehr-forward': (messages: readonly OutboxMessage[]) => {
        calls.push(messages.map((m) => m.id));
        return fail
          ? Promise.reject(Object.assign(new Error('x'), { code: 'QUEUE_UNAVAILABLE' }))
          : Promise.resolve();
      },
    };
    const { seen, handlers } = recording();
    expect(await relayWith(handlers, { batchHandlers }).drainOnce()).toEqual({ dispatched: 0, failed: 5 });
    expect((await rows()).map((r) => r.last_error)).toEqual(ids.map(() => 'QUEUE_UNAVAILABLE'));
    fail = false;
    expect(await relayWith(handlers, { batchHandlers, clock: later(5_000) }).drainOnce()).toEqual({
      dispatched: 5,
      failed: 0,
    });
    expect(calls).toEqual([ids, ids]);
    expect(seen).toEqual([]);
  });

  const submit = (id: string) => call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
  const cancel = (id: string) =>
    call(t, t.sender, 'POST', `/api/v1/referrals/${id}/cancel`, { cancelNote: 'Patient recovered' });

  it.each(MODES)(
    'adds one job for a row dispatched twice (%s): the job ID is the referral and version',
    async (mode) => {
      const draft = await createDraft(t);
      const submitted = (await submit(draft.id)) as ReferralJson;
      // A relay claims the forward and the reminder schedule, dispatches them as refhub does, and
      // dies before it deletes them.
      const now = new Date();
      const claimed = await outboxRepository(t.ctx.db).claim(10, now, new Date(now.getTime() + 30_000));
      expect(claimed.map((m) => m.topic).sort()).toEqual(['ehr-forward', 'reminders']);
      const handlers = outboxHandlers(t.ctx);
      for (const message of claimed) await handlers[message.topic](message);
      // Once its lease has ended, the rows come back and go again.
      expect(await production(mode, { clock: later(31_000) }).drainOnce()).toEqual({
        dispatched: 2,
        failed: 0,
      });
      expect(await rows()).toEqual([]);

      const forwards = t.ctx.queues.queues['ehr-forward'];
      const jobs = await forwards.getJobs(['wait', 'delayed', 'active', 'prioritized']);
      expect(jobs.map((j) => j.id)).toEqual([`${draft.id}.v${submitted.version}`]);
      expect(jobs[0]?.data).toMatchObject({ referralId: draft.id, version: submitted.version });
      expect(await t.ctx.queues.queues.reminders.getJobSchedulersCount()).toBe(1);
    },
  );

  it.each(MODES)('coalesces triggers that come while a job waits into that job (%s)', async (mode) => {
    const draft = await createDraft(t);
    const submitted = (await submit(draft.id)) as ReferralJson;
    await cancel(draft.id);
    const relay = production(mode);
    // Two forwards (submit, cancel) and two reminder rows (schedule, then remove).
    expect(await relay.drainOnce()).toEqual({ dispatched: 4, failed: 0 });

    const forwards = t.ctx.queues.queues['ehr-forward'];
    const waiting = await forwards.getJobs(['wait', 'delayed', 'active', 'prioritized']);
    // The waiting job sends the referral's latest state when it runs, so it stands for both.
    expect(waiting.map((j) => j.id)).toEqual([forwardJobId(draft.id, submitted.version)]);
    expect(await forwards.getJob(forwardJobId(draft.id, submitted.version + 1))).toBeUndefined();
    expect(await t.ctx.queues.queues.reminders.getJobSchedulersCount()).toBe(0);
  });

  it.each(MODES)(
    'keeps one more trigger while a job runs, and adds it when that job finishes (%s)',
    async (mode) => {
      const draft = await createDraft(t);
      const submitted = (await submit(draft.id)) as ReferralJson;
      const relay = production(mode);
      await relay.drainOnce();
      const manual = manualForwardWorker(t);
      try {
        const token = randomUUID();
        const running = await manual.worker.getNextJob(token);
        expect(running.id).toBe(forwardJobId(draft.id, submitted.version));

        await cancel(draft.id);
        expect(await relay.drainOnce()).toEqual({ dispatched: 2, failed: 0 });
        const forwards = t.ctx.queues.queues['ehr-forward'];
        expect(await t.ctx.queues.jobCounts('ehr-forward')).toMatchObject({ waiting: 0, active: 1 });

        await running.moveToCompleted('delivered', token, false);
        // Waiting in the forward queue's order (queue/forward.queue.ts).
        const next = await forwards.getJobs(['prioritized']);
        expect(next.map((j) => j.id)).toEqual([forwardJobId(draft.id, submitted.version + 1)]);
      } finally {
        await manual.close();
      }
    },
  );
});
