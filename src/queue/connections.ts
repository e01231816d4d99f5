// Redis connections as BullMQ's production guide asks. Workers block on Redis and must ride out an
// outage: `maxRetriesPerRequest: null`. Producers (the outbox relay, the reconciler, the dashboard)
// fail fast instead, so a Redis outage turns into outbox rows that wait, not requests that hang.
// Every connection has an `error` listener (an unhandled one would crash the process), and
// reconnects when a failover leaves it on a replica (READONLY) or a server still loading (LOADING).
//
// Redis is one server (REDIS_URL), a Redis Cluster (REDIS_CLUSTER_NODES: ioredis's Cluster, which
// learns the other nodes and follows slots as they move), or a primary that Sentinels watch
// (REDIS_SENTINELS, REDIS_SENTINEL_NAME: ioredis asks them for the primary, and again after a failover,
// which it hears of from them). The rest of the queues see one connection either way.
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Logger } from '../logger.ts';

export type ConnectionRole = 'producer' | 'worker';

/** A connection to Redis: to one server (also a Sentinel-watched primary), or to a cluster. */
export type RedisConnection = Redis | Cluster;

/** A node or a Sentinel: `host:port` as the settings give it. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** Where Redis is, from the settings (config.ts). */
export type RedisTopology =
  | { readonly kind: 'server'; readonly url: string }
  | { readonly kind: 'cluster'; readonly nodes: readonly HostPort[]; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly HostPort[];
      readonly name: string;
      readonly sentinelPassword: string | undefined;
      readonly url: string;
    };

/** The settings `redisTopologyOf` reads: REDIS_URL alone is one server. */
export interface RedisSettings {
  readonly redisUrl: string;
  readonly redisClusterNodes?: readonly string[] | undefined;
  readonly redisSentinels?: readonly string[] | undefined;
  readonly redisSentinelName?: string | undefined;
  readonly redisSentinelPassword?: string | undefined;
}

function hostPort(entry: string): HostPort {
  const parsed = new URL(`redis://${entry}`);
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(parsed.port) };
}

/**
 * Where Redis is. With a cluster or Sentinels, REDIS_URL gives the nodes' username and password and
 * whether they speak TLS (`rediss:`); its host and port are not used.
 */
export function redisTopologyOf(settings: RedisSettings): RedisTopology {
  if (settings.redisClusterNodes !== undefined) {
    return { kind: 'cluster', nodes: settings.redisClusterNodes.map(hostPort), url: settings.redisUrl };
  }
  if (settings.redisSentinels !== undefined && settings.redisSentinelName !== undefined) {
    return {
      kind: 'sentinel',
      sentinels: settings.redisSentinels.map(hostPort),
      name: settings.redisSentinelName,
      sentinelPassword: settings.redisSentinelPassword,
      url: settings.redisUrl,
    };
  }
  return { kind: 'server', url: settings.redisUrl };
}

