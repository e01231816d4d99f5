// Fault: the API process dies (SIGKILL) while keyed creates are in flight. A clinic system that sent
// `POST /referrals` with an Idempotency-Key and lost the answer retries with the same key once the API
// is back. Each key must end with exactly one referral, every referral acknowledged before the crash
// must still be there (and be what a retry replays), and no retry may stay stuck on 409
// `idempotency_key_in_use` for a request that died with the process. The kill waits for a state, not
// for the clock: the creates go out as a stream that keeps several in flight, and the kill comes once
// some are acknowledged while others are still unanswered, as the clients see it.
// It runs on each queue backend: the queues in Redis, and in the installation's PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, LOOPBACK } from '../../support/free-port.ts';
import { startIsolatedInstallation, type IsolatedInstallation } from '../../support/isolated-installation.ts';
import { QUEUE_BACKEND_NAMES } from '../../support/queue-backends.ts';
import {
  createRefhubClient,
  jsonOf,
  type ApiOutcome,
  type RefhubClient,
} from '../../support/refhub-client.ts';
import {
  CREATE_PATH,
  keyedCreates,
  listPath,
  markerOf,
  readPath,
  type KeyedCreate,
} from '../../support/referral-requests.ts';

const KEYS = 80;
/** Creates in flight at once: each client sends its next key as soon as the last one is answered. */
const STREAM_WIDTH = 16;
/** The kill needs at least this many creates acknowledged first. */
const ACKNOWLEDGED_BEFORE_KILL = 8;
/**
 * Where the store shows keys as claimed and not yet answered, the kill comes once it shows a few of
 * them: that is the window a crash must hit. A store that never shows such a key (a claim that
 * commits with its answer) leaves nothing to aim at: the kill then comes as the last key is sent,
 * while the creates sent just before it are still unanswered, so that it hits writes in progress.
 */
const CLAIMED_AT_KILL = 3;
/**
 * How long clients keep retrying after the restart, at most. Longer than two minutes, the time after
 * which an earlier release took over a claim left by a dead process, so that a store that still held
 * such claims would show it here; a claim that dies with its transaction lets every key settle within
 * seconds.
 */
const RETRY_FOR_MS = 150_000;
/**
 * The longest a key may answer 409 after the restart. A 409 says "the first request still runs"; no
 * request runs once its process is dead, so a retry should get its answer at once. A few seconds
 * leave room for a slow machine.
 */
const MAX_CONFLICT_MS = 5_000;
const RETRY_PAUSE_MS = 200;

