// `npm run bench`: refhub measured beside bare baselines on this machine, in one run.
//
//   npm run bench                     PostgreSQL (BENCH_DATABASE_URL, default the local test database)
//   npm run bench -- --pglite         embedded PGlite
//   npm run bench -- --soak           and then ten minutes of mixed load, for memory over time
//   npm run bench -- --only get,list  some scenarios only (render, get, list, forward, burst, queues,
//                                     write, scale, growth, webhooks, fairness, uploads)
//   npm run bench -- --cpu-stages     the forward scenario alone, with refhub under --cpu-prof, and a
//                                     table of CPU per referral by stage of the forward
//
// The machine is shared and noisy, so no figure stands alone: each scenario runs refhub and its
// baseline in alternating rounds (A B A B …) and reports each side's median round and their ratio.
// The table is printed and written to bench/results/latest.json. docs/performance.md explains the
// scenarios and records the latest figures. It asserts nothing: goals are marked met or not.
//
// Settings: BENCH_ROUNDS (3), BENCH_SECONDS per run (8), BENCH_FORWARD_BURST (5000),
// BENCH_FORWARD_ROUNDS (2), BENCH_BURST_SIZE (2000) and BENCH_BURST_ROUNDS (3: the burst scenario's
// bursts on one database), BENCH_WRITE_DRAFTS (15000), BENCH_SOAK_SECONDS (600),
// BENCH_SCALE_BURST (2000), BENCH_QUEUES_SECONDS (20: how long each queue set-up is offered its
// load per round), BENCH_GROWTH_SIZES (100000,1000000; add 10000000 for the full growth),
// BENCH_BACKLOG (100000: forwards queued during the growth scenario's EHR outage),
// BENCH_WEBHOOK_BURST (1000), BENCH_REFHUB_NODE_OPTIONS (Node flags for the refhub processes after
// those of npm start, such as other heap limits or --cpu-prof), BENCH_QUEUE_BACKEND (postgres or
// redis: where the refhub processes of the scenarios other than queues keep their queues; unset, in
// Redis), REDIS_URL (redis://127.0.0.1:6379), BENCH_LOG_DIR (a directory that keeps every line the
// processes write; unset, only the last lines, shown when one fails).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setUp, type BenchEnv } from './environment.ts';
import { ROOT } from './processes.ts';
import { getScenario, listScenario, writeScenario, type RoundPlan } from './scenarios/api.ts';
import { forwardScenario } from './scenarios/forward.ts';
import { burstScenario } from './scenarios/burst.ts';
import { renderScenario } from './scenarios/render.ts';
import { soakScenario, type SoakSample } from './scenarios/soak.ts';
import { growthScenario } from './scenarios/growth.ts';
import { scaleOutScenario } from './scenarios/scale-out.ts';
import { queueBackendsScenario } from './scenarios/queue-backends.ts';
import { webhookScenario } from './scenarios/webhooks.ts';
import { fairnessScenario } from './scenarios/fairness.ts';
import { uploadsScenario } from './scenarios/uploads.ts';
import {
  attributeProfile,
  formatStageTable,
  perReferral,
  sumStageTimes,
  type CpuProfile,
} from './cpu-profile.ts';
import { formatTable, memoryRow, resultsDocument, type ResultRow } from './stats.ts';

const SCENARIOS = [
  'render',
  'get',
  'list',
  'forward',
  'burst',
  'queues',
  'write',
  'scale',
  'growth',
  'webhooks',
  'fairness',
  'uploads',
] as const;
/** Scenarios that need PostgreSQL; on PGlite they are left out. */
const POSTGRES_ONLY: readonly Scenario[] = ['queues', 'scale', 'growth'];
type Scenario = (typeof SCENARIOS)[number];

