// `npm run journey`: the source files one referral's journey from create to the ledger runs, counted
// from what the code does, not from what it imports.
//
// refhub runs in this process as `npm start` runs it (`refhub all`: API, relay and workers, the
// sandbox EHR in the process), on a database of its own on PostgreSQL (JOURNEY_DATABASE_URL, default
// the local test server) and a queue prefix of its own on Redis (REDIS_URL). A referral is created
// (POST), submitted (POST …/submit) and forwarded by the worker until the ledger holds its delivered
// row; the script waits for that row with a client of its own, so the wait runs none of refhub's code.
// One journey warms everything up (first statements, lazily built parts); V8's precise coverage then
// counts the functions that ran in a second one, step by step: `create`, `submit`, and `forward`
// (the relay, the worker and the ledger). A file is on the journey when any of its functions ran;
// it is passed through twice when it runs in more than one step. The sandbox EHR stands in for the
// national one and is not counted.
//
// Where a relay's poll falls moves a little work from one step to the next, so several journeys are
// measured (JOURNEY_RUNS, 5) and the medians reported. It prints the last journey's files by folder,
// a line per journey, then `journey: N files, M of them in more than one step (median of 5)`.
import { Session } from 'node:inspector/promises';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';

const ROOT = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const SRC = pathToFileURL(path.join(ROOT, 'src')).href + '/';
const NOT_COUNTED = [`${SRC}sandbox-ehr/`];
const STEPS = ['create', 'submit', 'forward'] as const;
/** Journeys measured after the warm-up (JOURNEY_RUNS): the relays' polls fall differently in each. */
const RUNS = Number(process.env['JOURNEY_RUNS'] ?? 5);
type Step = (typeof STEPS)[number];

const serverUrl = process.env['JOURNEY_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const database = `refhub_journey_${process.pid}`;

/** A free port on loopback. */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
  });
}

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`create database ${database}`);
const dataDir = await mkdtemp(path.join(tmpdir(), 'refhub-journey-'));
const port = await freePort();
Object.assign(process.env, {
  DATABASE_URL: withDatabase(serverUrl, database),
  DATA_DIR: dataDir,
  PORT: String(port),
  QUEUE_PREFIX: `journey-${process.pid}`,
  LOG_LEVEL: 'silent',
  // The periodic work that is not the journey's waits past it: the reconciler, the audit trail's sealer.
  RECONCILE_INTERVAL_SECONDS: '86400',
  AUDIT_SEAL_INTERVAL_SECONDS: '3600',
});
const ledger = new pg.Client({ connectionString: withDatabase(serverUrl, database) });

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

const { serve } = await import('../src/composition/serve.ts');
await serve('all');
await ledger.connect();

const api = `http://127.0.0.1:${port}/api/v1`;
const keyFile = (await readdir(dataDir)).find((name) => name.startsWith('demo-keys'));
if (keyFile === undefined) throw new Error(`no demo key file in ${dataDir}`);
const keys = new Map(
  (await readFile(path.join(dataDir, keyFile), 'utf8'))
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields): fields is [string, string] => fields.length >= 2)
    .map(([name, key]) => [name, key]),
);
const senderKey = keys.get('demo-sender');
if (senderKey === undefined) throw new Error(`no demo-sender key in ${keyFile}`);

async function post(route: string, body: unknown): Promise<{ id: string }> {
  const response = await fetch(`${api}${route}`, {
    method: 'POST',
    headers: { authorization: `ApiKey ${senderKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`POST ${route}: ${response.status} ${text}`);
  return JSON.parse(text) as { id: string };
}

/** Waits, with a client of its own, until the ledger holds the referral's delivered row. */
async function delivered(referralId: string): Promise<void> {
  for (;;) {
    const { rowCount } = await ledger.query(
      `select 1 from ehr_submissions where referral_id = $1 and outcome = 'delivered'`,
      [referralId],
    );
    if (rowCount !== null && rowCount > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Coverage {
  result: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[];
}

/** The counted files whose functions ran since the coverage was last taken. */
async function ranSinceLast(): Promise<Set<string>> {
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as unknown as Coverage;
  return new Set(
    result
      .filter(({ url }) => url.startsWith(SRC) && !NOT_COUNTED.some((prefix) => url.startsWith(prefix)))
      // Each take resets the counts, and a module's top level runs once, at load (before the warm-up).
      .filter(({ functions }) => functions.some((f) => (f.ranges[0]?.count ?? 0) > 0))
      .map(({ url }) => url.slice(SRC.length - 'src/'.length)),
  );
}

const institution = { institutionIdType: 'hci', institutionId: 'S1234A' };

/** One journey: the files each step ran. */
async function journey(): Promise<Map<Step, Set<string>>> {
  const ran = new Map<Step, Set<string>>();
  await ranSinceLast();
  const created = await post('/referrals', {
    ...institution,
    offeringId: 'cgh-gastro',
    patientName: 'Tan Ah Kow',
    patientUin: 'S1234567D',
    dob: '1960-02-29',
    clinicalInfo: 'Dyspepsia for 3 months.',
  });
  ran.set('create', await ranSinceLast());
  await post(`/referrals/${created.id}/submit`, institution);
  ran.set('submit', await ranSinceLast());
  await delivered(created.id);
  ran.set('forward', await ranSinceLast());
  return ran;
}

/** The files of one journey, and the steps each ran in. */
function stepsOf(steps: Map<Step, Set<string>>): Map<string, Step[]> {
  const seen = new Map<string, Step[]>();
  for (const step of STEPS) {
    for (const file of steps.get(step) ?? []) seen.set(file, [...(seen.get(file) ?? []), step]);
  }
  return seen;
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

try {
  await journey();
  const runs: Map<string, Step[]>[] = [];
  for (let run = 0; run < RUNS; run++) runs.push(stepsOf(await journey()));
  // The files of the last journey, by folder, with the steps each ran in.
  const last = runs[runs.length - 1] ?? new Map<string, Step[]>();
  const byFolder = Map.groupBy([...last.keys()].sort(), (file) => path.dirname(file));
  for (const [folder, inFolder] of [...byFolder].sort(([a], [b]) => a.localeCompare(b))) {
    console.log(`${folder}/`);
    for (const file of inFolder)
      console.log(`  ${path.basename(file)}  ${(last.get(file) ?? []).join(', ')}`);
  }
  const totals = runs.map((seen) => seen.size);
  const twice = runs.map((seen) => [...seen.values()].filter((steps) => steps.length > 1).length);
  runs.forEach((_, i) => {
    console.log(`journey ${i + 1}: ${totals[i]} files, ${twice[i]} of them in more than one step`);
  });
  console.log(
    `journey: ${median(totals)} files, ${median(twice)} of them in more than one step (median of ${RUNS})`,
  );
} finally {
  // Nothing of refhub's is kept: its database, data directory and queues go, and the process ends
  // without waiting for the serving stack to drain.
  await ledger.end();
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.end();
  await rm(dataDir, { recursive: true, force: true });
  const { Redis } = await import('ioredis');
  const redis = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
  const queueKeys = await redis.keys(`journey-${process.pid}:*`);
  if (queueKeys.length > 0) await redis.del(...queueKeys);
  redis.disconnect();
  process.exit(process.exitCode ?? 0);
}