const listed = (nodes: readonly HostPort[]): string =>
  nodes.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`).join(',');

/** Where Redis is, for the banner, the log and the doctor; never a password. */
export function topologyAddress(topology: RedisTopology): string {
  switch (topology.kind) {
    case 'server': {
      const parsed = new URL(topology.url);
      parsed.password = '';
      parsed.username = '';
      return `Redis at ${parsed.toString()}`;
    }
    case 'cluster':
      return `Redis Cluster at ${listed(topology.nodes)}`;
    case 'sentinel':
      return `Redis primary ${topology.name} through the Sentinels at ${listed(topology.sentinels)}`;
  }
}

/** What REDIS_URL gives the nodes of a cluster or a Sentinel-watched primary: credentials, TLS, database. */
function nodeCredentials(url: string, withDatabase: boolean): RedisOptions {
  const parsed = new URL(url);
  const database = Number(parsed.pathname.replace(/^\//, '') || '0');
  return {
    ...(parsed.username === '' ? {} : { username: decodeURIComponent(parsed.username) }),
    ...(parsed.password === '' ? {} : { password: decodeURIComponent(parsed.password) }),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
    ...(withDatabase && database > 0 ? { db: database } : {}),
  };
}

const RECONNECT_ON = /^(READONLY|LOADING)\b/;

export function redisOptions(role: ConnectionRole): RedisOptions {
  return {
    lazyConnect: true,
    connectTimeout: 5_000,
    // 2: reconnect, then resend the command that failed.
    reconnectOnError: (error) => (RECONNECT_ON.test(error.message) ? 2 : false),
    retryStrategy: (times) => Math.min(200 * 2 ** Math.min(times, 6), 5_000),
    ...(role === 'worker'
      ? { maxRetriesPerRequest: null, enableOfflineQueue: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false }),
  };
}

/**
 * A cluster connection for `role`: each node's connection as `redisOptions` says, and the cluster's
 * own reconnection on the same schedule. A worker's cluster keeps commands while it reconnects; a
 * producer's fails them at once, as a single server's does.
 */
function clusterOptions(role: ConnectionRole, url: string): ClusterOptions {
  const node = redisOptions(role);
  return {
    lazyConnect: true,
    enableOfflineQueue: node.enableOfflineQueue ?? true,
    clusterRetryStrategy: node.retryStrategy ?? (() => 1_000),
    redisOptions: {
      connectTimeout: node.connectTimeout,
      maxRetriesPerRequest: node.maxRetriesPerRequest,
      reconnectOnError: node.reconnectOnError,
      ...nodeCredentials(url, false),
    },
  };
}

function open(topology: RedisTopology, role: ConnectionRole, extra: RedisOptions): RedisConnection {
  switch (topology.kind) {
    case 'server':
      return new Redis(topology.url, { ...redisOptions(role), ...extra });
    case 'cluster': {
      const options = clusterOptions(role, topology.url);
      return new Cluster(
        topology.nodes.map(({ host, port }) => ({ host, port })),
        { ...options, redisOptions: { ...options.redisOptions, ...extra } },
      );
    }
    case 'sentinel':
      return new Redis({
        ...redisOptions(role),
        ...extra,
        ...nodeCredentials(topology.url, true),
        sentinels: topology.sentinels.map(({ host, port }) => ({ host, port })),
        name: topology.name,
        ...(topology.sentinelPassword === undefined ? {} : { sentinelPassword: topology.sentinelPassword }),
        // Hears of a failover from the Sentinels (+switch-master) and moves to the new primary at once.
        failoverDetector: true,
      });
  }
}

/**
 * A connection whose errors are logged (once per distinct message, so an outage does not flood), to
 * one server at a URL or to Redis as `topology` says; `extra` adds to the role's options (the
 * rate-limit buckets' command timeout).
 */
export function connectRedis(
  where: string | RedisTopology,
  role: ConnectionRole,
  logger: Logger,
  extra: RedisOptions = {},
): RedisConnection {
  const redis = open(typeof where === 'string' ? { kind: 'server', url: where } : where, role, extra);
  let last = '';
  const logError = (error: Error) => {
    if (error.message === last) return;
    last = error.message;
    logger.warn(
      { err: { message: error.message, code: (error as { code?: string }).code } },
      `redis ${role} connection error`,
    );
  };
  redis.on('error', logError);
  // A cluster reports a node's trouble apart from its own.
  if (redis instanceof Cluster) redis.on('node error', logError);
  redis.on('ready', () => {
    if (last !== '') logger.info(`redis ${role} connection restored`);
    last = '';
  });
  return redis;
}

/**
 * Waits, at most `settleMs`, while a connection is still connecting: until it is ready or has failed.
 * A connection cut in its handshake (the socket open, the ready check not yet answered) fails that
 * check, and ioredis reports it as a connection `error` ("Stream isn't writeable …"); a short command
 * such as `refhub reconcile` would hit this whenever it finished before the queues' first round trip.
 */
export async function settled(redis: RedisConnection, settleMs = 5_000): Promise<void> {
  if (redis.status !== 'connecting' && redis.status !== 'connect') return;
  let timer: NodeJS.Timeout | undefined;
  let settle = (): void => undefined;
  await new Promise<void>((resolve) => {
    settle = resolve;
    redis.once('ready', settle);
    redis.once('close', settle);
    timer = setTimeout(settle, settleMs);
  });
  clearTimeout(timer);
  redis.off('ready', settle);
  redis.off('close', settle);
}

/**
 * Closes a connection quietly: once it has `settled`, a ready one with QUIT, which lets the commands
 * already sent finish; any other (down, reconnecting) at once.
 */
export async function closeRedis(redis: RedisConnection): Promise<void> {
  await settled(redis);
  if (redis.status === 'ready') {
    try {
      await redis.quit();
      return;
    } catch {
      // Lost meanwhile: nothing is left to let finish.
    }
  }
  redis.disconnect();
}

/** Per connection, the wait for its next `ready` that every caller of `whenReady` shares. */
const nextReady = new WeakMap<RedisConnection, Promise<void>>();

/**
 * Waits until the connection is ready: a producer sends nothing while it is not (no offline queue),
 * so its first command right after start would fail otherwise. While Redis is down, every dispatch
 * of the outbox relay waits here at once; they share one listener on the connection, each with its
 * own timeout, instead of adding one each.
 */
export async function whenReady(redis: RedisConnection, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  if (redis.status === 'wait') void redis.connect().catch(() => undefined);
  let ready = nextReady.get(redis);
  if (ready === undefined) {
    ready = new Promise<void>((resolve) => {
      redis.once('ready', () => {
        nextReady.delete(redis);
        resolve();
      });
    });
    nextReady.set(redis, ready);
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`Redis is not ready (${redis.status})`));
    }, timeoutMs);
  });
  try {
    await Promise.race([ready, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The code of a producer call made while Redis cannot be reached (the outbox row's last_error). */
export const QUEUE_UNAVAILABLE = 'QUEUE_UNAVAILABLE';

/** Waits briefly for a producer connection; an error coded QUEUE_UNAVAILABLE when it is not there. */
export async function connected(redis: RedisConnection, timeoutMs = 2_000): Promise<void> {
  try {
    await whenReady(redis, timeoutMs);
  } catch {
    throw Object.assign(new Error('the queues are unavailable (Redis cannot be reached)'), {
      code: QUEUE_UNAVAILABLE,
    });
  }
}

export interface RedisHealth {
  readonly reachable: boolean;
  readonly evictionPolicy: string | undefined;
  /**
   * What answered, for the doctor: `one server`, `a cluster of 3 primaries`, or `primary 10.0.0.5:6379`
   * (the one the Sentinels name now).
   */
  readonly topology: string | undefined;
  /** Why it is not fit for queues, for the log and /readyz. */
  readonly problem: string | undefined;
}

/** Each primary's `maxmemory_policy`, by its address; one server's (or the Sentinels' primary's) alone. */
async function evictionPolicies(redis: RedisConnection): Promise<Map<string, string | undefined>> {
  const read = async (node: Redis) => /^maxmemory_policy:(\S+)/m.exec(await node.info('memory'))?.[1];
  if (!(redis instanceof Cluster)) return new Map([['', await read(redis)]]);
  const primaries = redis.nodes('master');
  if (primaries.length === 0) throw new Error('the cluster has no primary');
  return new Map(
    await Promise.all(
      primaries.map(
        async (node) => [`${node.options.host ?? ''}:${node.options.port ?? ''}`, await read(node)] as const,
      ),
    ),
  );
}

/** What answered: a cluster's primaries, or the server a Sentinel-watched connection is on now. */
async function topologyOf(redis: RedisConnection): Promise<string> {
  if (redis instanceof Cluster) {
    const count = redis.nodes('master').length;
    return `a cluster of ${count} ${count === 1 ? 'primary' : 'primaries'}`;
  }
  if (redis.options.sentinels === undefined) return 'one server';
  // The server's own address, as it sees this connection (`laddr`, Redis 6.2 and later).
  const info = await redis.client('INFO');
  const address = /\bladdr=(\S+)/.exec(info)?.[1];
  return `primary ${address ?? 'unknown'}`;
}

/**
 * BullMQ loses jobs if Redis may evict keys: only `maxmemory-policy noeviction` is safe, on every
 * primary of a cluster. INFO works where CONFIG is disabled (managed Redis). A Redis that answers but
 * refuses writes (out of memory under noeviction, or a read-only replica after a failover) cannot
 * take queue work either: a write to `probeKey` (short-lived) finds out.
 */
export async function checkRedis(redis: RedisConnection, probeKey?: string): Promise<RedisHealth> {
  let policies: Map<string, string | undefined>;
  let topology: string;
  try {
    await whenReady(redis, 3_000);
    policies = await evictionPolicies(redis);
    topology = await topologyOf(redis);
  } catch {
    return {
      reachable: false,
      evictionPolicy: undefined,
      topology: undefined,
      problem: 'Redis is unreachable',
    };
  }
  const unsafe = [...policies].filter(([, policy]) => policy !== 'noeviction');
  const policy = unsafe[0]?.[1] ?? 'noeviction';
  if (unsafe.length > 0) {
    const where = redis instanceof Cluster ? ` on ${unsafe.map(([node]) => node).join(', ')}` : '';
    return {
      reachable: true,
      evictionPolicy: unsafe[0]?.[1],
      topology,
      problem: `Redis maxmemory-policy is ${unsafe[0]?.[1] ?? 'unknown'}${where}; queues need noeviction, or Redis may drop jobs`,
    };
  }
  if (probeKey !== undefined) {
    try {
      await redis.set(probeKey, '1', 'PX', 10_000);
    } catch (error) {
      const message = (error as Error).message;
      return {
        reachable: true,
        evictionPolicy: policy,
        topology,
        problem: message.startsWith('OOM')
          ? 'Redis refuses writes: it is out of memory (maxmemory)'
          : message.startsWith('READONLY')
            ? 'Redis refuses writes: it is a read-only replica'
            : 'Redis refuses writes',
      };
    }
  }
  return { reachable: true, evictionPolicy: policy, topology, problem: undefined };
}