function numberFrom(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

function parseOptions() {
  const { values } = parseArgs({
    options: {
      pglite: { type: 'boolean', default: false },
      soak: { type: 'boolean', default: false },
      only: { type: 'string', multiple: true },
      'cpu-stages': { type: 'boolean', default: false },
    },
  });
  const only = (values.only ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
  for (const name of only) {
    if (!(SCENARIOS as readonly string[]).includes(name)) {
      throw new Error(`--only: unknown scenario "${name}"; choose from ${SCENARIOS.join(', ')}`);
    }
  }
  const cpuStages = values['cpu-stages'];
  if (cpuStages && only.some((name) => name !== 'forward'))
    throw new Error('--cpu-stages profiles the forward scenario alone; leave out --only');
  const engine = values.pglite ? ('pglite' as const) : ('postgres' as const);
  const chosen = new Set<Scenario>(
    cpuStages ? ['forward'] : only.length === 0 ? SCENARIOS : (only as Scenario[]),
  );
  if (engine === 'pglite') for (const name of POSTGRES_ONLY) chosen.delete(name);
  return { engine, soak: values.soak, chosen, cpuStages };
}

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

async function main(): Promise<void> {
  const { engine, soak, chosen, cpuStages } = parseOptions();
  const rounds = numberFrom('BENCH_ROUNDS', 3);
  const seconds = numberFrom('BENCH_SECONDS', 8);
  const burst = numberFrom('BENCH_FORWARD_BURST', 5000);
  // A burst of 5,000 takes about a minute here; two rounds keep the whole run under ten minutes.
  const forwardRounds = numberFrom('BENCH_FORWARD_ROUNDS', 2);
  const soakSeconds = numberFrom('BENCH_SOAK_SECONDS', 600);
  const scaleBurst = numberFrom('BENCH_SCALE_BURST', 2000);
  const backlog = numberFrom('BENCH_BACKLOG', 100_000);
  const burstSize = numberFrom('BENCH_BURST_SIZE', 2000);
  const burstRounds = numberFrom('BENCH_BURST_ROUNDS', 3);
  const growthSizes = (process.env.BENCH_GROWTH_SIZES ?? '100000,1000000')
    .split(',')
    .map((v) => Number(v.trim()))
    .sort((a, b) => a - b);
  if (growthSizes.some((n) => !Number.isInteger(n) || n < 10_000))
    throw new Error('BENCH_GROWTH_SIZES: whole numbers of at least 10000, comma-separated');
  const nodeOptions = (process.env.BENCH_REFHUB_NODE_OPTIONS ?? '').split(' ').filter(Boolean);
  const profileDir = cpuStages ? await fs.mkdtemp(path.join(os.tmpdir(), 'refhub-cpu-')) : undefined;
  const refhubNodeOptions =
    profileDir === undefined ? nodeOptions : [...nodeOptions, '--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  let forwardedReferrals = 0;
  let wholeRunPeak: number | undefined;
  const idleSamples = 30;
  const plan: RoundPlan = { rounds, seconds, warmupSeconds: 3, connections: 50 };
  const began = Date.now();
  const rows: ResultRow[] = [];
  const extra: Record<string, unknown> = {};

  // Rendering first, in this process, while nothing else runs.
  if (chosen.has('render')) {
    log('render: typical and largest referral…');
    rows.push(...(await renderScenario({ rounds, seconds: 1.5 })));
  }

  const needsServers = [...chosen].some((s) => s !== 'render') || soak;
  if (needsServers) {
    const env: BenchEnv = await setUp({
      engine,
      databaseUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      // A write round at 50 connections consumes one draft per submit; this leaves ample room.
      // The uploads take one draft of their own.
      writeDrafts:
        (chosen.has('write') ? numberFrom('BENCH_WRITE_DRAFTS', 15_000) : 0) +
        (chosen.has('uploads') ? 1 : 0),
      forwardDrafts:
        (chosen.has('forward') ? burst * forwardRounds + idleSamples : 0) +
        (chosen.has('burst') ? burstSize * burstRounds : 0),
      bareDrafts:
        (chosen.has('forward') ? burst * forwardRounds + idleSamples : 0) +
        (chosen.has('burst') ? burstSize * burstRounds : 0),
      refhubNodeOptions,
      log,
    });
    const stop = () => {
      log('interrupted: cleaning up…');
      void env.tearDown().finally(() => process.exit(130));
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      log(`refhub all (pid ${env.refhub.pid}) at ${env.refhub.address}; baseline at ${env.baseline.address}`);
      const steps: [Scenario, () => Promise<ResultRow | ResultRow[]>][] = [
        ['get', () => getScenario(env, plan)],
        ['list', () => listScenario(env, plan)],
        [
          'forward',
          () =>
            forwardScenario(env, {
              rounds: forwardRounds,
              burst,
              connections: plan.connections,
              idleSamples,
              timeoutSeconds: 240,
            }),
        ],
        [
          'burst',
          () =>
            burstScenario(env, {
              rounds: burstRounds,
              burst: burstSize,
              connections: plan.connections,
              idleSamples: 0,
              timeoutSeconds: 600,
            }),
        ],
        [
          'queues',
          () =>
            queueBackendsScenario(env, {
              rounds: forwardRounds,
              seconds: numberFrom('BENCH_QUEUES_SECONDS', 20),
              warmupSeconds: plan.warmupSeconds,
              connections: plan.connections,
              timeoutSeconds: 120,
            }),
        ],
        [
          'scale',
          () =>
            scaleOutScenario(env, {
              rounds: forwardRounds,
              burst: scaleBurst,
              connections: plan.connections,
              idleSamples: 0,
              timeoutSeconds: 240,
              nodeOptions,
            }),
        ],
        [
          'growth',
          () => growthScenario(env, { ...plan, sizes: growthSizes, institutions: 10, backlog, nodeOptions }),
        ],
        ['uploads', () => uploadsScenario(env, { files: 10, fileMiB: 10, budgetMiB: 80 })],
        // Last: each submit and cancel queues a forward, and the backlog drains long after the run.
        ['write', () => writeScenario(env, plan)],
        [
          'webhooks',
          () =>
            webhookScenario(env, {
              rounds,
              burst: numberFrom('BENCH_WEBHOOK_BURST', 1000),
              submitsPerRound: 500,
              connections: plan.connections,
              timeoutSeconds: 240,
            }),
        ],
        [
          'fairness',
          () =>
            fairnessScenario(env, {
              rounds,
              deadSubscriptions: 20,
              backlogReferrals: 10,
              probes: 20,
              paceMs: 100,
              timeoutSeconds: 120,
            }),
        ],
      ];
      for (const [name, step] of steps) {
        if (!chosen.has(name)) continue;
        log(`${name}…`);
        const result = await step();
        rows.push(...(Array.isArray(result) ? result : [result]));
      }
      if (soak) {
        log(`soak: ${soakSeconds} s of mixed load…`);
        const { row, samples } = await soakScenario(env, { seconds: soakSeconds, sampleEverySeconds: 10 });
        rows.push(row);
        extra.soakSamples = samples satisfies SoakSample[];
      }
      if (cpuStages && env.db !== undefined) {
        const row = await env.db
          .selectFrom('referrals')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('ehr_state', '=', 'forwarded')
          .executeTakeFirstOrThrow();
        forwardedReferrals = Number(row.n);
      }
      wholeRunPeak = env.peakRssMiB();
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      await env.tearDown();
    }
  }

  if (profileDir !== undefined) {
    // Written by refhub as it exits, at tear-down.
    const files = (await fs.readdir(profileDir)).filter((f) => f.endsWith('.cpuprofile'));
    const times = await Promise.all(
      files.map(async (f) =>
        attributeProfile(JSON.parse(await fs.readFile(path.join(profileDir, f), 'utf8')) as CpuProfile),
      ),
    );
    if (times.length > 0 && forwardedReferrals > 0) {
      const total = sumStageTimes(times);
      const stages = perReferral(total, forwardedReferrals);
      extra.cpuStages = { referrals: forwardedReferrals, stages, profiles: files.length };
      console.log(`\nCPU of refhub all per referral, by stage of the forward (--cpu-prof):\n`);
      console.log(formatStageTable(stages, forwardedReferrals, total.busyMicros['start-up']));
    } else {
      log(`--cpu-stages: no profile in ${profileDir}, or nothing was forwarded`);
    }
    // BENCH_KEEP_PROFILE=1 leaves the profiles for a closer look (Chrome DevTools, speedscope).
    if (process.env.BENCH_KEEP_PROFILE === '1') log(`--cpu-stages: the profiles are in ${profileDir}`);
    else await fs.rm(profileDir, { recursive: true, force: true });
  }

  const memory = memoryRow(
    rows,
    undefined,
    wholeRunPeak === undefined
      ? undefined
      : {
          peakMiB: wholeRunPeak,
          settings:
            refhubNodeOptions.length === 0
              ? 'with the settings npm start uses'
              : `with Node options ${refhubNodeOptions.join(' ')} after those of npm start`,
        },
  );
  if (memory !== undefined) rows.push(memory);
  const document = resultsDocument(rows, {
    date: new Date().toISOString(),
    engine,
    machine: {
      cpus: os.availableParallelism(),
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
    },
    durationSeconds: Math.round((Date.now() - began) / 1000),
    extra,
  });
  const file = path.join(ROOT, 'bench', 'results', 'latest.json');
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, `${JSON.stringify(document, null, 2)}\n`);
  console.log(`\nrefhub against bare baselines on ${engine}, ${rounds} interleaved rounds, medians:\n`);
  console.log(formatTable(rows));
  console.log(`\n${document.durationSeconds} s in all; written to ${path.relative(process.cwd(), file)}`);
}

await main();
