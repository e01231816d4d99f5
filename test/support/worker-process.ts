// `refhub worker`, `refhub api` and `refhub all` as separate processes, the way they run when scaled
// out against PostgreSQL and Redis. Tests start them, kill them (SIGKILL included) and start them
// again; they never outlive the test process.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { tieToThisProcess } from './child-lifeline.ts';
import type { ProcessExit } from './sandbox-ehr-process.ts';
import { childEnv } from './child-env.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin', 'refhub.js');
/** The banner line each command prints once it serves, with the address it bound. */
const RUNNING: Readonly<Record<RefhubCommand, RegExp>> = {
  worker: /worker is running on \S+.*; health and metrics at (http:\/\/\S+)/,
  api: /is serving (http:\/\/\S+) on /,
  all: /is serving (http:\/\/\S+) on /,
};

export type RefhubCommand = 'worker' | 'api' | 'all';
const STOP_GRACE_MS = 10_000;

export interface WorkerProcessSettings {
  /** Unset only for `refhub all` on embedded PGlite (give DATA_DIR in `env`). */
  readonly databaseUrl: string | undefined;
  /** Unset: the queues are in the database (QUEUE_BACKEND=postgres), and `queuePrefix` is not used. */
  readonly redisUrl: string | undefined;
  /** The bare prefix (without braces), as QUEUE_PREFIX takes it. */
  readonly queuePrefix: string;
  /** Unset: the sandbox EHR runs in refhub's own process, as `npm start` has it. */
  readonly ehrUrl?: string;
  /** Any further variables (RECONCILE_INTERVAL_SECONDS, LOG_LEVEL, …). */
  readonly env?: Readonly<Record<string, string>>;
  /** How long to wait for the "worker is running" line (default 30 s). */
  readonly startTimeoutMs?: number;
}

export interface WorkerProcess {
  readonly pid: number;
  /** Where its HTTP server listens (the API, or a worker's health and metrics). */
  readonly address: string;
  /** Resolves when the process has exited, however it ended. */
  readonly exited: Promise<ProcessExit>;
  /** Everything the process has written so far. */
  output(): { readonly stdout: string; readonly stderr: string };
  /** Sends SIGKILL: no shutdown code runs, as when a machine or container dies. */
  kill(): Promise<ProcessExit>;
  /** Sends SIGTERM (a graceful stop), SIGKILLs after a grace period. */
  stop(): Promise<ProcessExit>;
}

/** Spawns `refhub worker` and resolves once its background is running. */
export function startWorkerProcess(settings: WorkerProcessSettings): Promise<WorkerProcess> {
  return startRefhubProcess('worker', settings);
}

/** Spawns `refhub <command>` and resolves once it says it serves. */
export async function startRefhubProcess(
  command: RefhubCommand,
  settings: WorkerProcessSettings,
): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [BIN, command], {
    cwd: ROOT,
    env: childEnv({
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      // Its health and metrics listen on a free port, so several workers can run side by side.
      HOST: '127.0.0.1',
      PORT: '0',
      ...(settings.databaseUrl === undefined ? {} : { DATABASE_URL: settings.databaseUrl }),
      ...(settings.redisUrl === undefined
        ? { QUEUE_BACKEND: 'postgres' }
        : { REDIS_URL: settings.redisUrl, QUEUE_PREFIX: settings.queuePrefix }),
      ...(settings.ehrUrl === undefined ? {} : { EHR_URL: settings.ehrUrl }),
      ...settings.env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  tieToThisProcess(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
  const timeoutMs = settings.startTimeoutMs ?? 30_000;
  const address = await new Promise<string>((resolve, reject) => {
    const described = () => `\nstdout: ${stdout || '(nothing)'}\nstderr: ${stderr || '(nothing)'}`;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`refhub ${command} did not start within ${timeoutMs} ms${described()}`));
    }, timeoutMs);
    const onData = () => {
      const bound = RUNNING[command].exec(stdout)?.[1];
      if (bound === undefined) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      resolve(bound);
    };
    child.stdout.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`refhub ${command} could not be spawned: ${error.message}`));
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`refhub ${command} exited (${code ?? signal}) before it was running${described()}`));
    });
  });

  const ended = () => child.exitCode !== null || child.signalCode !== null;
  return {
    pid: child.pid ?? -1,
    address,
    exited,
    output: () => ({ stdout, stderr }),
    kill() {
      if (!ended()) child.kill('SIGKILL');
      return exited;
    },
    async stop() {
      if (ended()) return exited;
      child.kill('SIGTERM');
      const grace = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      const exit = await exited;
      clearTimeout(grace);
      return exit;
    },
  };
}
