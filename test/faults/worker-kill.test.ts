// Fault: the worker process dies (SIGKILL) while forwards are in flight to the EHR, and is started
// again. Every submitted referral must still reach the EHR, each version under one message ID with
// the same bytes every time it is sent, and the forwards sent twice are bounded by what the killed
// worker had in hand: kills × its concurrency.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/bridge.ts';
import { startIsolatedInstallation, type IsolatedInstallation } from '../support/isolated-installation.ts';
import { deliverySummary } from '../support/recording-ehr.ts';
import { createRefhubClient, type RefhubClient } from '../support/refhub-client.ts';
import { forwardingStates, submitMany } from '../support/referral-requests.ts';

const REFERRALS = 48;
const KILLS = 1;
/** Forwards one worker runs at once (`startEhrForwardWorker`'s default). */
const WORKER_CONCURRENCY = 16;
/** Each EHR answer takes this long, so that the kill finds forwards in flight. */
const EHR_LATENCY_MS = 400;
/** A killed worker's jobs come back once their lock expires (30 s) and a stalled check runs (10 s). */
const RECOVERY_TIMEOUT_MS = 120_000;

describe('the worker killed with SIGKILL during forwards', () => {
  let installation: IsolatedInstallation | undefined;
  let client: RefhubClient | undefined;

  beforeAll(async () => {
    installation = await startIsolatedInstallation();
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await installation?.close();
  }, 60_000);

  it(`forwards all ${REFERRALS} referrals after the worker is killed mid-way and restarted`, async () => {
    const inst = installation!;
    const [api, worker] = await Promise.all([inst.start('api'), inst.start('worker')]);
    client = createRefhubClient(inst.senderKey);
    inst.ehr.answer({ latencyMs: EHR_LATENCY_MS });

    const startedAt = Date.now();
    const submitting = submitMany(client, api.address, REFERRALS, 'forward');
    // Awaited after the kill; until then a failure must not surface as an unhandled rejection.
    submitting.catch(() => undefined);

    // The kill comes once a third of the referrals reached the EHR and several forwards are open.
    const inFlightAtKill = await eventually(
      'forwards in flight to kill the worker under',
      () => {
        const { received } = inst.ehr.counts();
        const open = inst.ehr.inFlight();
        return Promise.resolve(received >= REFERRALS / 3 && open >= 3 ? open : undefined);
      },
      60_000,
    );
    const receivedAtKill = inst.ehr.counts().received;
    const killedAt = Date.now();
    expect(await worker.kill()).toEqual({ code: null, signal: 'SIGKILL' });
    await inst.start('worker');
    const restartedAt = Date.now();
    const referrals = await submitting;
    const expected = new Set(referrals.map((r) => r.messageId));
    expect(expected.size).toBe(REFERRALS);

    await eventually(
      `every referral's message ID at the EHR`,
      () => {
        const got = new Set(inst.ehr.deliveries().map((d) => d.messageId));
        return Promise.resolve([...expected].every((id) => got.has(id)) ? true : undefined);
      },
      RECOVERY_TIMEOUT_MS,
    );
    const allReceivedAt = Date.now();
    const http = client;
    const states = await eventually(
      'every referral recorded as forwarded',
      async () => {
        const read = await forwardingStates(
          http,
          api.address,
          referrals.map((r) => r.id),
        );
        return [...read.values()].every((s) => s === 'forwarded') ? read : undefined;
      },
      30_000,
    );

    const deliveries = inst.ehr.deliveries();
    const summary = deliverySummary(deliveries);
    const counts = inst.ehr.counts();
    console.log(
      [
        `[faults] worker-kill: ${REFERRALS} referrals; killed ${killedAt - startedAt} ms in, with`,
        `${receivedAtKill} received by the EHR and ${inFlightAtKill} in flight; worker back in`,
        `${restartedAt - killedAt} ms; all at the EHR ${allReceivedAt - killedAt} ms after the kill;`,
        `${deliveries.length} deliveries of ${summary.messageIds.size} message IDs,`,
        `${summary.duplicates} duplicates (bound ${KILLS * WORKER_CONCURRENCY}), ${counts.cutOff} cut off by the kill`,
      ].join(' '),
    );

    expect([...states.values()].every((s) => s === 'forwarded')).toBe(true);
    // One message ID per referral version, and no other: each is `<referralId>.v<version>`.
    expect(summary.messageIds).toEqual(expected);
    expect(deliveries.filter((d) => !d.valid)).toEqual([]);
    expect(deliveries.every((d) => d.messageId === `${d.referralId}.v${d.version}`)).toBe(true);
    // A version's bytes are the same every time they are sent.
    expect(summary.changedBytes).toEqual([]);
    expect(summary.duplicates).toBeLessThanOrEqual(KILLS * WORKER_CONCURRENCY);
  }, 240_000);
});