interface KeyRecord {
  readonly create: KeyedCreate;
  /** The first attempt went out before the kill. */
  sent: boolean;
  /** The referral the first attempt was acknowledged with, before the kill. */
  acknowledged?: string;
  /** The first attempt had not been answered when the API was killed. */
  inFlightAtKill: boolean;
  firstOutcome?: ApiOutcome;
  retries: number;
  conflicts: number;
  firstConflictAt?: number;
  lastConflictAt?: number;
  /** The referral the key's last 2xx answer named. */
  finalId?: string;
  finalStatus?: number;
  replayed: boolean;
  resolvedAt?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Idempotency keys the store holds as claimed by a request still running (0 if it cannot tell). */
async function claimedUnanswered(inst: IsolatedInstallation): Promise<number> {
  try {
    const row = await inst.db
      .selectFrom('idempotency_keys')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('state', '=', 'in-progress')
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  } catch {
    return 0;
  }
}

describe.each(QUEUE_BACKEND_NAMES)(
  'the API killed with SIGKILL during keyed creates, the queues in %s',
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

    it(`gives each of ${KEYS} keys exactly one referral when clients retry after a restart`, async () => {
      const inst = installation!;
      const port = await freePort();
      const env = { PORT: String(port) };
      const base = `http://${LOOPBACK}:${port}`;
      const api = await inst.start('api', env);
      client = createRefhubClient(inst.senderKey);
      const http = client;
      const send = (r: KeyRecord) =>
        http.send(base, 'POST', CREATE_PATH, {
          body: r.create.body,
          headers: { 'idempotency-key': r.create.key },
        });

      const records: KeyRecord[] = keyedCreates(KEYS, `k${Date.now().toString(36)}`).map((create) => ({
        create,
        sent: false,
        inFlightAtKill: false,
        retries: 0,
        conflicts: 0,
        replayed: false,
      }));

      // A few reads first, so that the process has its connections open and its code warm.
      for (let i = 0; i < 3; i++) expect((await http.send(base, 'GET', listPath())).kind).toBe('answer');

      const acknowledgedNow = () => records.filter((r) => r.acknowledged !== undefined).length;
      const unansweredNow = () => records.filter((r) => r.sent && r.firstOutcome === undefined).length;
      let killing: Promise<unknown> | undefined;
      let killedAt = 0;
      let acknowledgedAtKill = 0;
      /** The kill, once: what the clients hold unanswered is taken in the same step as the signal. */
      const kill = () => {
        if (killing !== undefined) return;
        for (const r of records) r.inFlightAtKill = r.sent && r.firstOutcome === undefined;
        acknowledgedAtKill = acknowledgedNow();
        killedAt = Date.now();
        killing = api.kill();
      };

      // The stream: STREAM_WIDTH clients, each sending its next create as soon as the last one is
      // answered, as a clinic system's queue drains after a pause. It takes no key after the kill; a
      // key it never sent goes out with the retries.
      const startedAt = Date.now();
      let next = 0;
      const stream = Promise.all(
        Array.from({ length: STREAM_WIDTH }, async () => {
          while (killing === undefined && next < records.length) {
            const r = records[next++]!;
            r.sent = true;
            const outcome = send(r);
            // The last key leaves nothing to aim with: the kill comes now, while it and the creates
            // sent before it are unanswered, and the KEYS - STREAM_WIDTH before those have answers.
            if (next === records.length) kill();
            r.firstOutcome = await outcome;
            if (r.firstOutcome.kind === 'answer' && r.firstOutcome.status === 201) {
              r.acknowledged = (jsonOf(r.firstOutcome) as { id: string } | undefined)?.id;
            }
          }
        }),
      );
      let claimed = 0;
      while (killing === undefined) {
        claimed = await claimedUnanswered(inst);
        const aimed =
          claimed >= CLAIMED_AT_KILL && acknowledgedNow() >= ACKNOWLEDGED_BEFORE_KILL && unansweredNow() > 0;
        if (aimed) kill();
        else await sleep(10);
      }
      await killing;
      await stream;
      // Answers already on their way when the process died still arrive; they count as acknowledged.
      const acknowledged = records.filter((r) => r.acknowledged !== undefined);
      const inFlight = records.filter((r) => r.inFlightAtKill);
      console.log(
        `[faults] api-kill (queues in ${queueBackend}): ${KEYS} keyed creates, ${STREAM_WIDTH} at a time; killed after ` +
          `${killedAt - startedAt} ms with ${acknowledgedAtKill} acknowledged, ${inFlight.length} unanswered ` +
          `and ${records.filter((r) => !r.sent).length} not sent (${acknowledged.length} acknowledged in ` +
          `all); ${claimed} keys claimed and unanswered in the store`,
      );
      expect(acknowledgedAtKill, 'creates acknowledged before the kill').toBeGreaterThanOrEqual(
        ACKNOWLEDGED_BEFORE_KILL,
      );
      expect(inFlight.length, 'the kill came while creates were in flight').toBeGreaterThan(0);
      expect(acknowledged.length, 'the kill came after some creates were acknowledged').toBeGreaterThan(0);

      // The same port, so clients retry the address they know.
      await inst.start('api', env);
      const restartedAt = Date.now();
      console.log(
        `[faults] api-kill (queues in ${queueBackend}): API back after ${restartedAt - killedAt} ms`,
      );

      // Clients retry every create whose answer they did not get, with the same key and body, until
      // they get a 2xx or give up; a 409 is retried after its Retry-After. Each acknowledged create is
      // sent once more too, as a client that lost the answer on its own side would: it must replay.
      const retryUntil = restartedAt + RETRY_FOR_MS;
      await Promise.all(
        records.map(async (r) => {
          for (;;) {
            r.retries++;
            const outcome = await send(r);
            if (outcome.kind === 'answer' && outcome.status < 300) {
              r.finalId = (jsonOf(outcome) as { id: string } | undefined)?.id;
              r.finalStatus = outcome.status;
              r.replayed = outcome.headers['idempotent-replayed'] === 'true';
              r.resolvedAt = outcome.at;
              return;
            }
            if (outcome.kind === 'answer' && outcome.status === 409) {
              r.conflicts++;
              r.firstConflictAt ??= outcome.at;
              r.lastConflictAt = outcome.at;
            } else if (outcome.kind === 'answer' && outcome.status < 500) {
              r.finalStatus = outcome.status;
              return;
            }
            if (Date.now() >= retryUntil) return;
            const retryAfter = outcome.kind === 'answer' ? Number(outcome.headers['retry-after']) : NaN;
            await sleep(Number.isFinite(retryAfter) ? retryAfter * 1000 : RETRY_PAUSE_MS);
          }
        }),
      );
      const settledAt = Date.now();

      // What the installation holds, read through the API: the sender's referrals by the marker each
      // create put into its clinical information.
      const listed = await http.send(base, 'GET', listPath());
      const page = jsonOf(listed) as
        { data: { id: string; clinicalInfo: unknown }[]; metadata: { hasNext: boolean } } | undefined;
      expect(page?.metadata.hasNext, 'all referrals on one page').toBe(false);
      const byMarker = new Map<string, string[]>();
      for (const referral of page?.data ?? []) {
        const marker = markerOf(referral.clinicalInfo);
        if (marker !== undefined) byMarker.set(marker, [...(byMarker.get(marker) ?? []), referral.id]);
      }
      const unreadable: string[] = [];
      for (const r of acknowledged) {
        const read = await http.send(base, 'GET', readPath(r.acknowledged!));
        if (read.kind !== 'answer' || read.status !== 200) unreadable.push(r.acknowledged!);
      }

      const conflicted = records.filter((r) => r.firstConflictAt !== undefined);
      const conflictMs = (r: KeyRecord) => (r.lastConflictAt ?? 0) - (r.firstConflictAt ?? 0);
      const longest = Math.max(0, ...conflicted.map(conflictMs));
      const stuck = conflicted.filter((r) => conflictMs(r) > MAX_CONFLICT_MS);
      const unresolved = records.filter((r) => r.finalId === undefined);
      const doubled = records.filter((r) => (byMarker.get(r.create.marker)?.length ?? 0) > 1);
      const missing = records.filter((r) => (byMarker.get(r.create.marker)?.length ?? 0) === 0);
      const changedAnswer = acknowledged.filter((r) => r.finalId !== r.acknowledged);
      const notTheStoredOne = records.filter(
        (r) => r.finalId !== undefined && !(byMarker.get(r.create.marker) ?? []).includes(r.finalId),
      );
      console.log(
        [
          `[faults] api-kill (queues in ${queueBackend}): retries settled ${settledAt - restartedAt} ms after the restart;`,
          `${records.reduce((n, r) => n + r.retries, 0)} retries, ${records.reduce((n, r) => n + r.conflicts, 0)} answered 409`,
          `on ${conflicted.length} keys (longest 409 run ${longest} ms, ${stuck.length} keys over ${MAX_CONFLICT_MS} ms);`,
          `${unresolved.length} keys without a 2xx; ${doubled.length} keys with two or more referrals;`,
          `${missing.length} keys with none; ${unreadable.length} acknowledged referrals unreadable;`,
          `${changedAnswer.length} acknowledged keys whose retry named another referral`,
        ].join(' '),
      );
      for (const r of stuck) {
        console.log(
          `[faults] api-kill (queues in ${queueBackend}): key ${r.create.key} answered 409 for ${conflictMs(r)} ms ` +
            `(${r.conflicts} times; in flight at the kill: ${r.inFlightAtKill})`,
        );
      }
      for (const r of doubled) {
        console.log(
          `[faults] api-kill (queues in ${queueBackend}): key ${r.create.key} has ${byMarker.get(r.create.marker)?.length} referrals: ` +
            `${byMarker.get(r.create.marker)?.join(', ')} (in flight at the kill: ${r.inFlightAtKill})`,
        );
      }
      if (unresolved.length + missing.length + unreadable.length > 0) console.log(inst.outputTails(10));

      expect.soft(unreadable, 'acknowledged referrals that cannot be read after the restart').toEqual([]);
      expect
        .soft(
          changedAnswer.map((r) => r.create.key),
          'acknowledged keys whose retry did not replay the acknowledged referral',
        )
        .toEqual([]);
      expect
        .soft(
          unresolved.map((r) => r.create.key),
          'keys that never got a 2xx',
        )
        .toEqual([]);
      expect
        .soft(
          stuck.map((r) => `${r.create.key}: 409 for ${conflictMs(r)} ms`),
          `keys that answered 409 idempotency_key_in_use for longer than ${MAX_CONFLICT_MS} ms`,
        )
        .toEqual([]);
      expect
        .soft(
          doubled.map((r) => `${r.create.key}: ${byMarker.get(r.create.marker)?.join(', ')}`),
          'keys that ended with more than one referral',
        )
        .toEqual([]);
      expect
        .soft(
          missing.map((r) => r.create.key),
          'keys that ended with no referral',
        )
        .toEqual([]);
      expect
        .soft(
          notTheStoredOne.map((r) => r.create.key),
          "keys whose final answer is not the key's referral",
        )
        .toEqual([]);
    }, 240_000);
  },
);
