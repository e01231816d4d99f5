// Fault: the PostgreSQL postmaster dies (SIGKILL) under a stream of reads and writes, and is started
// again on the same port and data directory (crash recovery). While the database is gone the API
// answers 503 problem+json with Retry-After, so clients know to come back; no write it acknowledged
// is lost; and it serves again on its own, without a restart, soon after the database is back. A
// connection that a transaction holds when the server dies fails that transaction only, never the
// process (PostgreSQL only: embedded PGlite has no server to lose). The test waits for states, not
// for the clock: the kill comes once the stream has worked, the database comes back once the stream
// has felt its loss, and the API is held to the Retry-After it gave clients during the outage.
// Each runs with the queues in Redis and in the database itself (QUEUE_BACKEND=postgres), where the
// restart takes the queues down too: a worker that lived through it forwards what comes after.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/bridge.ts';
import { startIsolatedInstallation, type IsolatedInstallation } from '../../support/isolated-installation.ts';
import { QUEUE_BACKEND_NAMES } from '../../support/queue-backends.ts';
import {
  createRefhubClient,
  jsonOf,
  type ApiOutcome,
  type RefhubClient,
} from '../../support/refhub-client.ts';
import { CREATE_PATH, draftBody, readPath, submitMany, succeeded } from '../../support/referral-requests.ts';
import type { WorkerProcess } from '../../support/worker-process.ts';

/** Clients sending at once, each a create and a read in turn with a short pause. */
const CLIENTS = 4;
const PAUSE_MS = 25;
/** The kill comes once this many creates were acknowledged, and as many reads answered. */
const SUCCEEDED_BEFORE_KILL = 20;
/** The database stays down until this many creates sent after the kill failed, and as many reads. */
const FAILED_DURING_OUTAGE = CLIENTS;
/** Once the postmaster is back, the stream goes on until this many requests in a row succeeded. */
const STEADY_REQUESTS = 40;
/** How long a state that comes within seconds on an idle machine may take before the test gives up. */
const STATE_TIMEOUT_MS = 60_000;

interface Sent {
  readonly kind: 'create' | 'read';
  readonly sentAt: number;
  readonly outcome: ApiOutcome;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long an answer told the client to wait before trying again (0 when it did not say). */
function retryAfterMs(outcome: ApiOutcome): number {
  const value = outcome.kind === 'answer' ? outcome.headers['retry-after'] : undefined;
  if (typeof value !== 'string') return 0;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? 0 : Math.max(0, date - outcome.at);
}

/** A failure answered the way the contract wants an outage answered. */
function isUnavailableProblem(outcome: ApiOutcome): boolean {
  if (outcome.kind !== 'answer' || outcome.status !== 503) return false;
  const type = String(outcome.headers['content-type'] ?? '');
  const retryAfter = outcome.headers['retry-after'];
  return (
    type.startsWith('application/problem+json') &&
    typeof retryAfter === 'string' &&
    // Delay-seconds or an HTTP date (RFC 9110 §10.2.3).
    (/^\d+$/.test(retryAfter.trim()) || !Number.isNaN(Date.parse(retryAfter))) &&
    (jsonOf(outcome) as { status?: number } | undefined)?.status === 503
  );
}

function shapeOf(outcome: ApiOutcome): string {
  if (outcome.kind === 'network-error') return `network error ${outcome.code}`;
  const code = (jsonOf(outcome) as { code?: string } | undefined)?.code;
  const retryAfter = outcome.headers['retry-after'];
  return `${outcome.status} ${code ?? '-'}${retryAfter === undefined ? '' : ' with Retry-After'}`;
}

describe.each(QUEUE_BACKEND_NAMES)(
  'the PostgreSQL postmaster killed with SIGKILL under reads and writes, the queues in %s',
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

    it('answers 503 during the outage, loses no acknowledged write, and recovers without a restart', async () => {
      const inst = installation!;
      const api: WorkerProcess = await inst.start('api');
      const apiState = { exited: false };
      void api.exited.then(() => (apiState.exited = true));
      client = createRefhubClient(inst.senderKey);
      const http = client;

      const sent: Sent[] = [];
      const created: string[] = [];
      let stopAt = Number.POSITIVE_INFINITY;
      let serial = 0;
      const create = async () => {
        const marker = `pg-${serial++}`;
        const sentAt = Date.now();
        const outcome = await http.send(api.address, 'POST', CREATE_PATH, { body: draftBody(marker) });
        sent.push({ kind: 'create', sentAt, outcome });
        const id = (jsonOf(outcome) as { id: string } | undefined)?.id;
        if (succeeded(outcome) && id !== undefined) created.push(id);
      };
      const read = async () => {
        const id = created[Math.floor(Math.random() * created.length)];
        if (id === undefined) return;
        const sentAt = Date.now();
        sent.push({ kind: 'read', sentAt, outcome: await http.send(api.address, 'GET', readPath(id)) });
      };
      await create();
      expect(created, 'a create before the fault').toHaveLength(1);

      const stream = Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (Date.now() < stopAt) {
            await create();
            await sleep(PAUSE_MS);
            await read();
            await sleep(PAUSE_MS);
          }
        }),
      );
      const failed = (s: Sent) => !succeeded(s.outcome);
      const count = (kind: Sent['kind'], which: (s: Sent) => boolean) =>
        sent.filter((s) => s.kind === kind && which(s)).length;

