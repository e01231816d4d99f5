// The processes a benchmark run starts: refhub itself (`refhub all`), the sandbox EHR and the bare
// baselines, each a child process of its own, so that its RSS is its own and the load generator does
// not share its event loop. A child is tied to this process (it dies with it, even on a SIGKILL), and
// only the tail of its output is kept: a refhub under load logs a line per request.
import { BENCH_DATA_KEYS } from './data-keys.ts';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tieToThisProcess } from '../test/support/child-lifeline.ts';
import { childEnv } from '../test/support/child-env.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');
const REFHUB = path.join(ROOT, 'bin', 'refhub.js');
const BASELINES = path.join(ROOT, 'bench', 'baselines.ts');
const TAIL_BYTES = 32 * 1024;
const STOP_GRACE_MS = 15_000;
/** What `refhub worker` prints once its background work runs; the address of its health checks. */
const WORKER_READY = /worker is running on .*; health and metrics at (http:\/\/\S+)/;

export interface Service {
  readonly name: string;
  readonly pid: number;
  /** What the ready line captured: the address the service listens on. */
  readonly address: string;
  /** Resident set size now, in MiB (0 once the process is gone). */
  rssMiB(): number;
  /** The last few KiB the process wrote, for an error message. */
  tail(): string;
  /** SIGTERM, then SIGKILL after a grace period. */
  stop(): Promise<void>;
}

/** The resident set size of `pid` in MiB, from /proc (Linux), or 0 when it cannot be read. */
export function rssOfPid(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kib === undefined ? 0 : Number(kib) / 1024;
  } catch {
    return 0;
  }
}

export interface StartOptions {
  readonly name: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Matched against stdout; its first group is the address. */
  readonly ready: RegExp;
  readonly timeoutMs?: number;
  /** Extra Node options for the child (for example --cpu-prof). */
  readonly nodeOptions?: readonly string[];
}

export async function startService(options: StartOptions): Promise<Service> {
  const child = spawn(process.execPath, [...(options.nodeOptions ?? []), ...options.args], {
    cwd: ROOT,
    // No setting of the caller's shell reaches a child unless the benchmark sets it.
    env: childEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  tieToThisProcess(child);
  // BENCH_LOG_DIR keeps every line each process writes, for finding what its answers do not say.
  const logDir = process.env.BENCH_LOG_DIR;
  if (logDir !== undefined && logDir !== '') {
    const file = fs.createWriteStream(
      path.join(logDir, `${options.name.replaceAll(/\W+/g, '-')}-${Date.now()}.log`),
    );
    child.stdout.pipe(file);
    child.stderr.pipe(file);
  }
  let tail = '';
  let ready = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-TAIL_BYTES);
  };
  child.stderr.on('data', keep);
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve(`exited (${code ?? signal})`);
    });
  });
  const timeoutMs = options.timeoutMs ?? 60_000;
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${options.name} did not start within ${timeoutMs} ms:\n${tail}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      keep(chunk);
      // Only the start of stdout is searched for the ready line; later lines are logs.
      if (ready.length < TAIL_BYTES) ready += chunk.toString();
      const match = options.ready.exec(ready);
      if (match?.[1] === undefined) return;
      clearTimeout(timer);
      resolve(match[1]);
    };
    child.stdout.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`${options.name} ${how} before it was ready:\n${tail}`));
    });
  });
  const pid = child.pid ?? -1;
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    name: options.name,
    pid,
    address,
    rssMiB: () => (gone() ? 0 : rssOfPid(pid)),
    tail: () => tail,
    async stop() {
      if (gone()) return;
      child.kill('SIGTERM');
      const grace = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(grace);
    },
  };
}

/** Samples a service's RSS while a measurement runs; `stop` returns the peak in MiB. */
export function sampleRss(service: Service, everyMs = 250): { stop(): number; peak(): number } {
  let peak = service.rssMiB();
  const timer = setInterval(() => {
    peak = Math.max(peak, service.rssMiB());
  }, everyMs);
  timer.unref();
  return {
    peak: () => Math.max(peak, service.rssMiB()),
    stop() {
      clearInterval(timer);
      return Math.max(peak, service.rssMiB());
    },
  };
}

/** The CPU time `pid` has used so far in its own code (`user`) and in the kernel's on its behalf (`system`). */
export function cpuTimesOfPid(pid: number): { readonly user: number; readonly system: number } {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces) start after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
  } catch {
    return { user: 0, system: 0 };
  }
}

/** Linux's USER_HZ, the unit of /proc's CPU times: 100 on every architecture Node runs on. */
const CLOCK_TICKS = 100;

/** The machine's CPU time so far, busy and in all, in seconds, from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    // idle and iowait are the 4th and 5th fields.
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
    return { busy: (total - idle) / CLOCK_TICKS, total: total / CLOCK_TICKS };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}

/**
 * How `npm start` runs refhub: the variables its start script sets (`NAME=value` before `exec`) and the
 * Node options between `node` and `bin/refhub.js` (the heap limits). Every refhub process the
 * benchmark starts runs with them, as the container image does; BENCH_REFHUB_NODE_OPTIONS goes after
 * the options (a later V8 flag wins).
 */
