// A PostgreSQL server of a test's own, for tests that kill the database: `initdb` into a temporary
// folder and a postmaster on a free loopback port, with trust authentication and fsync on. It can be
// killed (SIGKILL, as when the machine or the container dies) and started again on the same port and
// data directory, which runs crash recovery as in production. It never outlives the test process.
//
// PostgreSQL refuses to run as root, and tests run as root in CI: then initdb and the postmaster run
// as the `postgres` OS user, in a folder it owns. The postmaster is spawned directly rather than
// through `pg_ctl start`, which daemonizes it: as a direct child it can be tied to this process's life
// (child-lifeline.ts) and killed by its own process ID.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { tieToThisProcess } from './child-lifeline.ts';
import { freePort, LOOPBACK } from './free-port.ts';

const INITDB_TIMEOUT_MS = 60_000;
const START_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 10_000;
/** How long the backends of a killed postmaster may take to notice and exit. */
const ORPHANS_TIMEOUT_MS = 15_000;
const OUTPUT_LIMIT = 64 * 1024;

export interface PostgresServer {
  readonly port: number;
  /** Whether the postmaster is running (between `start` and `kill` or `stop`). */
  readonly running: boolean;
  /** The postmaster's process ID while it runs. */
  readonly pid: number | undefined;
  /** A connection URL for `database` as the superuser `postgres`. */
  urlOf(database: string): string;
  createDatabase(name: string): Promise<void>;
  /** Starts the postmaster again on the same port and data directory; resolves once it answers. */
  start(): Promise<void>;
  /**
   * SIGKILL to the postmaster alone, as a crash would; resolves once it and every process it had
   * started (backends, checkpointer, …) are gone, so that `start` can follow at once.
   */
  kill(): Promise<void>;
  /** A fast shutdown (SIGINT), SIGKILL after a grace period. */
  stop(): Promise<void>;
  /** What the server has written (the last 64 KiB), for failure messages. */
  output(): string;
  /** Stops the server for good and removes its folder. */
  close(): Promise<void>;
}

/** The newest installed PostgreSQL's bin folder (Debian keeps each major under /usr/lib/postgresql). */
function binFolder(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => /^\d+$/.test(v) && fs.existsSync(path.join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const newest = versions[0];
  if (newest === undefined) throw new Error(`no PostgreSQL server binaries under ${root}/*/bin`);
  return path.join(root, newest, 'bin');
}

/** The `postgres` OS user's uid and gid when this process is root (PostgreSQL refuses root). */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) {
    throw new Error('running as root, and there is no "postgres" OS user to run PostgreSQL as');
  }
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * `pid`'s parent and start time from /proc, or undefined once it has exited. A zombie (exited, not yet
 * reaped by whoever inherited it) holds no shared memory any more, so it counts as gone.
 */
function procStat(pid: number): { ppid: number; startTime: string } | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may hold spaces; the fields after it are plain.
  const [state, ppid, ...rest] = text.slice(text.lastIndexOf(')') + 2).split(' ');
  if (state === 'Z' || state === 'X') return undefined;
  return { ppid: Number(ppid), startTime: rest[17] ?? '' };
}

/** The processes whose parent is `pid`, each with its start time so a reused ID is not mistaken. */
function childrenOf(pid: number): { pid: number; startTime: string }[] {
  const out: { pid: number; startTime: string }[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat?.ppid === pid) out.push({ pid: Number(entry), startTime: stat.startTime });
  }
  return out;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function run(file: string, args: string[], options: { uid?: number; gid?: number; env: NodeJS.ProcessEnv }) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(file, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    tieToThisProcess(child);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), INITDB_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${path.basename(file)} exited (${code ?? signal}):\n${output}`));
    });
  });
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = binFolder();
  const user = serverUser();
  const port = await freePort();
  const folder = await fsp.mkdtemp(path.join(os.tmpdir(), 'refhub-postgres-'));
  const dataDir = path.join(folder, 'data');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, LC_ALL: 'C', TZ: 'UTC', HOME: folder };
  const urlOf = (database: string) => `postgres://postgres@${LOOPBACK}:${port}/${database}`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let output = '';
  const remember = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_LIMIT);
  };

  async function start(): Promise<void> {
    if (child !== undefined) throw new Error(`PostgreSQL on port ${port} is already running`);
    const proc = spawn(
      path.join(bin, 'postgres'),
      [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-c',
        `listen_addresses=${LOOPBACK}`,
        '-c',
        `unix_socket_directories=${folder}`,
        '-c',
        'max_connections=60',
        '-c',
        'shared_buffers=16MB',
        '-c',
        'logging_collector=off',
      ],
      { ...user, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    tieToThisProcess(proc);
    child = proc;
    proc.stdout.on('data', remember);
    proc.stderr.on('data', remember);
    const gone = () => proc.exitCode !== null || proc.signalCode !== null;
    exited = new Promise((resolve) => {
      proc.once('exit', () => {
        if (child === proc) child = undefined;
        resolve();
      });
    });
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (gone()) throw new Error(`PostgreSQL on port ${port} exited at start:\n${output}`);
      if (await answers(urlOf('postgres'))) return;
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(
          `PostgreSQL on port ${port} did not answer within ${START_TIMEOUT_MS} ms:\n${output}`,
        );
      }
      await sleep(100);
    }
  }

  async function kill(): Promise<void> {
    const proc = child;
    if (proc?.pid === undefined) return;
    const orphans = childrenOf(proc.pid);
    proc.kill('SIGKILL');
    await exited;
    // Its backends notice the postmaster's death and exit by themselves; a new postmaster refuses
    // to start while any of them still holds the old shared memory.
    const alive = () => orphans.filter((o) => procStat(o.pid)?.startTime === o.startTime);
    const deadline = Date.now() + ORPHANS_TIMEOUT_MS;
    while (alive().length > 0 && Date.now() < deadline) await sleep(50);
    for (const orphan of alive()) process.kill(orphan.pid, 'SIGKILL');
    while (alive().length > 0) await sleep(50);
  }

  async function stop(): Promise<void> {
    const proc = child;
    if (proc === undefined) return;
    proc.kill('SIGINT');
    const grace = setTimeout(() => proc.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(grace);
  }

  // Should this process end without running the test's cleanup (an uncaught error), the folder goes
  // with it; the lifeline has sent the postmaster its SIGKILL by then.
  const removeFolder = () => {
    fs.rmSync(folder, { recursive: true, force: true });
  };
  process.once('exit', removeFolder);
  try {
    if (user !== undefined) {
      await fsp.chown(folder, user.uid, user.gid);
      await fsp.chmod(folder, 0o700);
    }
    await run(
      path.join(bin, 'initdb'),
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
      { ...user, env },
    );
    await start();
  } catch (error) {
    await stop();
    process.off('exit', removeFolder);
    await fsp.rm(folder, { recursive: true, force: true });
    throw error;
  }

  return {
    port,
    get running() {
      return child !== undefined;
    },
    get pid() {
      return child?.pid;
    },
    urlOf,
    async createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`"${name}" is not a plain database name`);
      const client = new pg.Client({ connectionString: urlOf('postgres'), connectionTimeoutMillis: 5_000 });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
    },
    start,
    kill,
    stop,
    output: () => output,
    async close() {
      await stop();
      process.off('exit', removeFolder);
      await fsp.rm(folder, { recursive: true, force: true });
    },
  };
}
