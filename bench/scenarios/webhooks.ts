// The webhooks scenario, in two rows.
//
// Delivery: a local receiver (a bare node:http server in this process, answering 204) subscribes for
// the writer's institution; a burst of referrals is created and submitted through the API, and the
// row reports the events delivered per second from the burst's start to its last delivery, with the
// latency from each event's commit (`occurredAt`) to its arrival. It has no baseline: the figure is
// refhub's own (relay, queue, signing, undici, the attempt's record).
//
// Submit cost: submits measured in interleaved rounds, with the subscription enabled (refhub: the
// relay fans events out and the worker delivers them while the submits run) and disabled (baseline:
// events are still written, by the timeline's own statement, but nobody is sent anything). The ratio
// is what delivering webhooks adds to a submit.
import http from 'node:http';
import type net from 'node:net';
import { Pool } from 'undici';
import type { BenchEnv } from '../environment.ts';
import { sampleRss } from '../processes.ts';
import { BENCH_REQUESTER, typicalReferralFields } from '../seed.ts';
import { medianOfRounds, percentile, runInterleaved, type Measurement, type ResultRow } from '../stats.ts';

export interface WebhookPlan {
  readonly rounds: number;
  /** Referrals created and submitted in the delivery burst (two events each, and a forward later). */
  readonly burst: number;
  /** Submits per round of the submit-cost row. */
  readonly submitsPerRound: number;
  readonly connections: number;
  readonly timeoutSeconds: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Arrival {
  readonly referralId: string;
  readonly type: string;
  readonly occurredAt: number;
  readonly receivedAt: number;
}

async function startReceiver() {
  const arrivals: Arrival[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const receivedAt = Date.now();
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          type: string;
          data: { referralId: string; occurredAt: string };
        };
        arrivals.push({
          referralId: body.data.referralId,
          type: body.type,
          occurredAt: Date.parse(body.data.occurredAt),
          receivedAt,
        });
      } catch {
        // Counted as missing.
      }
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/refhub`,
    arrivals,
    close: () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  };
}

function api(env: BenchEnv, connections: number) {
  const { writer } = env.parties;
  const pool = new Pool(env.refhub.address, { connections });
  const base = `/api/v1/institutions/${writer.institution.idType}/${writer.institution.id}/webhook-subscriptions`;
  const send = async (method: 'POST' | 'PATCH', path: string, body: unknown) => {
    const response = await pool.request({
      method,
      path,
      headers: { 'content-type': 'application/json', authorization: `ApiKey ${writer.key}` },
      body: JSON.stringify(body),
    });
    const text = await response.body.text();
    return { status: response.statusCode, json: () => JSON.parse(text) as Record<string, unknown> };
  };
  const acting = {
    institutionIdType: writer.institution.idType,
    institutionId: writer.institution.id,
    requesterIdentifier: BENCH_REQUESTER,
  };
  return {
    async subscribe(url: string): Promise<string> {
      const res = await send('POST', base, { url, description: 'benchmark receiver' });
      if (res.status !== 201) throw new Error(`subscribing answered ${res.status}`);
      return String(res.json().id);
    },
    async setEnabled(id: string, enabled: boolean): Promise<void> {
      const res = await send('PATCH', `${base}/${id}`, { enabled });
      if (res.status !== 200) throw new Error(`changing the subscription answered ${res.status}`);
    },
    async createDrafts(count: number, offset: number): Promise<string[]> {
      const ids: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(connections, count) }, async () => {
          for (let i = next++; i < count; i = next++) {
            const res = await send('POST', '/api/v1/referrals', {
              ...acting,
              ...typicalReferralFields(offset + i),
            });
            if (res.status !== 201) throw new Error(`creating a draft answered ${res.status}`);
            ids.push(String(res.json().id));
          }
        }),
      );
      return ids;
    },
    /** Submits each of `ids`; returns each submit's latency in ms and the failures. */
    async submitAll(
      ids: readonly string[],
    ): Promise<{ latencies: number[]; failed: number; seconds: number }> {
      const latencies: number[] = [];
      let failed = 0;
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: connections }, async () => {
          for (let id = ids[next++]; id !== undefined; id = ids[next++]) {
            const at = performance.now();
            const res = await send('POST', `/api/v1/referrals/${id}/submit`, acting);
            latencies.push(performance.now() - at);
            if (res.status !== 200) failed++;
          }
        }),
      );
      return { latencies, failed, seconds: (performance.now() - started) / 1000 };
    },
    close: () => pool.close(),
  };
}

export async function webhookScenario(env: BenchEnv, plan: WebhookPlan): Promise<ResultRow[]> {
  const receiver = await startReceiver();
  const client = api(env, plan.connections);
  try {
    const subscription = await client.subscribe(receiver.url);
    let offset = 5_000_000;

    // Delivery: every created and submitted event of the burst, to the receiver.
    const deliveryRounds: Measurement[] = [];
    for (let round = 0; round < plan.rounds; round++) {
      const rss = sampleRss(env.refhub);
      const started = Date.now();
      const ids = await client.createDrafts(plan.burst, offset);
      offset += plan.burst;
      const { failed } = await client.submitAll(ids);
      const wanted = new Set(ids);
      const mine = () =>
        receiver.arrivals.filter(
          (a) =>
            wanted.has(a.referralId) &&
            (a.type === 'referral.created' || a.type === 'referral.pending-acceptance'),
        );
      const until = started + plan.timeoutSeconds * 1000;
      while (mine().length < ids.length * 2 && Date.now() < until) await sleep(50);
      const arrivals = mine();
      const last = Math.max(...arrivals.map((a) => a.receivedAt));
      const latencies = arrivals.map((a) => a.receivedAt - a.occurredAt);
      deliveryRounds.push({
        rate: arrivals.length / ((last - started) / 1000),
        p50: percentile(latencies, 50),
        tail: percentile(latencies, 99),
        rssMiB: rss.stop(),
        errors: failed + Math.max(0, ids.length * 2 - arrivals.length),
      });
    }

    // Submit cost: the same submits with the subscription enabled and disabled, interleaved.
    const results = await runInterleaved(plan.rounds, async (turn) => {
      await client.setEnabled(subscription, turn.side === 'refhub');
      const ids = await client.createDrafts(plan.submitsPerRound, offset);
      offset += plan.submitsPerRound;
      // Let the creates' deliveries drain, so that each side's submits meet the same state.
      await sleep(1_000);
      const rss = sampleRss(env.refhub);
      const { latencies, failed, seconds } = await client.submitAll(ids);
      return {
        rate: ids.length / seconds,
        p50: percentile(latencies, 50),
        tail: percentile(latencies, 99),
        rssMiB: rss.stop(),
        errors: failed,
      };
    });
    await client.setEnabled(subscription, false);

    return [
      {
        scenario: `webhook delivery (${plan.burst} referrals: created and submitted events)`,
        unit: 'events/s',
        refhub: medianOfRounds(deliveryRounds),
        baseline: null,
        baselineName: 'none: commit → receiver latency',
        rounds: plan.rounds,
        note: 'latency from the event’s commit to its arrival at a local receiver',
      },
      {
        scenario: 'submit while webhooks are delivered',
        unit: 'req/s',
        refhub: medianOfRounds(results.refhub),
        baseline: medianOfRounds(results.baseline),
        baselineName: 'the same submits, subscription disabled',
        rounds: plan.rounds,
        note: 'the event row is written by the timeline’s own statement either way: no added round trip',
      },
    ];
  } finally {
    await client.close();
    await receiver.close();
  }
}
