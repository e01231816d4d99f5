// Fault: the worker process dies (SIGKILL) while forwards are in flight to the EHR, and is started
// again. Every submitted referral must still reach the EHR, each version under one message ID with
// the same bytes every time it is sent, and the forwards sent twice are bounded by what the killed
// worker had in hand: kills × its concurrency. The test waits for states, not for the clock: the kill
// comes while the fake EHR holds forwards open (their answers wait for a kill that cuts them off), and
// the recovery is given as long as the worker's lock settings say a killed worker's jobs take to come
// back, plus a margin.
// It runs on each queue backend: the queues in Redis, and in the installation's PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/bridge.ts';
import { startIsolatedInstallation, type IsolatedInstallation } from '../../support/isolated-installation.ts';
import { QUEUE_BACKEND_NAMES } from '../../support/queue-backends.ts';
import { deliverySummary } from '../../support/recording-ehr.ts';
import { createRefhubClient, type RefhubClient } from '../../support/refhub-client.ts';
import { forwardingStates, submitMany } from '../../support/referral-requests.ts';
import { FORWARD_JOB_LOCKS, jobLockTimings, stalledJobsBackWithinMs } from '../../support/stalled-jobs.ts';

const REFERRALS = 48;
const KILLS = 1;
/** Forwards one worker runs at once (`startEhrForwardWorker`'s default). */
const WORKER_CONCURRENCY = 16;
/** Forwards the EHR holds open when the kill comes. */
const OPEN_AT_KILL = 3;
/** Longer than the test: a forward that arrives while the EHR holds its answers is never answered. */
const HOLD_MS = 600_000;
/**
 * From the kill until every referral is recorded as forwarded: a killed worker's jobs come back once
 * their locks have expired and a stalled check has run; the margin is for the restart and the
 * forwards themselves on a busy machine.
 */
const RECOVERY_BOUND_MS = stalledJobsBackWithinMs(FORWARD_JOB_LOCKS) + 20_000;
/** How long a state that comes within seconds on an idle machine may take before the test gives up. */
const STATE_TIMEOUT_MS = 60_000;

describe.each(QUEUE_BACKEND_NAMES)(
  'the worker killed with SIGKILL during forwards, the queues in %s',
  (queueBackend) => {
    let installation: IsolatedInstallation | undefined;
    let client: RefhubClient | undefined;

    beforeAll(async () => {
      installation = await startIsolatedInstallation(queueBackend);
    }, 120_000);
    afterAll(async () => {
      await client?.close();
      await installation?.close();
    }, 60_000);

    it(`forwards all ${REFERRALS} referrals after the worker is killed mid-way and restarted`, async () => {
      const inst = installation!;
      const [api, worker] = await Promise.all([inst.start('api'), inst.start('worker')]);
      client = createRefhubClient(inst.senderKey);
      const http = client;

      // A third of the referrals first, each answered by the EHR: the worker has done work when it dies.
      const startedAt = Date.now();
      const first = await submitMany(http, api.address, REFERRALS / 3, 'forward-first');
      await eventually(
        'the first third of the referrals answered by the EHR',
        () => {
          const got = new Set(inst.ehr.deliveries().map((d) => d.messageId));
          const all = first.every((r) => got.has(r.messageId)) && inst.ehr.inFlight() === 0;
          return Promise.resolve(all ? true : undefined);
        },
        STATE_TIMEOUT_MS,
      );

      // The rest while the EHR holds every answer, so that the forwards it receives stay open until the
      // kill cuts them off, however slowly the machine runs.
      inst.ehr.answer({ latencyMs: HOLD_MS });
      const submitting = submitMany(http, api.address, REFERRALS - first.length, 'forward-rest');
      // Awaited after the kill; until then a failure must not surface as an unhandled rejection.
      submitting.catch(() => undefined);
      await eventually(
        'forwards held open at the EHR to kill the worker under',
        () => Promise.resolve(inst.ehr.inFlight() >= OPEN_AT_KILL ? true : undefined),
        STATE_TIMEOUT_MS,
      );
      const locks = await jobLockTimings(inst.queuePlace, 'ehr-forward', FORWARD_JOB_LOCKS.stalledIntervalMs);
      // Held forwards are never answered: what is open now is what the kill cuts off, and more.
      const inFlightAtKill = inst.ehr.inFlight();
      const receivedAtKill = inst.ehr.counts().received;
      const killedAt = Date.now();
      expect(await worker.kill()).toEqual({ code: null, signal: 'SIGKILL' });
      await eventually('the EHR seeing the forwards it held cut off by the kill', () =>
        Promise.resolve(inst.ehr.counts().cutOff >= inFlightAtKill ? true : undefined),
      );
      // The recovery bound assumes the worker's lock settings: the lock it took on each of the jobs it
      // held, and the marker of its last stalled check, cannot have more left than those settings give.
      expect(locks.locksMs.length, 'locks on the jobs the killed worker held').toBeGreaterThan(0);
      expect(Math.max(...locks.locksMs), 'lock left at the kill, in ms').toBeLessThanOrEqual(
        FORWARD_JOB_LOCKS.lockDurationMs,
      );
      expect(locks.stalledCheckMs ?? 0, 'stalled check marker left at the kill, in ms').toBeLessThanOrEqual(
        FORWARD_JOB_LOCKS.stalledIntervalMs,
      );
      inst.ehr.answer({ latencyMs: 0 });
      await inst.start('worker');
      const restartedAt = Date.now();
      const referrals = [...first, ...(await submitting)];
      const expected = new Set(referrals.map((r) => r.messageId));
      expect(expected.size).toBe(REFERRALS);

      const recoveredBy = killedAt + RECOVERY_BOUND_MS;
      await eventually(
        `every referral's message ID at the EHR`,
        () => {
          const got = new Set(inst.ehr.deliveries().map((d) => d.messageId));
          return Promise.resolve([...expected].every((id) => got.has(id)) ? true : undefined);
        },
        recoveredBy - Date.now(),
      );
      const allReceivedAt = Date.now();
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
        recoveredBy - Date.now(),
      );
      const forwardedAt = Date.now();

      const deliveries = inst.ehr.deliveries();
      const summary = deliverySummary(deliveries);
      const counts = inst.ehr.counts();
      console.log(
        [
          `[faults] worker-kill (queues in ${queueBackend}): ${REFERRALS} referrals; killed ${killedAt - startedAt} ms in, with`,
          `${receivedAtKill} received by the EHR and ${inFlightAtKill} held open there; locks on`,
          `${locks.locksMs.length} jobs with at most ${Math.max(...locks.locksMs)} ms left; worker back in`,
          `${restartedAt - killedAt} ms; all at the EHR ${allReceivedAt - killedAt} ms and all recorded as`,
          `forwarded ${forwardedAt - killedAt} ms after the kill (bound ${RECOVERY_BOUND_MS} ms);`,
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
  },
);
