// Which installation a queue prefix belongs to. Two installations (two databases: two DATA_DIRs, or
// PGlite beside PostgreSQL) whose processes use one prefix on one Redis take each other's jobs, and a
// worker of one finds nothing in its database for the other's work. So an installation claims its
// prefix before it uses the queues: `{prefix}:installation` holds its installation ID, set only when
// absent, and a process of another installation that finds it there refuses to start. Every process
// of one installation shares its database, so they share its ID and its claim.
//
// The claim is a lease. Claiming again renews it and changes nothing else, so the reconciler does it
// on each pass: a claim lost with Redis's data is put back within a pass, and a claim whose
// installation is gone for good (its data directory deleted, its processes killed) lapses on its own
// instead of locking the prefix until an operator removes it. An embedded installation (`refhub all`
// on PGlite) is a single process, so it gives its claim back when it stops: `npm start` in a fresh
// DATA_DIR after the old one was stopped and deleted starts at once.
//
// The claim key is under the installation's own tag, `{prefix}`; each queue's keys are under a tag of
// their own, `{prefix:<queue>}` (`queueKeyPrefix`), so that a Redis Cluster spreads the queues over
// its nodes while all keys of one queue stay in one slot, as BullMQ's scripts need. Nothing spans two
// queues: no flows (parent and child jobs), no script over two queues' keys.
import type { RedisConnection } from './connections.ts';

/**
 * The BullMQ prefix of one queue: the installation's prefix (`{refhub}`) with the queue's name inside
 * the braces (`{refhub:ehr-forward}`), a Redis Cluster hash tag of the queue's own. QUEUE_PREFIX has
 * no `:`, so no queue's tag is another installation's.
 */
export function queueKeyPrefix(prefix: string, queue: string): string {
  const bare = /^\{(.*)\}$/.exec(prefix)?.[1] ?? prefix;
  return `{${bare}:${queue}}`;
}

/** The key that names the installation a prefix (in its `{…}` form) belongs to. */
export function claimKeyOf(prefix: string): string {
  return `${prefix}:installation`;
}

/**
 * How long a claim lasts when it is renewed every `renewEveryMs` (the reconciler's interval): three
 * renewals may be missed, and never less than five minutes, so a slow pass or a short Redis outage
 * does not let it lapse while the installation runs.
 */
export function claimLeaseMs(renewEveryMs: number): number {
  return Math.max(5 * 60_000, 3 * renewEveryMs);
}

/** Another installation holds the queue prefix: the operator's to fix (a prefix of this one's own). */
export class QueuePrefixTakenError extends Error {
  override readonly name = 'QueuePrefixTakenError';
  readonly code = 'QUEUE_PREFIX_TAKEN';
  readonly prefix: string;
  readonly holder: string;
  readonly installationId: string;
  constructor(prefix: string, holder: string, installationId: string) {
    const bare = prefix.replace(/^\{(.*)\}$/, '$1');
    super(
      `the queue prefix ${prefix} in Redis belongs to installation ${holder}, and this database is ` +
        `installation ${installationId}; two installations must not share queues. Give this one a ` +
        `prefix of its own in every process (for example QUEUE_PREFIX=${bare}-${installationId.slice(0, 8)}), ` +
        `or, if installation ${holder} is gone for good (its database deleted), wait for its claim to ` +
        `lapse or remove it: redis-cli DEL '${claimKeyOf(prefix)}'`,
    );
    this.prefix = prefix;
    this.holder = holder;
    this.installationId = installationId;
  }
}

/**
 * Claims `prefix` for `installationId` for `leaseMs`, or renews the claim it already holds; throws
 * QueuePrefixTakenError when another installation holds it.
 */
export async function claimQueuePrefix(
  redis: RedisConnection,
  prefix: string,
  installationId: string,
  leaseMs: number,
): Promise<void> {
  // One script, so that a claim that lapses between a read and a write is never renewed over
  // another installation's.
  const holder = (await redis.eval(CLAIM, 1, claimKeyOf(prefix), installationId, leaseMs)) as string;
  if (holder !== installationId) throw new QueuePrefixTakenError(prefix, holder, installationId);
}

/** Takes the key when it is free, renews it when it is ours; answers who holds it now. */
const CLAIM = `
local holder = redis.call('GET', KEYS[1])
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return holder
`;

/** Gives the claim back, if `installationId` holds it; another installation's claim is left alone. */
export async function releaseQueuePrefix(
  redis: RedisConnection,
  prefix: string,
  installationId: string,
): Promise<void> {
  await redis.eval(
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
    1,
    claimKeyOf(prefix),
    installationId,
  );
}
