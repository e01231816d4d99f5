// The queues of earlier releases, moved to where this one keeps them. Until this release every queue's
// keys were under the installation's one hash tag (`{refhub}:<queue>:…`), which put every queue in one
// Redis Cluster slot, so on one node; now each queue has a tag of its own (`{refhub:<queue>}:<queue>:…`,
// prefix-claim.ts, `queueKeyPrefix`). An upgrade must not leave the work queued the old way behind, so
// each reconciler pass (and a serving process as it starts) moves it:
//
//   - job schedulers (the reminders', the wait-times computation, the triage-overdue sweep) are
//     removed, not copied: the database says what each should be now, and the same pass rebuilds the
//     reminders' from it (reconciler.ts) as the schedule loop sets the other two (composition/background.ts);
//   - every job still to run (waiting, prioritized, delayed), and every job left active by a
//     process that is gone (no lock), is added under its own job ID and options, a delayed one with
//     the delay it has left, and only then removed from the old place. A job added twice by a move
//     cut short finds its ID, or its referral's deduplication, taken and adds nothing;
//   - a job still locked (a process of the earlier release is running it) is left, and counted: it is
//     moved by a later pass once that process lets it go;
//   - once nothing is left to run, the old queue (its finished jobs' history) is removed.
//
// A moved job starts its attempts again: an EHR forward's own attempts are counted in the database, a
// webhook delivery's at most one more series of retries. Keys outside the queues (the claim) keep the
// installation's tag and do not move.
import { Queue, type JobsOptions } from 'bullmq';
import type { RedisConnection } from './connections.ts';

/** What a move did: jobs moved, schedulers removed for rebuilding, jobs left where a process holds them. */
export interface LegacyMove {
  readonly moved: number;
  readonly schedulersRemoved: number;
  readonly left: number;
}

/** The states of work a move takes; `active` only where no process holds the job. */
const TO_MOVE = ['waiting', 'prioritized', 'delayed', 'waiting-children'] as const;
const PAGE = 100;

/** The keys one of which an earlier release's queue always has while it holds anything. */
const LEGACY_KEYS = [
  'meta',
  'wait',
  'paused',
  'prioritized',
  'delayed',
  'active',
  'repeat',
  'completed',
  'failed',
] as const;

/** Options BullMQ sets on a job itself, or a job scheduler on the jobs it makes: not carried over. */
const OWN_OPTIONS = ['repeat', 'repeatJobKey', 'prevMillis', 'jobId', 'timestamp', 'delay'] as const;

/**
 * Moves what `names` hold under `prefix` (the installation's one tag, `{refhub}`) to `target(name)`,
 * each queue on its own tag. Cheap when there is nothing: one EXISTS over the old keys, all in the
 * old tag's one slot.
 */
export async function moveLegacyQueues(
  connection: RedisConnection,
  prefix: string,
  names: readonly string[],
  target: (name: string) => Queue,
): Promise<LegacyMove> {
  const keys = names.flatMap((name) => LEGACY_KEYS.map((key) => `${prefix}:${name}:${key}`));
  if ((await connection.exists(...keys)) === 0) return { moved: 0, schedulersRemoved: 0, left: 0 };
  let moved = 0;
  let schedulersRemoved = 0;
  let left = 0;
  for (const name of names) {
    const present = await connection.exists(...LEGACY_KEYS.map((key) => `${prefix}:${name}:${key}`));
    if (present === 0) continue;
    const legacy = new Queue(name, { connection, prefix });
    try {
      const result = await moveQueue(connection, prefix, legacy, target(name));
      moved += result.moved;
      schedulersRemoved += result.schedulersRemoved;
      left += result.left;
    } finally {
      await legacy.close();
    }
  }
  return { moved, schedulersRemoved, left };
}

async function moveQueue(
  connection: RedisConnection,
  prefix: string,
  legacy: Queue,
  target: Queue,
): Promise<LegacyMove> {
  let schedulersRemoved = 0;
  for (;;) {
    const schedulers = await legacy.getJobSchedulers(0, PAGE - 1);
    if (schedulers.length === 0) break;
    for (const scheduler of schedulers) {
      if (await legacy.removeJobScheduler(scheduler.key)) schedulersRemoved++;
    }
  }
  let moved = 0;
  for (const state of TO_MOVE) {
    // Each page is removed as it is moved, so the first page is always the next one.
    for (;;) {
      const jobs = await legacy.getJobs([state], 0, PAGE - 1, true);
      if (jobs.length === 0) break;
      let progressed = false;
      for (const job of jobs) {
        if (job.id === undefined) continue;
        if (await moveJob(legacy, target, job)) {
          moved++;
          progressed = true;
        }
      }
      if (!progressed) break;
    }
  }
  // Active jobs without a lock: their process is gone, and no worker of this release looks there.
  let left = 0;
  for (let offset = 0; ;) {
    const jobs = await legacy.getJobs(['active'], offset, offset + PAGE - 1, true);
    if (jobs.length === 0) break;
    for (const job of jobs) {
      const locked =
        job.id === undefined || (await connection.exists(`${prefix}:${legacy.name}:${job.id}:lock`)) === 1;
      if (!locked && (await moveJob(legacy, target, job))) moved++;
      else left++;
    }
    // What was moved left the list; what was not is passed over.
    offset = left;
  }
  const remaining = await legacy.getJobCounts(...TO_MOVE, 'active');
  const stillThere = Object.values(remaining).reduce((sum, count) => sum + count, 0);
  if (stillThere === 0 && (await legacy.getJobSchedulersCount()) === 0) {
    // Nothing to run is left: the finished jobs' history goes with the old queue.
    await legacy.obliterate({ force: true });
  }
  return { moved, schedulersRemoved, left: Math.max(left, stillThere) };
}

/** Adds `job` to `target` as it was queued, then removes it from `legacy`; false if it could not be removed. */
async function moveJob(
  legacy: Queue,
  target: Queue,
  job: Awaited<ReturnType<Queue['getJobs']>>[number],
): Promise<boolean> {
  const id = job.id as string;
  const options = Object.fromEntries(
    Object.entries(job.opts).filter(([name]) => !(OWN_OPTIONS as readonly string[]).includes(name)),
  );
  const due = job.timestamp + job.delay;
  const delay = Math.max(0, due - Date.now());
  await target.add(job.name, job.data, {
    ...(options as JobsOptions),
    jobId: id,
    ...(delay > 0 ? { delay } : {}),
  });
  // Not removed when a process of the earlier release took it meanwhile: it runs there, and every
  // processor reads the state first, so the copy, if it runs after, finds nothing left to do.
  return (await legacy.remove(id)) === 1;
}