      // The kill comes once the stream has worked: creates acknowledged, reads answered.
      await eventually(
        'creates and reads succeeding before the kill',
        () => {
          const ok = (s: Sent) => succeeded(s.outcome);
          const worked = Math.min(count('create', ok), count('read', ok)) >= SUCCEEDED_BEFORE_KILL;
          return Promise.resolve(worked ? true : undefined);
        },
        STATE_TIMEOUT_MS,
      );
      const killAt = Date.now();
      await inst.postgres.kill();
      // The database stays down until the stream has felt its loss, on creates and on reads.
      await eventually(
        'creates and reads failing while the database is down',
        () => {
          const lost = (s: Sent) => s.sentAt >= killAt && failed(s);
          const felt = Math.min(count('create', lost), count('read', lost)) >= FAILED_DURING_OUTAGE;
          return Promise.resolve(felt ? true : undefined);
        },
        STATE_TIMEOUT_MS,
      );
      await inst.postgres.start();
      const backAt = Date.now();

      // A client told to come back after Retry-After must find the API serving by then.
      const recoveryBoundMs = Math.max(0, ...sent.filter(failed).map((s) => retryAfterMs(s.outcome)));
      // The stream goes on until STEADY_REQUESTS sent after the last failure have all succeeded, or
      // until a failure comes later than the recovery bound allows (the test fails then anyway).
      for (;;) {
        const lastFailure = Math.max(killAt, ...sent.filter(failed).map((s) => s.outcome.at));
        const steady = sent.filter((s) => s.sentAt > lastFailure && s.sentAt >= backAt).length;
        if (steady >= STEADY_REQUESTS || lastFailure > backAt + recoveryBoundMs) break;
        await sleep(50);
      }
      stopAt = Date.now();
      await stream;

      const failures = sent.filter(failed);
      const lastFailureAt = Math.max(0, ...failures.map((s) => s.outcome.at));
      const firstSuccessAfterBack = sent.find((s) => s.sentAt >= backAt && succeeded(s.outcome))?.outcome.at;
      const notUnavailable = failures.filter((s) => !isUnavailableProblem(s.outcome));
      const shapes = new Map<string, number>();
      for (const s of failures) shapes.set(shapeOf(s.outcome), (shapes.get(shapeOf(s.outcome)) ?? 0) + 1);

      // Every create the API acknowledged is there after the outage (read through a fresh API process
      // if this one did not survive, so that a crash is not mistaken for lost data).
      const reader = apiState.exited ? await inst.start('api') : api;
      const lost: string[] = [];
      for (const id of created) {
        const answer = await http.send(reader.address, 'GET', readPath(id));
        if (!(
          answer.kind === 'answer' &&
          answer.status === 200 &&
          (jsonOf(answer) as { id: string } | undefined)?.id === id
        )) {
          lost.push(id);
        }
      }

