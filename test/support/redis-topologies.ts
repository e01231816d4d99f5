// Redis beyond one server, of a test's own: a Redis Cluster of three primaries, and a primary with a
// replica that three Sentinels watch. Each is `redis-server` on free loopback ports in a directory of
// its own, without persistence and with the eviction policy queues need; they never outlive the test
// process, and `close` stops them and removes their directory. Waits are bounded by the settings the
// servers are started with (the cluster's node timeout, the Sentinels' down-after and failover timeout).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { tieToThisProcess } from './child-lifeline.ts';
import { freePort, LOOPBACK as HOST } from './free-port.ts';
import { redisServerArgs } from './redis-server.ts';

const START_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 5_000;
/** How long a cluster node may be unreachable before the others count it failed. */
const CLUSTER_NODE_TIMEOUT_MS = 2_000;
/**
 * How long a Sentinel waits before it counts the primary down (Sentinel's own default), and a failover
 * may take. The tests fail over by command (`SENTINEL FAILOVER`), never by a primary falling silent: a
 * short wait would let a loaded machine's slow answer start a failover of its own.
 */
export const SENTINEL_DOWN_AFTER_MS = 30_000;
export const SENTINEL_FAILOVER_TIMEOUT_MS = 10_000;
/** Sentinels tell each other of themselves every 2 s (hello); a few rounds let every one know the rest. */
const SENTINEL_DISCOVERY_MS = 5 * 2_000 + START_TIMEOUT_MS;

interface Process {
  readonly port: number;
  readonly child: ChildProcess;
  output(): string;
}

