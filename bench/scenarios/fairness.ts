// The fairness scenario: how long institution A's webhooks take while institution B has a backlog of
// deliveries to receivers that never answer (docs/scaling.md, "Fair delivery across institutions").
//
// B (the reader's clinic) subscribes 20 times (the most an institution may) to a receiver that accepts
// each request and never answers, and creates 10 referrals: 200 deliveries, each held until its
// deadline (WEBHOOK_ATTEMPT_TIMEOUT_SECONDS) and then retried. A (the writer's clinic) subscribes once
// to a receiver that answers 204 at once and creates referrals one at a time; the row reports the
// latency from each of A's events' commit to its arrival. Rounds alternate: with B's backlog (refhub)
// and without it (baseline: B's subscriptions disabled and its held requests closed first). The ratio
// is what B's backlog costs A; before fair delivery it was a delivery deadline and more (511 ms
// became 88 s).
import http from 'node:http';
import type net from 'node:net';
import { Pool } from 'undici';
import type { BenchEnv } from '../environment.ts';
import { sampleRss } from '../processes.ts';
import type { BenchParty } from '../seed.ts';
import { BENCH_REQUESTER, typicalReferralFields } from '../seed.ts';
import { medianOfRounds, percentile, runInterleaved, type ResultRow } from '../stats.ts';

export interface FairnessPlan {
  readonly rounds: number;
  /** B's subscriptions to the receiver that never answers (at most 20 per institution). */
  readonly deadSubscriptions: number;
  /** B's referrals per round: each is one delivery per subscription. */
  readonly backlogReferrals: number;
  /** A's referrals per round, created one at a time, `paceMs` apart. */
  readonly probes: number;
  readonly paceMs: number;
  readonly timeoutSeconds: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Arrival {
  readonly referralId: string;
  readonly occurredAt: number;
  readonly receivedAt: number;
}

/** A receiver that answers 204 at once (`holds` false) or holds every request open until closed. */
async function startReceiver(holds: boolean) {
  const arrivals: Arrival[] = [];
  const sockets = new Set<net.Socket>();
  let open = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const receivedAt = Date.now();
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          data: { referralId: string; occurredAt: string };
        };
        arrivals.push({
          referralId: body.data.referralId,
          occurredAt: Date.parse(body.data.occurredAt),
          receivedAt,
        });
      } catch {
        // Counted as missing.
      }
      if (!holds) {
        response.writeHead(204).end();
        return;
      }
      open++;
      response.once('close', () => {
        open--;
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/refhub`,
    arrivals,
    held: () => open,
    /** Closes every connection: held requests end as network errors at refhub. */
    drop() {
      for (const socket of sockets) socket.destroy();
    },
    close() {
      this.drop();
      return new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}

function client(env: BenchEnv, party: BenchParty) {
  const pool = new Pool(env.refhub.address, { connections: 4 });
  const base = `/api/v1/institutions/${party.institution.idType}/${party.institution.id}/webhook-subscriptions`;
  const send = async (method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) => {
    const response = await pool.request({
      method,
      path,
      headers: {
        authorization: `ApiKey ${party.key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.body.text();
    return { status: response.statusCode, json: () => JSON.parse(text) as Record<string, unknown> };
  };
  return {
    async subscribe(url: string): Promise<string> {
      const res = await send('POST', base, { url, description: 'benchmark receiver (fairness)' });
      if (res.status !== 201) throw new Error(`subscribing answered ${res.status}`);
      return String(res.json().id);
    },
    async setEnabled(ids: readonly string[], enabled: boolean): Promise<void> {
      for (const id of ids) {
        const res = await send('PATCH', `${base}/${id}`, { enabled });
        if (res.status !== 200) throw new Error(`changing a subscription answered ${res.status}`);
      }
    },
    async remove(ids: readonly string[]): Promise<void> {
      for (const id of ids) await send('DELETE', `${base}/${id}`);
    },
    async createDraft(i: number): Promise<string> {
      const res = await send('POST', '/api/v1/referrals', {
        institutionIdType: party.institution.idType,
        institutionId: party.institution.id,
        requesterIdentifier: BENCH_REQUESTER,
        ...typicalReferralFields(i),
      });
      if (res.status !== 201) throw new Error(`creating a draft answered ${res.status}`);
      return String(res.json().id);
    },
    close: () => pool.close(),
  };
}

export async function fairnessScenario(env: BenchEnv, plan: FairnessPlan): Promise<ResultRow> {
  const dead = await startReceiver(true);
  const answering = await startReceiver(false);
  // B is the reader's clinic, which no other scenario subscribes for: it may have 20 subscriptions.
  const b = client(env, env.parties.reader);
  const a = client(env, env.parties.writer);
  const bSubscriptions: string[] = [];
  let aSubscription: string | undefined;
  try {
    for (let i = 0; i < plan.deadSubscriptions; i++) bSubscriptions.push(await b.subscribe(dead.url));
    aSubscription = await a.subscribe(answering.url);
    let offset = 7_000_000;

    const results = await runInterleaved(plan.rounds, async (turn) => {
      const until = Date.now() + plan.timeoutSeconds * 1000;
      if (turn.side === 'refhub') {
        // B's backlog: every subscription on, its referrals created, and its requests being held.
        await b.setEnabled(bSubscriptions, true);
        for (let i = 0; i < plan.backlogReferrals; i++) await b.createDraft(offset++);
        while (dead.held() === 0 && Date.now() < until) await sleep(20);
      } else {
        // No backlog: B's subscriptions off (its queued jobs end at their re-read) and its held
        // requests closed.
        await b.setEnabled(bSubscriptions, false);
        dead.drop();
        while (dead.held() > 0 && Date.now() < until) await sleep(20);
      }
      const rss = sampleRss(env.refhub);
      const started = Date.now();
      const ids = new Set<string>();
      for (let i = 0; i < plan.probes; i++) {
        ids.add(await a.createDraft(offset++));
        await sleep(plan.paceMs);
      }
      const mine = () => answering.arrivals.filter((x) => ids.has(x.referralId));
      while (mine().length < ids.size && Date.now() < until) await sleep(20);
      const arrivals = mine();
      const last = Math.max(started, ...arrivals.map((x) => x.receivedAt));
      const latencies = arrivals.map((x) => x.receivedAt - x.occurredAt);
      return {
        rate: arrivals.length / Math.max(0.001, (last - started) / 1000),
        p50: percentile(latencies, 50),
        tail: percentile(latencies, 95),
        rssMiB: rss.stop(),
        errors: ids.size - arrivals.length,
      };
    });

    return {
      scenario: `webhooks of institution A beside B's backlog (${plan.deadSubscriptions}×${plan.backlogReferrals} deliveries to a receiver that never answers)`,
      unit: 'events/s',
      percentiles: ['p50', 'p95'],
      refhub: medianOfRounds(results.refhub),
      baseline: medianOfRounds(results.baseline),
      baselineName: 'A alone: no backlog of B',
      rounds: plan.rounds,
      note: `A's events one every ${plan.paceMs} ms; latency from the event's commit to its arrival`,
    };
  } finally {
    // Nothing of this scenario is left to deliver to a closed receiver.
    await b.remove(bSubscriptions).catch(() => undefined);
    if (aSubscription !== undefined) await a.remove([aSubscription]).catch(() => undefined);
    await a.close();
    await b.close();
    await dead.close();
    await answering.close();
  }
}