export function npmStart(): { env: Record<string, string>; nodeOptions: string[] } {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.trim().split(/\s+/);
  const node = words.indexOf('node');
  const bin = words.indexOf('bin/refhub.js');
  if (node < 0 || bin < node) throw new Error("package.json's start script does not run node bin/refhub.js");
  const env = Object.fromEntries(
    words.slice(0, node).flatMap((word) => {
      const [, name, value] = /^([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(word) ?? [];
      return name === undefined || value === undefined ? [] : [[name, value]];
    }),
  );
  return { env, nodeOptions: words.slice(node + 1, bin) };
}

export interface RefhubSettings {
  /** PostgreSQL URL, or undefined for embedded PGlite in `dataDir`. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly redisUrl: string;
  readonly queuePrefix: string;
  readonly ehrUrl: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Node options after those of `npm start`. */
  readonly nodeOptions?: readonly string[];
}

/** `refhub all`: the API, the outbox relay and the workers in one process, as `npm start` runs it (its Node options too). */
export function startRefhub(settings: RefhubSettings): Promise<Service> {
  return startService({
    name: 'refhub all',
    args: [REFHUB, 'all'],
    ready: /is serving (http:\/\/\S+) on /,
    nodeOptions: [...npmStart().nodeOptions, ...(settings.nodeOptions ?? [])],
    env: {
      ...npmStart().env,
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: settings.dataDir,
      DATA_KEYS: BENCH_DATA_KEYS,
      ...(settings.databaseUrl === undefined ? {} : { DATABASE_URL: settings.databaseUrl }),
      REDIS_URL: settings.redisUrl,
      QUEUE_PREFIX: settings.queuePrefix,
      EHR_URL: settings.ehrUrl,
      // The production default: one JSON line per request.
      LOG_LEVEL: 'info',
      // The limiter runs as in production; its limit is raised so that it does not answer 429 to
      // the one key that stands in for a whole fleet of clinics.
      RATE_LIMIT_PER_MINUTE: '1000000',
      // So are the upload shares, to the whole upload budget, so that the uploads scenario's burst
      // meets the budget (what bounds the process's memory) rather than one clinic's share of it.
      ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB: '80',
      ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB: '80',
      // BENCH_QUEUE_BACKEND (run.ts) moves every scenario's queues; the queues scenario sets its own.
      ...(process.env.BENCH_QUEUE_BACKEND === undefined
        ? {}
        : { QUEUE_BACKEND: process.env.BENCH_QUEUE_BACKEND }),
      ...settings.env,
    },
  });
}

/** `refhub sandbox-ehr --port 0`; its address is the EHR URL to forward to. */
export function startSandboxEhr(): Promise<Service> {
  return startService({
    name: 'sandbox EHR',
    args: [REFHUB, 'sandbox-ehr', '--port', '0'],
    ready: /^sandbox EHR listening on (http:\/\/\S+)$/m,
    // It logs every request at info; it stands in for the EHR and is not what is measured.
    env: { NODE_ENV: 'test', LOG_LEVEL: 'warn' },
  });
}

/** The bare Fastify baseline on the same database (see baselines.ts). */
export function startBaselineServer(
  target: { databaseUrl: string } | { pgliteDir: string },
): Promise<Service> {
  return startService({
    name: 'baseline server',
    args: [BASELINES, 'server'],
    ready: /^baseline server listening on (http:\/\/\S+)$/m,
    env:
      'databaseUrl' in target
        ? { BASELINE_DATABASE_URL: target.databaseUrl }
        : { BASELINE_PGLITE_DIR: target.pgliteDir },
  });
}

/** The bare BullMQ worker (see baselines.ts); its "address" is the queue it serves. */
export function startBaselineWorker(settings: {
  redisUrl: string;
  queuePrefix: string;
  queue: string;
  concurrency: number;
}): Promise<Service> {
  return startService({
    name: 'baseline worker',
    args: [BASELINES, 'worker'],
    ready: /^baseline worker serving (\S+)$/m,
    env: {
      REDIS_URL: settings.redisUrl,
      BASELINE_QUEUE_PREFIX: settings.queuePrefix,
      BASELINE_QUEUE: settings.queue,
      BASELINE_CONCURRENCY: String(settings.concurrency),
    },
  });
}

/** The bare forwarding pipeline (bare-pipeline.ts) on its own database and queue prefix. */
export function startBarePipeline(settings: {
  databaseUrl: string;
  redisUrl: string;
  queuePrefix: string;
  ehrUrl: string;
}): Promise<Service> {
  return startService({
    name: 'bare pipeline',
    args: [path.join(ROOT, 'bench', 'bare-pipeline.ts')],
    ready: /^bare pipeline listening on (http:\/\/\S+)$/m,
    env: {
      BARE_DATABASE_URL: settings.databaseUrl,
      REDIS_URL: settings.redisUrl,
      BARE_QUEUE_PREFIX: settings.queuePrefix,
      EHR_URL: settings.ehrUrl,
    },
  });
}

/**
 * `refhub api` or `refhub worker` on PostgreSQL, the processes of a scaled-out installation. A worker
 * serves no HTTP; its "address" is the line it prints when its background work has started.
 */
export function startRefhubRole(role: 'api' | 'worker', settings: RefhubSettings): Promise<Service> {
  if (settings.databaseUrl === undefined) throw new Error(`refhub ${role} runs on PostgreSQL only`);
  return startService({
    name: `refhub ${role}`,
    args: [REFHUB, role],
    ready: role === 'api' ? /is serving (http:\/\/\S+) on / : WORKER_READY,
    nodeOptions: [...npmStart().nodeOptions, ...(settings.nodeOptions ?? [])],
    env: {
      ...npmStart().env,
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: settings.dataDir,
      DATA_KEYS: BENCH_DATA_KEYS,
      DATABASE_URL: settings.databaseUrl,
      REDIS_URL: settings.redisUrl,
      QUEUE_PREFIX: settings.queuePrefix,
      EHR_URL: settings.ehrUrl,
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_MINUTE: '1000000',
      // So are the upload shares, to the whole upload budget, so that the uploads scenario's burst
      // meets the budget (what bounds the process's memory) rather than one clinic's share of it.
      ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB: '80',
      ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB: '80',
      ...settings.env,
    },
  });
}
