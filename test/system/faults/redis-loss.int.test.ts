// Faults: Redis goes away while clinics submit, and later loses its data while forwards are pending.
// PostgreSQL is the truth and Redis only a work queue: while Redis is down the API keeps accepting
// submits (their work waits in the outbox) and everything is forwarded once it is back; after a
// FLUSHALL the reconciler puts the lost forwards back from the database. The test waits for states,
// not for the clock: Redis comes back once the relay has turned every forward away, and each wait for
// the forwards is as long as the settings and the state they wait on say it may take, plus a margin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/bridge.ts';
import { startIsolatedInstallation, type IsolatedInstallation } from '../../support/isolated-installation.ts';
import { createRefhubClient, type RefhubClient } from '../../support/refhub-client.ts';
import { forwardingStates, submitMany, type SubmittedReferral } from '../../support/referral-requests.ts';
import type { WorkerProcess } from '../../support/worker-process.ts';

const SUBMITS_DURING_OUTAGE = 20;
const PENDING_AT_FLUSH = 12;
/** Longer than either test waits: a forward delayed this long can only come back through the reconciler. */
const EHR_RETRY_AFTER_SECONDS = 600;
const RECONCILE_INTERVAL_SECONDS = 2;
/** A due forward untouched this long, with no live job, is re-enqueued (src/queue/reconciler.ts). */
const RECONCILER_QUIET_MS = 5_000;
/** The longest an outbox row waits between two tries (src/queue/outbox-relay.ts). */
const OUTBOX_MAX_RETRY_DELAY_MS = 10_000;
/** The longest a Redis connection waits between two reconnects (src/queue/connections.ts). */
const REDIS_MAX_RECONNECT_DELAY_MS = 5_000;
/** For the forwards themselves, and a busy machine, on top of the waits the settings give. */
const FORWARD_MARGIN_MS = 20_000;
/** How long a state that comes within seconds on an idle machine may take before the test gives up. */
const STATE_TIMEOUT_MS = 60_000;

/** The installation's own redis-server: this test stops and flushes it. */
function redisOf(inst: IsolatedInstallation) {
  if (inst.redis === undefined) throw new Error('the installation keeps its queues in Redis here');
  return inst.redis;
}