/** Waits, at most `timeoutMs`, for `probe` to answer true; otherwise fails naming `what`. */
async function until(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A short-lived client of one server or Sentinel, for the helpers and the tests' own questions. */
export function clientOf(port: number): Redis {
  const redis = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  return redis;
}

/** Sends one command to the server on `port` and answers its reply. */
export async function ask(port: number, command: string, ...args: (string | number)[]): Promise<unknown> {
  const redis = clientOf(port);
  try {
    await redis.connect();
    return await redis.call(command, ...args);
  } finally {
    redis.disconnect();
  }
}

async function startProcess(args: readonly string[], port: number): Promise<Process> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  tieToThisProcess(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const started: Process = { port, child, output: () => output };
  try {
    await until(`redis-server on port ${port} to answer PING`, START_TIMEOUT_MS, async () => {
      if (child.exitCode !== null) throw new Error(`redis-server on port ${port} exited:\n${output}`);
      return (await ask(port, 'PING')) === 'PONG';
    });
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\n${output}`, { cause: error });
  }
  return started;
}

async function stopProcess(process: Process): Promise<void> {
  const { child } = process;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const grace = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(grace);
}

export interface RedisCluster {
  /** The primaries' ports. */
  readonly ports: readonly number[];
  /** What REDIS_CLUSTER_NODES should be. */
  readonly nodes: string;
  /** The port of the primary that serves `key`'s slot. */
  nodeOf(key: string): Promise<number>;
  close(): Promise<void>;
}

/** Three primaries, no replicas, every slot assigned; resolves once every node says cluster_state:ok. */
export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'refhub-redis-cluster-'));
  const started: Process[] = [];
  try {
    for (let n = 0; n < 3; n++) {
      // The cluster bus on a free port of its own (cluster-port), not the default port + 10000.
      const [port, busPort] = [await freePort(), await freePort()];
      started.push(
        await startProcess(
          [
            ...redisServerArgs(port, dir),
            '--cluster-enabled',
            'yes',
            '--cluster-port',
            String(busPort),
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--cluster-node-timeout',
            String(CLUSTER_NODE_TIMEOUT_MS),
          ],
          port,
        ),
      );
    }
    const ports = started.map((p) => p.port);
    const create = spawn(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((port) => `${HOST}:${port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    tieToThisProcess(create);
    let said = '';
    create.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
    create.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => create.once('exit', resolve));
    if (code !== 0) throw new Error(`redis-cli --cluster create failed (${code}):\n${said}`);
    // Nodes learn of each other over the bus, within a few node timeouts.
    await until('cluster_state:ok on every node', 5 * CLUSTER_NODE_TIMEOUT_MS + START_TIMEOUT_MS, async () =>
      (await Promise.all(ports.map(async (port) => String(await ask(port, 'CLUSTER', 'INFO'))))).every(
        (info) => info.includes('cluster_state:ok'),
      ),
    );
    return {
      ports,
      nodes: ports.map((port) => `${HOST}:${port}`).join(','),
      async nodeOf(key) {
        const slot = Number(await ask(ports[0] ?? 0, 'CLUSTER', 'KEYSLOT', key));
        const ranges = (await ask(ports[0] ?? 0, 'CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
        const range = ranges.find(([from, to]) => slot >= from && slot <= to);
        if (range === undefined) throw new Error(`no node serves slot ${slot}`);
        return range[2][1];
      },
      async close() {
        await Promise.all(started.map(stopProcess));
        await fs.rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await Promise.all(started.map(stopProcess));
    await fs.rm(dir, { recursive: true, force: true });
    throw error;
  }
}

export interface RedisSentinels {
  /** The name the Sentinels know the primary by: what REDIS_SENTINEL_NAME should be. */
  readonly name: string;
  /** What REDIS_SENTINELS should be. */
  readonly sentinels: string;
  /** The ports of the two data servers: the primary first, as started. */
  readonly serverPorts: readonly number[];
  /** The primary's port, as the Sentinels name it now (all of them agreeing). */
  primaryPort(): Promise<number>;
  /**
   * Asks a Sentinel to fail over (SENTINEL FAILOVER), and resolves once every Sentinel names the
   * other server the primary and that server says it is one; answers its port.
   */
  failover(): Promise<number>;
  close(): Promise<void>;
}

/** One primary, one replica of it, and three Sentinels (quorum 2) that all know both and each other. */
export async function startRedisSentinels(name = 'refhub-primary'): Promise<RedisSentinels> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'refhub-redis-sentinel-'));
  const started: Process[] = [];
  try {
    const primary = await freePort();
    started.push(await startProcess(redisServerArgs(primary, dir), primary));
    const replica = await freePort();
    started.push(
      await startProcess([...redisServerArgs(replica, dir), '--replicaof', HOST, String(primary)], replica),
    );
    await until('the replica in sync with the primary', START_TIMEOUT_MS, async () =>
      String(await ask(replica, 'INFO', 'replication')).includes('master_link_status:up'),
    );
    const sentinelPorts: number[] = [];
    for (let n = 0; n < 3; n++) {
      const port = await freePort();
      const file = path.join(dir, `sentinel-${port}.conf`);
      await fs.writeFile(
        file,
        [
          `port ${port}`,
          `bind ${HOST}`,
          `dir ${dir}`,
          `sentinel monitor ${name} ${HOST} ${primary} 2`,
          `sentinel down-after-milliseconds ${name} ${SENTINEL_DOWN_AFTER_MS}`,
          `sentinel failover-timeout ${name} ${SENTINEL_FAILOVER_TIMEOUT_MS}`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      started.push(await startProcess([file, '--sentinel'], port));
      sentinelPorts.push(port);
    }
    // A failover needs a Sentinel that knows the replica and enough others to be elected by.
    await until(
      'every Sentinel to know the replica and the other Sentinels',
      SENTINEL_DISCOVERY_MS,
      async () => {
        for (const port of sentinelPorts) {
          const replicas = (await ask(port, 'SENTINEL', 'REPLICAS', name)) as unknown[];
          const others = (await ask(port, 'SENTINEL', 'SENTINELS', name)) as unknown[];
          if (replicas.length < 1 || others.length < 2) return false;
        }
        return true;
      },
    );
    const primaryPort = async (): Promise<number> => {
      const named = await Promise.all(
        sentinelPorts.map(
          async (port) => (await ask(port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string],
        ),
      );
      const ports = new Set(named.map(([, port]) => Number(port)));
      if (ports.size !== 1)
        throw new Error(`the Sentinels disagree on the primary: ${[...ports].join(', ')}`);
      return [...ports][0] ?? 0;
    };
    return {
      name,
      sentinels: sentinelPorts.map((port) => `${HOST}:${port}`).join(','),
      serverPorts: [primary, replica],
      primaryPort,
      async failover() {
        const before = await primaryPort();
        const after = before === primary ? replica : primary;
        await ask(sentinelPorts[0] ?? 0, 'SENTINEL', 'FAILOVER', name);
        await until(
          `every Sentinel to name ${after} the primary`,
          SENTINEL_FAILOVER_TIMEOUT_MS + START_TIMEOUT_MS,
          async () =>
            (await primaryPort()) === after && ((await ask(after, 'ROLE')) as [string])[0] === 'master',
        );
        return after;
      },
      async close() {
        // The Sentinels first, so they start no failover while the servers stop.
        await Promise.all(started.slice(2).map(stopProcess));
        await Promise.all(started.slice(0, 2).map(stopProcess));
        await fs.rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await Promise.all(started.map(stopProcess));
    await fs.rm(dir, { recursive: true, force: true });
    throw error;
  }
}
