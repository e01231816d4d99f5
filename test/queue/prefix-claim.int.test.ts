// The queue prefix's claim on real Redis: a lease that its installation renews, that another
// installation is refused while it lasts, that lapses when nobody renews it, and that only its holder
// gives back.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  claimKeyOf,
  claimLeaseMs,
  claimQueuePrefix,
  QueuePrefixTakenError,
  releaseQueuePrefix,
} from '../../src/queue/prefix-claim.ts';
import { testRedisUrl } from '../support/bridge.ts';

const redis = new Redis(testRedisUrl());
const prefixes: string[] = [];
const newPrefix = () => {
  const prefix = `{test-claim-${randomUUID()}}`;
  prefixes.push(prefix);
  return prefix;
};

afterAll(async () => {
  await redis.del(...prefixes.map(claimKeyOf));
  redis.disconnect();
});

describe('the queue prefix claim', () => {
  it('is a lease its holder renews, and that another installation is refused while it lasts', async () => {
    const prefix = newPrefix();
    const [mine, theirs] = [randomUUID(), randomUUID()];
    await claimQueuePrefix(redis, prefix, mine, 60_000);
    expect(await redis.get(claimKeyOf(prefix))).toBe(mine);
    const first = await redis.pttl(claimKeyOf(prefix));
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(60_000);
    // Renewing lengthens it and changes nothing else.
    await claimQueuePrefix(redis, prefix, mine, 600_000);
    expect(await redis.pttl(claimKeyOf(prefix))).toBeGreaterThan(60_000);
    const refused = await claimQueuePrefix(redis, prefix, theirs, 60_000).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(QueuePrefixTakenError);
    expect(refused).toMatchObject({ holder: mine, installationId: theirs, prefix });
    expect(await redis.get(claimKeyOf(prefix))).toBe(mine);
  });

  it('lapses when nobody renews it, and then another installation may claim it', async () => {
    const prefix = newPrefix();
    const [gone, next] = [randomUUID(), randomUUID()];
    await claimQueuePrefix(redis, prefix, gone, 50);
    await expect.poll(() => redis.exists(claimKeyOf(prefix)), { timeout: 10_000 }).toBe(0);
    await claimQueuePrefix(redis, prefix, next, 60_000);
    expect(await redis.get(claimKeyOf(prefix))).toBe(next);
  });

  it('is given back only by its holder', async () => {
    const prefix = newPrefix();
    const [mine, theirs] = [randomUUID(), randomUUID()];
    await claimQueuePrefix(redis, prefix, mine, 60_000);
    await releaseQueuePrefix(redis, prefix, theirs);
    expect(await redis.get(claimKeyOf(prefix))).toBe(mine);
    await releaseQueuePrefix(redis, prefix, mine);
    expect(await redis.exists(claimKeyOf(prefix))).toBe(0);
    await claimQueuePrefix(redis, prefix, theirs, 60_000);
    expect(await redis.get(claimKeyOf(prefix))).toBe(theirs);
  });

  it('lasts at least five minutes, and three renewals', () => {
    expect(claimLeaseMs(60_000)).toBe(300_000);
    expect(claimLeaseMs(600_000)).toBe(1_800_000);
  });
});
