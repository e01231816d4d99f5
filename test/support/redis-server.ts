// A Redis server of a test's own, for tests that stop Redis or flush it: `redis-server` on a free
// loopback port, without persistence (a restart starts empty, as after losing Redis's data), with the
// eviction policy queues need. It can be stopped and started again on the same port, and it never
// outlives the test process.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { tieToThisProcess } from './child-lifeline.ts';
import { freePort, LOOPBACK as HOST } from './free-port.ts';

const START_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 5_000;
const COMMAND_TIMEOUT_MS = 5_000;

export interface RedisServer {
  readonly port: number;
  /** What `REDIS_URL` should be. */
  readonly url: string;
  /** Whether the server is running (between `start` and `stop`). */
  readonly running: boolean;
  /** Starts the server again on the same port (empty: nothing is persisted); resolves once it answers PING. */
  start(): Promise<void>;
  /** SIGTERM, then SIGKILL after a grace period; resolves when the process has exited. */
  stop(): Promise<void>;
  flushall(): Promise<void>;
  /** Stops the server for good and removes its working directory. */
  close(): Promise<void>;
}

/** Sends one command in RESP and resolves with the first reply line. */
function command(port: number, ...args: string[]): Promise<string> {
  const request = `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: HOST, port });
    let reply = '';
    socket.setTimeout(COMMAND_TIMEOUT_MS, () => socket.destroy(new Error(`redis ${args[0]} timed out`)));
    socket.once('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      const end = reply.indexOf('\r\n');
      if (end === -1) return;
      socket.end();
      resolve(reply.slice(0, end));
    });
    socket.once('error', reject);
  });
}

/** A test's redis-server: on loopback at `port`, nothing kept on disk, and no key ever evicted. */
export function redisServerArgs(port: number, dir: string): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--save',
    '',
    '--appendonly',
    'no',
    '--maxmemory-policy',
    'noeviction',
    '--dir',
    dir,
  ];
}

export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'refhub-redis-'));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  async function start(): Promise<void> {
    if (child !== undefined) throw new Error(`redis-server on port ${port} is already running`);
    const proc = spawn('redis-server', redisServerArgs(port, dir), { stdio: ['ignore', 'pipe', 'pipe'] });
    tieToThisProcess(proc);
    child = proc;
    let output = '';
    proc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    proc.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const gone = () => proc.exitCode !== null || proc.signalCode !== null;
    exited = new Promise((resolve) => {
      proc.once('exit', () => {
        if (child === proc) child = undefined;
        resolve();
      });
    });
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (gone()) throw new Error(`redis-server on port ${port} exited at start:\n${output}`);
      const answer = await command(port, 'PING').catch(() => '');
      if (answer === '+PONG') return;
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(
          `redis-server on port ${port} did not answer PING within ${START_TIMEOUT_MS} ms:\n${output}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function stop(): Promise<void> {
    const proc = child;
    if (proc === undefined) return;
    proc.kill('SIGTERM');
    const grace = setTimeout(() => proc.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(grace);
  }

  await start();
  return {
    port,
    url: `redis://${HOST}:${port}`,
    get running() {
      return child !== undefined;
    },
    start,
    stop,
    async flushall() {
      const answer = await command(port, 'FLUSHALL');
      if (answer !== '+OK') throw new Error(`FLUSHALL answered ${answer}`);
    },
    async close() {
      await stop();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
