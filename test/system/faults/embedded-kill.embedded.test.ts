// Fault: `npm start`'s one process (`refhub all` on embedded PGlite, the queues in the same database)
// dies (SIGKILL) while forwards are in flight to the EHR, and is started again on the same data
// directory. API, relay, workers and queues die together; what was acknowledged must still reach the
// EHR, each version under one message ID with the same bytes every time it is sent, and the forwards
// sent twice are bounded by what the killed process had in hand. The EHR is a recording one outside the
// process (the sandbox in it would die with it). The test waits for states, not for the clock: the
// kill comes while the EHR holds forwards open, and the recovery is given as long as the forward
// worker's lock settings say a killed worker's jobs take to come back, plus a margin.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/bridge.ts';
import { deliverySummary, startRecordingEhr, type RecordingEhr } from '../../support/recording-ehr.ts';
import { createRefhubClient, type RefhubClient } from '../../support/refhub-client.ts';
import { forwardingStates, submitMany } from '../../support/referral-requests.ts';
import { FORWARD_JOB_LOCKS, stalledJobsBackWithinMs } from '../../support/stalled-jobs.ts';
import { startRefhubProcess, type WorkerProcess } from '../../support/worker-process.ts';

const REFERRALS = 24;
/** Forwards one process runs at once (the forward worker's concurrency). */
const WORKER_CONCURRENCY = 16;
const OPEN_AT_KILL = 3;
/** Longer than the test: a forward that arrives while the EHR holds its answers is never answered. */
const HOLD_MS = 600_000;
const RECOVERY_BOUND_MS = stalledJobsBackWithinMs(FORWARD_JOB_LOCKS) + 30_000;
const STATE_TIMEOUT_MS = 60_000;

describe('the embedded default killed with SIGKILL during forwards', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-embedded-kill-'));
  let ehr: RecordingEhr;
  let client: RefhubClient | undefined;
  const processes: WorkerProcess[] = [];
  const start = async () => {
    const started = await startRefhubProcess('all', {
      databaseUrl: undefined,
      redisUrl: undefined,
      queuePrefix: 'unused',
      ehrUrl: ehr.url,
      env: {
        DATA_DIR: dataDir,
        PUBLIC_URL: 'http://127.0.0.1',
        RATE_LIMIT_PER_MINUTE: '1000000',
        EHR_BACKOFF_BASE_MS: '100',
        RECONCILE_INTERVAL_SECONDS: '2',
      },
      startTimeoutMs: 120_000,
    });
    processes.push(started);
    return started;
  };

  beforeAll(async () => {
    ehr = await startRecordingEhr();
  });
  afterAll(async () => {
    await client?.close();
    await Promise.allSettled(processes.map((p) => p.stop()));
    await ehr.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it(`forwards all ${REFERRALS} referrals, each version once under one ID, after a kill and a restart`, async () => {
    const first = await start();
    const senderKey = /^demo-sender\t(\S+)/m.exec(
      fs.readFileSync(path.join(dataDir, 'demo-keys.txt'), 'utf8'),
    )?.[1];
    expect(senderKey).toBeDefined();
    client = createRefhubClient(senderKey ?? '');
    const http = client;

    const before = await submitMany(http, first.address, REFERRALS / 2, 'embedded-first');
    await eventually(
      'the first half answered by the EHR',
      () => {
        const got = new Set(ehr.deliveries().map((d) => d.messageId));
        return Promise.resolve(
          before.every((r) => got.has(r.messageId)) && ehr.inFlight() === 0 ? true : undefined,
        );
      },
      STATE_TIMEOUT_MS,
    );
    // The rest while the EHR holds every answer: the forwards it receives stay open until the kill.
    ehr.answer({ latencyMs: HOLD_MS });
    const rest = await submitMany(http, first.address, REFERRALS / 2, 'embedded-rest');
    await eventually(
      'forwards held open at the EHR to kill the process under',
      () => Promise.resolve(ehr.inFlight() >= OPEN_AT_KILL ? true : undefined),
      STATE_TIMEOUT_MS,
    );
    const killedAt = Date.now();
    expect(await first.kill()).toEqual({ code: null, signal: 'SIGKILL' });
    ehr.answer({ latencyMs: 0 });
    const second = await start();

    const referrals = [...before, ...rest];
    const expected = new Set(referrals.map((r) => r.messageId));
    await eventually(
      "every referral's message ID at the EHR",
      () => {
        const got = new Set(ehr.deliveries().map((d) => d.messageId));
        return Promise.resolve([...expected].every((id) => got.has(id)) ? true : undefined);
      },
      killedAt + RECOVERY_BOUND_MS - Date.now(),
    );
    const states = await eventually(
      'every referral recorded as forwarded',
      async () => {
        const read = await forwardingStates(
          http,
          second.address,
          referrals.map((r) => r.id),
        );
        return [...read.values()].every((s) => s === 'forwarded') ? read : undefined;
      },
      STATE_TIMEOUT_MS,
    );
    expect(states.size).toBe(REFERRALS);

    const deliveries = ehr.deliveries();
    const summary = deliverySummary(deliveries);
    expect(summary.messageIds).toEqual(expected);
    expect(deliveries.filter((d) => !d.valid)).toEqual([]);
    expect(deliveries.every((d) => d.messageId === `${d.referralId}.v${d.version}`)).toBe(true);
    expect(summary.changedBytes).toEqual([]);
    expect(summary.duplicates).toBeLessThanOrEqual(WORKER_CONCURRENCY);
  }, 300_000);
});
