// Faults: Redis goes away while clinics submit, and later loses its data while forwards are pending.
// PostgreSQL is the truth and Redis only a work queue: while Redis is down the API keeps accepting
// submits (their work waits in the outbox) and everything is forwarded once it is back; after a
// FLUSHALL the reconciler puts the lost forwards back from the database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/bridge.ts';
import { startIsolatedInstallation, type IsolatedInstallation } from '../support/isolated-installation.ts';
import { createRefhubClient, type RefhubClient } from '../support/refhub-client.ts';
import { forwardingStates, submitMany, type SubmittedReferral } from '../support/referral-requests.ts';
import type { WorkerProcess } from '../support/worker-process.ts';

const SUBMITS_DURING_OUTAGE = 20;
const PENDING_AT_FLUSH = 12;
/** Longer than either test waits: a forward delayed this long can only come back through the reconciler. */
const EHR_RETRY_AFTER_SECONDS = 600;
const FORWARD_TIMEOUT_MS = 60_000;

describe('Redis stopped, then flushed', () => {
  let installation: IsolatedInstallation | undefined;
  let client: RefhubClient | undefined;
  let api: WorkerProcess;

  beforeAll(async () => {
    installation = await startIsolatedInstallation();
    [api] = await Promise.all([installation.start('api'), installation.start('worker')]);
    client = createRefhubClient(installation.senderKey);
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await installation?.close();
  }, 60_000);

  /** Waits until the EHR accepted (200) every referral's message ID and refhub recorded it. */
  async function allForwarded(referrals: readonly SubmittedReferral[], what: string) {
    const inst = installation!;
    const http = client!;
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
      FORWARD_TIMEOUT_MS,
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
      30_000,
    );
  }

  it(`accepts ${SUBMITS_DURING_OUTAGE} submits while Redis is down and forwards them once it is back`, async () => {
    const inst = installation!;
    await inst.redis.stop();
    const stoppedAt = Date.now();
    // Every create and submit must succeed: submitMany throws on the first answer that is not 2xx.
    const referrals = await submitMany(client!, api.address, SUBMITS_DURING_OUTAGE, 'outage');
    const submittedIn = Date.now() - stoppedAt;
    const ids = new Set(referrals.map((r) => r.id));
    const atEhrDuringOutage = inst.ehr.deliveries().filter((d) => ids.has(d.referralId ?? '')).length;
    // A moment for the relay to find Redis gone, so the rows really wait.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await inst.redis.start();
    const backAt = Date.now();
    await allForwarded(referrals, 'after the outage');
    const deliveries = inst.ehr.deliveries().filter((d) => ids.has(d.referralId ?? ''));
    console.log(
      `[faults] redis-outage: ${SUBMITS_DURING_OUTAGE} creates and submits accepted in ${submittedIn} ms with ` +
        `Redis down (${atEhrDuringOutage} reached the EHR meanwhile); Redis down ${backAt - stoppedAt} ms; all ` +
        `forwarded ${Date.now() - backAt} ms after it returned; ${deliveries.length} deliveries`,
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
      FORWARD_TIMEOUT_MS,
    );
    const states = await forwardingStates(
      client!,
      api.address,
      referrals.map((r) => r.id),
    );
    expect([...states.values()].every((s) => s === 'queued')).toBe(true);

    await inst.redis.flushall();
    const flushedAt = Date.now();
    inst.ehr.answer({ status: 200 });
    await allForwarded(referrals, 'after the flush');
    const repairs = (inst.outputTails(10_000).match(/reconciler repaired queue state/g) ?? []).length;
    console.log(
      `[faults] redis-flush: ${PENDING_AT_FLUSH} forwards pending (EHR answering 503, Retry-After ` +
        `${EHR_RETRY_AFTER_SECONDS} s) when Redis was flushed; all forwarded ${Date.now() - flushedAt} ms ` +
        `after the flush; the reconciler logged ${repairs} repairs`,
    );
    expect(repairs).toBeGreaterThan(0);
  }, 180_000);
});
