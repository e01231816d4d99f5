// The clients' rate-limit buckets in Redis, where the queues are (QUEUE_BACKEND=redis), so every API
// process on the installation's Redis shares them. A bucket is one key under a hash tag of its own,
// `{prefix:rate-limit:<client>}`, so that on a Redis Cluster the buckets spread over the primaries
// as the queues do (queue/prefix-claim.ts, `queueKeyPrefix`). A Lua script applies domain/rate-limits.ts's `takeFrom` atomically and gives the key the
// life of the bucket's debt, so a full bucket is no key at all.
//
// The buckets have a connection of their own that fails fast: no offline queue, one attempt, and a
// short command timeout, so that a Redis outage costs a request milliseconds, not seconds. What the
// limiter does then is its own to decide (services/rate-limits.service.ts).
import type { Logger } from '../logger.ts';
import {
  burstToleranceMs,
  emissionIntervalMs,
  type BucketTake,
  type RateLimitPolicy,
} from '../domain/rate-limits.ts';
import {
  closeRedis,
  connectRedis,
  redisTopologyOf,
  settled,
  type RedisConnection,
  type RedisSettings,
} from './connections.ts';
import { queueKeyPrefix } from './prefix-claim.ts';

/** How long a bucket command may take before the limiter stops waiting for it. */
export const RATE_LIMIT_COMMAND_TIMEOUT_MS = 250;

// KEYS[1] the bucket; ARGV now, emission interval, burst tolerance (milliseconds): `takeFrom`, with
// `tatReadAt`'s reading of the stored TAT. Returns {allowed (1 or 0), TAT as a string}: Lua numbers
// come back to the client as integers otherwise.
const TAKE = `
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local tolerance = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
if tat < now or tat - now > tolerance then tat = now end
local nextTat = tat + interval
if nextTat - now > tolerance then
  return {0, tostring(tat)}
end
redis.call('SET', KEYS[1], tostring(nextTat), 'PX', math.ceil(nextTat - now))
return {1, tostring(nextTat)}
`;

/** The key of `clientId`'s bucket under the queue prefix (`{refhub}`): a hash tag of its own. */
export function rateLimitKeyOf(prefix: string, clientId: string): string {
  return queueKeyPrefix(prefix, `rate-limit:${clientId}`);
}

interface TakeCommand {
  rateLimitTake(key: string, now: string, interval: string, tolerance: string): Promise<[number, string]>;
}

export interface RedisRateLimitBuckets {
  take(clientId: string, nowMs: number, policy: RateLimitPolicy): Promise<BucketTake>;
  close(): Promise<void>;
}

/** The buckets in the installation's Redis under `queuePrefix`, on a connection made on first use. */
export function redisRateLimitBuckets(
  settings: RedisSettings & { readonly queuePrefix: string },
  logger: Logger,
): RedisRateLimitBuckets {
  let redis: RedisConnection | undefined;
  // The first connection, made by the first request: every request waits for it to be made or to
  // fail (at most the connection's timeout), once; after that a request never waits for Redis.
  let first: Promise<void> | undefined;
  const connection = async (): Promise<RedisConnection & TakeCommand> => {
    if (redis === undefined) {
      redis = connectRedis(redisTopologyOf(settings), 'producer', logger, {
        commandTimeout: RATE_LIMIT_COMMAND_TIMEOUT_MS,
      });
      redis.defineCommand('rateLimitTake', { numberOfKeys: 1, lua: TAKE });
      void redis.connect().catch(() => undefined);
      first = settled(redis);
    }
    await first;
    return redis as RedisConnection & TakeCommand;
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
