// The scale-out scenario (PostgreSQL): does forwarding grow with `refhub worker` processes? The same
// burst of submits as the forward scenario goes to three installations on this machine, each with a
// database and a queue prefix of its own, all forwarding to the run's sandbox EHR:
//
//   one process     `refhub all`
//   api + worker    `refhub api` and one `refhub worker`
//   api + 2 workers `refhub api` and two `refhub worker` processes (each runs a relay and a forward
//                   worker of concurrency 16; the relays share the outbox by SKIP LOCKED)
//
// in interleaved rounds; the figure is the delivery rate of api + 2 workers over one process's. The
// goal (≥ 1.6×) is for a machine with a core to spare per process; the row also reports the CPU each
// installation used per referral and how busy the whole machine was, which says what limits it here.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { BenchEnv, RefhubDatabase } from '../environment.ts';
import { refhubDatabase } from '../environment.ts';
import { startRefhub, startRefhubRole, type Service } from '../processes.ts';
import { median, medianOfRounds, type ResultRow } from '../stats.ts';
import { burst, refhubSide, settle, type BurstFigures, type ForwardPlan } from './forward.ts';

export interface ScaleOutPlan extends ForwardPlan {
  readonly nodeOptions: readonly string[];
}

/** The goal: api + 2 workers forward at least this many times as fast as one process. */
export const SCALE_OUT_GOAL = 1.6;

interface Installation {
  readonly name: string;
  readonly data: RefhubDatabase;
  readonly api: Service;
  readonly processes: readonly Service[];
}

async function install(
  env: BenchEnv,
  name: string,
  suffix: string,
  workers: number,
  plan: ScaleOutPlan,
): Promise<Installation> {
  const data = await refhubDatabase(env, suffix, plan.burst * plan.rounds);
  const settings = {
    databaseUrl: data.url,
    dataDir: '',
    redisUrl: env.redisUrl,
    queuePrefix: `${env.queuePrefix}-${suffix}`,
    ehrUrl: env.sandbox.address,
    nodeOptions: plan.nodeOptions,
  };
  const processes: Service[] = [];
  // Each process has a data directory of its own, as it would on a machine of its own.
  const dataDir = async (process: string) => {
    const dir = path.join(env.dataDir, suffix, process);
    await fs.mkdir(dir, { recursive: true });
    return dir;
  };
  try {
    if (workers === 0) {
      const all = await startRefhub({ ...settings, dataDir: await dataDir('all') });
      processes.push(all);
      return { name, data, api: all, processes };
    }
    const api = await startRefhubRole('api', { ...settings, dataDir: await dataDir('api') });
    processes.push(api);
    for (let i = 0; i < workers; i++)
      processes.push(await startRefhubRole('worker', { ...settings, dataDir: await dataDir(`worker${i}`) }));
    return { name, data, api, processes };
  } catch (error) {
    for (const p of processes) await p.stop();
    await data.close();
    throw error;
  }
}

export async function scaleOutScenario(env: BenchEnv, plan: ScaleOutPlan): Promise<ResultRow[]> {
  if (env.engine !== 'postgres') throw new Error('the scale-out scenario runs on PostgreSQL only');
  const installations: Installation[] = [];
  try {
    installations.push(await install(env, 'one process (refhub all)', 'scale_all', 0, plan));
    installations.push(await install(env, 'refhub api + 1 worker', 'scale_w1', 1, plan));
    installations.push(await install(env, 'refhub api + 2 workers', 'scale_w2', 2, plan));
    const figures = new Map<string, BurstFigures[]>(installations.map((i) => [i.name, []]));
    for (let round = 1; round <= plan.rounds; round++) {
      for (const installation of installations) {
        await settle(env, 180_000, installation.data.db);
        const side = refhubSide(installation.api.address, installation.processes, {
          parties: installation.data.parties,
          pool: installation.data.pool,
          db: installation.data.db,
        });
        const f = await burst(env, side, plan);
        figures.get(installation.name)?.push(f);
        env.log(
          `  scale-out round ${round}: ${installation.name} ${Math.round(f.delivery.rate)} referrals/s ` +
            `(${f.cpuMsPerReferral.toFixed(1)} ms CPU/referral, machine ${Math.round(f.machineBusy * 100)}% busy)`,
        );
      }
    }
    const [one, w1, w2] = installations.map((i) => figures.get(i.name) ?? []);
    if (one === undefined || w1 === undefined || w2 === undefined)
      throw new Error('an installation is missing');
    const describe = (name: string, f: BurstFigures[]) =>
      `${name}: ${median(f.map((x) => x.cpuMsPerReferral)).toFixed(1)} ms CPU/referral, machine ` +
      `${Math.round(median(f.map((x) => x.machineBusy)) * 100)}% busy`;
    const note =
      `CPU of the installation's processes per referral delivered and the machine's busy share during ` +
      `the bursts: ${describe('one process', one)}; ${describe('api + 1 worker', w1)}; ` +
      describe('api + 2 workers', w2);
    const row = (scenario: string, subject: BurstFigures[]): ResultRow => ({
      scenario,
      unit: 'referrals/s',
      percentiles: ['p50', 'p95'],
      refhub: medianOfRounds(subject.map((f) => f.delivery)),
      baseline: medianOfRounds(one.map((f) => f.delivery)),
      baselineName: 'one process (refhub all), the same burst, its own database and queue',
      rounds: plan.rounds,
      // RSS here is the sum of the installation's processes, not one refhub all's.
      refhubAll: false,
    });
    const scaled = row('scale-out api+2 workers', w2);
    const ratio = scaled.refhub.rate / (scaled.baseline?.rate ?? Number.NaN);
    return [
      {
        ...scaled,
        goal: {
          text: `rate ≥ ${SCALE_OUT_GOAL}× one process (a goal for a machine with more cores)`,
          met: scaled.refhub.errors === 0 && ratio >= SCALE_OUT_GOAL,
        },
        note,
      },
      row('scale-out api+1 worker', w1),
    ];
  } finally {
    for (const installation of installations) {
      for (const p of [...installation.processes].reverse()) await p.stop().catch(() => undefined);
      await installation.data.close().catch(() => undefined);
    }
  }
}
