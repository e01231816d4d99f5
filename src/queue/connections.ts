// Redis connections as BullMQ's production guide asks. Workers block on Redis and must ride out an
// outage: `maxRetriesPerRequest: null`. Producers (the outbox relay, the reconciler, the dashboard)
// fail fast instead, so a Redis outage turns into outbox rows that wait, not requests that hang.
// Every connection has an `error` listener (an unhandled one would crash the process), and
// reconnects when a failover leaves it on a replica (READONLY) or a server still loading (LOADING).
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../logger.ts';

export type ConnectionRole = 'producer' | 'worker';

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
 * A connection whose errors are logged (once per distinct message, so an outage does not flood);
 * `extra` adds to the role's options (the rate-limit buckets' command timeout).
 */
export function connectRedis(
  url: string,
  role: ConnectionRole,
  logger: Logger,
  extra: RedisOptions = {},
): Redis {
  const redis = new Redis(url, { ...redisOptions(role), ...extra });
  let last = '';
  redis.on('error', (error: Error) => {
    if (error.message === last) return;
    last = error.message;
    logger.warn(
      { err: { message: error.message, code: (error as { code?: string }).code } },
      `redis ${role} connection error`,
    );
  });
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
export async function settled(redis: Redis, settleMs = 5_000): Promise<void> {
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
export async function closeRedis(redis: Redis): Promise<void> {
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
const nextReady = new WeakMap<Redis, Promise<void>>();

/**
 * Waits until the connection is ready: a producer sends nothing while it is not (no offline queue),
 * so its first command right after start would fail otherwise. While Redis is down, every dispatch
 * of the outbox relay waits here at once; they share one listener on the connection, each with its
 * own timeout, instead of adding one each.
 */
export async function whenReady(redis: Redis, timeoutMs: number): Promise<void> {
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
export async function connected(redis: Redis, timeoutMs = 2_000): Promise<void> {
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
  /** Why it is not fit for queues, for the log and /readyz. */
  readonly problem: string | undefined;
}

/**
 * BullMQ loses jobs if Redis may evict keys: only `maxmemory-policy noeviction` is safe. INFO works
 * where CONFIG is disabled (managed Redis). A Redis that answers but refuses writes (out of memory
 * under noeviction, or a read-only replica after a failover) cannot take queue work either: a write
 * to `probeKey` (short-lived) finds out.
 */
export async function checkRedis(redis: Redis, probeKey?: string): Promise<RedisHealth> {
  let info: string;
  try {
    await whenReady(redis, 3_000);
    info = await redis.info('memory');
  } catch {
    return {
      reachable: false,
      evictionPolicy: undefined,
      problem: 'Redis is unreachable',
    };
  }
  const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
  if (policy !== 'noeviction') {
    return {
      reachable: true,
      evictionPolicy: policy,
      problem: `Redis maxmemory-policy is ${policy ?? 'unknown'}; queues need noeviction, or Redis may drop jobs`,
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
        problem: message.startsWith('OOM')
          ? 'Redis refuses writes: it is out of memory (maxmemory)'
          : message.startsWith('READONLY')
            ? 'Redis refuses writes: it is a read-only replica'
            : 'Redis refuses writes',
      };
    }
  }
  return { reachable: true, evictionPolicy: policy, problem: undefined };
}