describe('Redis stopped, then flushed', () => {
  let installation: IsolatedInstallation | undefined;
  let client: RefhubClient | undefined;
  let api: WorkerProcess;

  beforeAll(async () => {
    installation = await startIsolatedInstallation();
    [api] = await Promise.all([
      installation.start('api'),
      installation.start('worker', { RECONCILE_INTERVAL_SECONDS: String(RECONCILE_INTERVAL_SECONDS) }),
    ]);
    client = createRefhubClient(installation.senderKey);
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await installation?.close();
  }, 60_000);

  /** Waits up to `withinMs` until the EHR accepted (200) every referral's message ID and refhub recorded it. */
  async function allForwarded(referrals: readonly SubmittedReferral[], what: string, withinMs: number) {
    const inst = installation!;
    const http = client!;
    const deadline = Date.now() + withinMs;
    await eventually(
      `${what}: every message ID accepted by the EHR`,
      () => {
        const accepted = new Set(
          inst.ehr
            .deliveries()
            .filter((d) => d.status === 200)
            .map((d) => d.messageId),
        );
        return Promise.resolve(referrals.every((r) => accepted.has(r.messageId)) ? true : undefined);
      },
      deadline - Date.now(),
    );
    return eventually(
      `${what}: every referral recorded as forwarded`,
      async () => {
        const states = await forwardingStates(
          http,
          api.address,
          referrals.map((r) => r.id),
        );
        return [...states.values()].every((s) => s === 'forwarded') ? states : undefined;
      },
      deadline - Date.now(),
    );
  }

  it(`accepts ${SUBMITS_DURING_OUTAGE} submits while Redis is down and forwards them once it is back`, async () => {
    const inst = installation!;
    await redisOf(inst).stop();
    const stoppedAt = Date.now();
    // Every create and submit must succeed: submitMany throws on the first answer that is not 2xx.
    const referrals = await submitMany(client!, api.address, SUBMITS_DURING_OUTAGE, 'outage');
    const submittedIn = Date.now() - stoppedAt;
    const ids = new Set(referrals.map((r) => r.id));
    const atEhrDuringOutage = inst.ehr.deliveries().filter((d) => ids.has(d.referralId ?? '')).length;
    // Redis comes back once the relay has tried every forward and found it gone: the rows really wait.
    await eventually(
      'the relay turning every forward away while Redis is down',
      async () => {
        const rows = await inst.db
          .selectFrom('outbox')
          .select(['referral_id', 'last_error', 'processed_at'])
          .where('referral_id', 'in', [...ids])
          .where('topic', '=', 'ehr-forward')
          .execute();
        const tried = new Set(rows.map((r) => r.referral_id)).size === ids.size;
        const waiting = rows.every((r) => r.processed_at === null && r.last_error !== null);
        return tried && waiting ? true : undefined;
      },
      STATE_TIMEOUT_MS,
    );
    await redisOf(inst).start();
    const backAt = Date.now();
    // A waiting row is tried again within the relay's longest retry delay, once the connections are
    // back, which takes at most their longest reconnect delay.
    const forwardedWithinMs = OUTBOX_MAX_RETRY_DELAY_MS + REDIS_MAX_RECONNECT_DELAY_MS + FORWARD_MARGIN_MS;
    await allForwarded(referrals, 'after the outage', forwardedWithinMs);
    const deliveries = inst.ehr.deliveries().filter((d) => ids.has(d.referralId ?? ''));
    console.log(
      `[faults] redis-outage: ${SUBMITS_DURING_OUTAGE} creates and submits accepted in ${submittedIn} ms with ` +
        `Redis down (${atEhrDuringOutage} reached the EHR meanwhile); Redis down ${backAt - stoppedAt} ms; all ` +
        `forwarded ${Date.now() - backAt} ms after it returned (bound ${forwardedWithinMs} ms); ` +
        `${deliveries.length} deliveries`,
    );
    expect(atEhrDuringOutage).toBe(0);
    expect(new Set(deliveries.map((d) => d.messageId))).toEqual(new Set(referrals.map((r) => r.messageId)));
  }, 180_000);

  it(`forwards ${PENDING_AT_FLUSH} pending forwards after a FLUSHALL, through the reconciler`, async () => {
    const inst = installation!;
    // The EHR turns every forward away for ten minutes: each waits in Redis as a delayed job.
    inst.ehr.answer({ status: 503, retryAfterSeconds: EHR_RETRY_AFTER_SECONDS });
    const before = inst.ehr.deliveries().length;
    const referrals = await submitMany(client!, api.address, PENDING_AT_FLUSH, 'flush');
    await eventually(
      'an attempt of every forward turned away',
      () => {
        const tried = new Set(
          inst.ehr
            .deliveries()
            .slice(before)
            .map((d) => d.messageId),
        );
        return Promise.resolve(referrals.every((r) => tried.has(r.messageId)) ? true : undefined);
      },
      STATE_TIMEOUT_MS,
    );
    const states = await forwardingStates(
      client!,
      api.address,
      referrals.map((r) => r.id),
    );
    expect([...states.values()].every((s) => s === 'queued')).toBe(true);

    // The EHR's circuit opened on those failures; its next probe, read from the database, is when
    // forwarding may go on (the forwards put back before it wait for it).
    const circuit = await inst.db
      .selectFrom('ehr_circuit')
      .select(['state', 'probe_at'])
      .where('state', '=', 'open')
      .execute();
    await redisOf(inst).flushall();
    const flushedAt = Date.now();
    inst.ehr.answer({ status: 200 });
    const probeInMs = Math.max(0, ...circuit.map((c) => (c.probe_at?.getTime() ?? 0) - flushedAt));
    // The reconciler puts back a forward once it has been quiet long enough, at its next run.
    const requeuedWithinMs = RECONCILER_QUIET_MS + RECONCILE_INTERVAL_SECONDS * 1000;
    const forwardedWithinMs = Math.max(probeInMs, requeuedWithinMs) + FORWARD_MARGIN_MS;
    await allForwarded(referrals, 'after the flush', forwardedWithinMs);
    const repairs = (inst.outputTails(10_000).match(/reconciler repaired queue state/g) ?? []).length;
    console.log(
      `[faults] redis-flush: ${PENDING_AT_FLUSH} forwards pending (EHR answering 503, Retry-After ` +
        `${EHR_RETRY_AFTER_SECONDS} s) when Redis was flushed; all forwarded ${Date.now() - flushedAt} ms ` +
        `after the flush (bound ${forwardedWithinMs} ms, the circuit's probe due in ${probeInMs} ms); the ` +
        `reconciler logged ${repairs} repairs`,
    );
    expect(repairs).toBeGreaterThan(0);
  }, 180_000);
});
