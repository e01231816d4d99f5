// The order of the forward queue: round-robin by clinic (docs/scaling.md, "Fair delivery across
// institutions"). Each forward job is added with a BullMQ priority equal to its rank in its sending
// institution's backlog: 1 for the institution's only forward waiting, 2 for the next, and so on.
// Workers take the lowest priority first, ties in the order they were added, so the first waiting
// forward of every institution comes before the second of any: one clinic's import of thousands
// waits behind each other clinic's next forward, and while nobody else has work it gets every slot.
//
// The backlog of an institution is a sorted set of its job IDs, scored by when each was added:
// added with its job, removed when a worker starts it. A job ID the queue did not take (coalesced
// into the referral's live job) is removed at once. An entry whose job never starts (its add failed
// after the rank was written and the referral went out under another version, or an operator
// removed the job) counts only until it is older than ORDER_HORIZON_MS: it raises its institution's
// ranks for an hour at most. The price is that forwards waiting longer than that (an EHR outage) no
// longer count toward their institution's next ranks. Keys hold institution and job IDs only.
import type { Redis } from 'ioredis';
import { forwardJobId, type QueuePayloads } from './registry.ts';

/** How long an entry counts in its institution's backlog; the key expires this long after its last add. */
export const ORDER_HORIZON_MS = 60 * 60 * 1000;

/** BullMQ's largest priority (2^21); ranks beyond it share it. */
export const MAX_PRIORITY = 2 ** 21;

/** A forward for the queue, with the institution (`institutionKey`) whose backlog it joins. */
export type QueuedForward = Required<QueuePayloads['ehr-forward']>;

function backlogKey(queuePrefix: string, institution: string): string {
  return `${queuePrefix}:forward-backlog:${institution}`;
}

/**
 * Adds each forward to its institution's backlog, in order, and returns each one's rank in it once
 * added (one round trip for the batch, as one transaction: no other batch's ranks come between).
 */
export async function rankForwards(
  redis: Redis,
  queuePrefix: string,
  forwards: readonly QueuedForward[],
  now: number,
): Promise<number[]> {
  const multi = redis.multi();
  const keys = new Set<string>();
  // Where each forward's rank is among the replies.
  const rankAt: number[] = [];
  let commands = 0;
  for (const forward of forwards) {
    const key = backlogKey(queuePrefix, forward.institution);
    if (!keys.has(key)) {
      keys.add(key);
      multi.zremrangebyscore(key, '-inf', `(${String(now - ORDER_HORIZON_MS)}`);
      commands++;
    }
    multi.zadd(key, 'NX', now, forwardJobId(forward.referralId, forward.version));
    multi.zcard(key);
    rankAt.push(commands + 1);
    commands += 2;
  }
  for (const key of keys) multi.pexpire(key, ORDER_HORIZON_MS);
  const replies = await multi.exec();
  if (replies === null) throw new Error('the forward ranks were not written (transaction discarded)');
  for (const [error] of replies) if (error !== null) throw error;
  return rankAt.map((at) => Number(replies[at]?.[1]));
}

/** Takes forwards out of their institutions' backlogs (started, or never added to the queue). */
export async function forgetForwards(
  redis: Redis,
  queuePrefix: string,
  forwards: readonly { readonly institution: string; readonly jobId: string }[],
): Promise<void> {
  if (forwards.length === 0) return;
  // Independent removals: one round trip, no transaction.
  const pipeline = redis.pipeline();
  for (const f of forwards) pipeline.zrem(backlogKey(queuePrefix, f.institution), f.jobId);
  const results = await pipeline.exec();
  for (const [error] of results ?? []) if (error !== null) throw error;
}

/** The BullMQ priority of a forward of rank `rank`. */
export function forwardPriority(rank: number): number {
  return Math.min(Math.max(1, rank), MAX_PRIORITY);
}
