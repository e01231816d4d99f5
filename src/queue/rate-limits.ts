// The clients' rate-limit buckets in Redis, where the queues are (QUEUE_BACKEND=redis), so every API
// process on the installation's Redis shares them. A bucket is one key, `{prefix}:rate-limit:<client>`,
// under the installation's queue prefix: its `{…}` hash tag puts it in the queues' slot on Redis
// Cluster. A Lua script applies domain/rate-limits.ts's `takeFrom` atomically and gives the key the
// life of the bucket's debt, so a full bucket is no key at all.
//
// The buckets have a connection of their own that fails fast: no offline queue, one attempt, and a
// short command timeout, so that a Redis outage costs a request milliseconds, not seconds. What the
// limiter does then is its own to decide (services/rate-limits.service.ts).
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import {
  burstToleranceMs,
  emissionIntervalMs,
  type BucketTake,
  type RateLimitPolicy,
} from '../domain/rate-limits.ts';
import { closeRedis, connectRedis, settled } from './connections.ts';

/** How long a bucket command may take before the limiter stops waiting for it. */
export const RATE_LIMIT_COMMAND_TIMEOUT_MS = 250;

// KEYS[1] the bucket; ARGV now, emission interval, burst tolerance (milliseconds). Returns
// {allowed (1 or 0), TAT as a string}: Lua numbers come back to the client as integers otherwise.
const TAKE = `
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local tolerance = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
if tat < now then tat = now end
local nextTat = tat + interval
if nextTat - now > tolerance then
  return {0, tostring(tat)}
end
redis.call('SET', KEYS[1], tostring(nextTat), 'PX', math.ceil(nextTat - now))
return {1, tostring(nextTat)}
`;

/** The key of `clientId`'s bucket under the queue prefix (`{refhub}`). */
export function rateLimitKeyOf(prefix: string, clientId: string): string {
  return `${prefix}:rate-limit:${clientId}`;
}

interface TakeCommand {
  rateLimitTake(key: string, now: string, interval: string, tolerance: string): Promise<[number, string]>;
}

export interface RedisRateLimitBuckets {
  take(clientId: string, nowMs: number, policy: RateLimitPolicy): Promise<BucketTake>;
  close(): Promise<void>;
}

/** The buckets in Redis at `redisUrl` under `queuePrefix`, on a connection made on first use. */
export function redisRateLimitBuckets(
  settings: { readonly redisUrl: string; readonly queuePrefix: string },
  logger: Logger,
): RedisRateLimitBuckets {
  let redis: Redis | undefined;
  // The first connection, made by the first request: every request waits for it to be made or to
  // fail (at most the connection's timeout), once; after that a request never waits for Redis.
  let first: Promise<void> | undefined;
  const connection = async (): Promise<Redis & TakeCommand> => {
    if (redis === undefined) {
      redis = connectRedis(settings.redisUrl, 'producer', logger, {
        commandTimeout: RATE_LIMIT_COMMAND_TIMEOUT_MS,
      });
      redis.defineCommand('rateLimitTake', { numberOfKeys: 1, lua: TAKE });
      void redis.connect().catch(() => undefined);
      first = settled(redis);
    }
    await first;
    return redis as Redis & TakeCommand;
  };
  return {
    async take(clientId, nowMs, policy) {
      const redis = await connection();
      const [allowed, tat] = await redis.rateLimitTake(
        rateLimitKeyOf(settings.queuePrefix, clientId),
        String(nowMs),
        String(emissionIntervalMs(policy)),
        String(burstToleranceMs(policy)),
      );
      return { allowed: allowed === 1, tatMs: Number(tat) };
    },
    async close() {
      if (redis !== undefined) await closeRedis(redis);
    },
  };
}