      const creates = sent.filter((s) => s.kind === 'create');
      console.log(
        [
          `[faults] postgres-outage (queues in ${queueBackend}): ${sent.length} requests (${creates.length} creates, ${sent.length - creates.length} reads)`,
          `by ${CLIENTS} clients; database gone ${backAt - killAt} ms (kill, until ${FAILED_DURING_OUTAGE} creates and reads failed, crash recovery); ${failures.length} failed:`,
          `${[...shapes].map(([shape, n]) => `${n} × ${shape}`).join(', ') || 'none'};`,
          `first success ${firstSuccessAfterBack === undefined ? 'never' : `${firstSuccessAfterBack - backAt} ms`} after`,
          `the postmaster was back, last failure ${lastFailureAt === 0 ? '-' : `${lastFailureAt - backAt} ms`} after it;`,
          `${created.length} creates acknowledged, ${lost.length} of them lost; API process still running: ${!apiState.exited}`,
        ].join(' '),
      );
      if (apiState.exited)
        console.log(
          `[faults] postgres-outage (queues in ${queueBackend}): the API process exited:\n${inst.outputTails(15)}`,
        );
      if (notUnavailable.length > 0 && notUnavailable[0]?.outcome.kind === 'answer') {
        console.log(
          `[faults] postgres-outage (queues in ${queueBackend}): a failed answer: ${notUnavailable[0].outcome.body.slice(0, 400)}`,
        );
      }

      expect(failures.length, 'the outage was felt by the stream').toBeGreaterThan(0);
      expect.soft(apiState.exited, 'the API process stayed up').toBe(false);
      expect.soft(lost, 'acknowledged creates missing after the outage').toEqual([]);
      expect.soft(firstSuccessAfterBack, 'a request succeeded after the postmaster was back').toBeDefined();
      expect
        .soft(
          lastFailureAt - backAt,
          `the last failure came within ${recoveryBoundMs} ms (the Retry-After the API gave) of the postmaster's return`,
        )
        .toBeLessThanOrEqual(recoveryBoundMs);
      expect
        .soft(
          [...new Set(notUnavailable.map((s) => shapeOf(s.outcome)))],
          'failures not answered 503 problem+json with Retry-After',
        )
        .toEqual([]);
    }, 120_000);

    it('fails a transaction whose connection dies with the server, and carries on', async () => {
      const inst = installation!;
      const db = inst.db;
      await sql`select 1`.execute(db);
      // The transaction holds its connection between two statements, as a command does while it
      // works out what to write; the server dies in between: the second statement waits for the kill.
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      let serverDied!: () => void;
      const died = new Promise<void>((resolve) => (serverDied = resolve));
      const transaction = db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        holding();
        await died;
        await sql`select 2`.execute(trx);
      });
      const ended = transaction.then(
        () => 'committed',
        (error: unknown) => error,
      );
      await held;
      await inst.postgres.kill();
      serverDied();
      expect(await ended).toBeInstanceOf(Error);
      await inst.postgres.start();
      // The pool drops the dead connections and opens new ones.
      const answered = await (async () => {
        const deadline = Date.now() + STATE_TIMEOUT_MS;
        for (;;) {
          try {
            return (await sql<{ n: number }>`select 3 as n`.execute(db)).rows[0]?.n;
          } catch (error) {
            if (Date.now() > deadline) throw error;
            await sleep(100);
          }
        }
      })();
      expect(answered).toBe(3);
    }, 60_000);

    it('forwards, with the same worker, what is submitted after the database came back', async () => {
      const inst = installation!;
      const [api, worker] = await Promise.all([inst.start('api'), inst.start('worker')]);
      const http = client ?? createRefhubClient(inst.senderKey);
      client = http;
      const atEhr = (ids: readonly string[]) => () => {
        const got = new Set(inst.ehr.deliveries().map((d) => d.messageId));
        return Promise.resolve(ids.every((id) => got.has(id)) ? true : undefined);
      };
      const before = await submitMany(http, api.address, 2, 'before-restart');
      await eventually(
        'the forwards before the restart at the EHR',
        atEhr(before.map((r) => r.messageId)),
        STATE_TIMEOUT_MS,
      );
      await inst.postgres.kill();
      await inst.postgres.start();
      // The API answers again once its pool has new connections; then the worker must take the work.
      const after = await eventually(
        'a submit accepted after the restart',
        async () => {
          try {
            return await submitMany(http, api.address, 2, 'after-restart');
          } catch {
            return undefined;
          }
        },
        STATE_TIMEOUT_MS,
      );
      await eventually(
        'the forwards after the restart at the EHR',
        atEhr(after.map((r) => r.messageId)),
        STATE_TIMEOUT_MS,
      );
      expect(await Promise.race([worker.exited, Promise.resolve('running')])).toBe('running');
    }, 180_000);
  },
);
