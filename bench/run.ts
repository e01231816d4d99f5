// Benchmarks: how fast refhub renders EHR forms and answers the hottest API calls, on embedded
// PGlite and on PostgreSQL. It prints numbers and ratios; it asserts nothing, because timings on a
// shared machine are not pass/fail material.
//
//   npm run bench                  (PostgreSQL from TEST_DATABASE_URL, default local "test" database)
//   BENCH_SECONDS=10 npm run bench (longer runs, steadier numbers)
import autocannon from 'autocannon';
import { buildApp } from '../src/api/app.ts';
import { loadConfig } from '../src/config.ts';
import { createContext, type AppContext } from '../src/context.ts';
import type { Engine } from '../src/db/database.ts';
import { createLogger } from '../src/logger.ts';
import { renderEhrForm } from '../src/render/ehr-form.ts';
import { DEMO_CATALOG_FILE } from '../src/services/demo-setup.ts';
import { openTestStore } from '../test/support/engines.ts';
import { sampleEhrFormSource } from '../test/support/fixtures/ehr-form-source.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? '5');
const REFERRALS = Number(process.env.BENCH_REFERRALS ?? '500');

function renderBench(): void {
  const source = sampleEhrFormSource();
  for (let i = 0; i < 200; i++) renderEhrForm(source); // warm-up
  const runs = 3000;
  const heapBefore = process.memoryUsage().heapUsed;
  const started = process.hrtime.bigint();
  let bytes = 0;
  for (let i = 0; i < runs; i++) bytes += renderEhrForm(source).html.length;
  const ns = Number(process.hrtime.bigint() - started);
  const heapAfter = process.memoryUsage().heapUsed;
  console.log(
    `render ehrForm: ${((runs * 1e9) / ns).toFixed(0)} forms/s, ${(ns / runs / 1000).toFixed(1)} µs/form, ` +
      `${(bytes / runs / 1024).toFixed(1)} KiB/form, heap change ${((heapAfter - heapBefore) / 1048576).toFixed(1)} MiB`,
  );
}

async function seed(ctx: AppContext): Promise<{ key: string; referralId: string }> {
  await ctx.catalog.loadFile(DEMO_CATALOG_FILE);
  const { key } = await ctx.apiKeys.create({
    system: 'HAS',
    role: 'sender',
    institutions: [{ idType: 'hci', id: 'S1234A' }],
    environment: 'test',
  });
  const record = await ctx.apiKeys.authenticate(key);
  if (!record) throw new Error('the benchmark key does not authenticate');
  const caller = {
    apiKeyId: record.id,
    system: 'HAS',
    role: 'sender' as const,
    institution: { idType: 'hci', id: 'S1234A' },
    requesterIdentifier: null,
    requestId: 'bench',
  };
  let referralId = '';
  for (let i = 0; i < REFERRALS; i++) {
    const view = await ctx.referralCommands.create(caller, {
      offeringId: 'cgh-gastro',
      patientUin: 'S1234567D',
      patientName: `Bench Patient ${i}`,
      clinicalInfo: 'Benchmark referral',
    });
    if (i % 2 === 0) await ctx.referralCommands.submit(caller, view.id);
    referralId = view.id;
  }
  return { key, referralId };
}

async function load(url: string, key: string): Promise<autocannon.Result> {
  return autocannon({
    url,
    connections: 10,
    duration: SECONDS,
    headers: { authorization: `ApiKey ${key}` },
  });
}

async function apiBench(engine: Engine): Promise<Record<string, number>> {
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '1000000' });
  const store = await openTestStore(engine);
  const ctx = await createContext(config, 'bench', { store, logger: createLogger(config) });
  const seedStart = Date.now();
  const { key, referralId } = await seed(ctx);
  const seedMs = Date.now() - seedStart;
  const app = await buildApp(ctx);
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const q = 'institutionIdType=hci&institutionId=S1234A&requesterIdentifier=bench%40example.org';
  const results: Record<string, number> = {
    'seed writes/s': Math.round((REFERRALS * 1.5 * 1000) / seedMs),
  };
  const cases = {
    'GET list (page 50)': `${base}/api/v1/institutions/hci/S1234A/referrals?pageSize=50`,
    'GET referral': `${base}/api/v1/referrals/${referralId}?${q}`,
    'GET referral + ehrForm': `${base}/api/v1/referrals/${referralId}?${q}&additionalField=ehrForm`,
  };
  for (const [name, url] of Object.entries(cases)) {
    const result = await load(url, key);
    if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} responses were not 2xx`);
    results[`${name} req/s`] = Math.round(result.requests.average);
    results[`${name} p99 ms`] = result.latency.p99;
  }
  const rss = process.memoryUsage().rss;
  results['rss MiB'] = Math.round(rss / 1048576);
  await app.close();
  await ctx.close();
  return results;
}

renderBench();
const pglite = await apiBench('pglite');
const postgres = await apiBench('postgres');
console.log(`\nAPI with ${REFERRALS} referrals, 10 connections, ${SECONDS}s per case:`);
console.log(
  `${'measure'.padEnd(32)}${'pglite'.padStart(10)}${'postgres'.padStart(10)}${'pg/pglite'.padStart(11)}`,
);
for (const name of Object.keys(pglite)) {
  const a = pglite[name] ?? 0;
  const b = postgres[name] ?? 0;
  console.log(
    `${name.padEnd(32)}${String(a).padStart(10)}${String(b).padStart(10)}${(a === 0 ? 0 : b / a).toFixed(2).padStart(11)}`,
  );
}
