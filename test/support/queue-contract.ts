// One queue contract, for each backend (QUEUE_BACKEND): what refhub's producers and workers rely on of
// BullMQ behaves the same with the queues in the database (BullMQ's PostgreSQL backend, here over
// PGlite's one session and over PostgreSQL) and in Redis: priorities in order, retries with the
// custom backoff, delays, a job that spends its attempts fails for good and stays, a job whose worker
// died is given to another, a job ID is taken once, and finished jobs are kept as the backend keeps them. The workers wait for states, never the clock.
import { randomUUID } from 'node:crypto';
import { DelayedError, type Job, type Queue, type Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/db/database.ts';
import type { QueueBackendName } from '../../src/queue/backend.ts';
import { RETENTION } from '../../src/queue/job-settings.ts';
import { eventually } from './bridge.ts';
import { openQueueBed, type QueueBed } from './queue-backends.ts';

/** A backend, and the engine of the database beside it (the postgres backend's queues are in it). */
export type QueueSetup = readonly [QueueBackendName, Engine];

/**
 * The contract's tests for each set-up. The embedded one (queues in PGlite) needs no server
 * (test/queue/queue-contract.embedded.test.ts); the others need PostgreSQL or Redis
 * (test/queue/queue-contract.int.test.ts).
 */
/** Nothing left to run or running: every job added has finished. */
async function settled(queue: Queue): Promise<boolean> {
  const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
  return Object.values(counts).every((n) => n === 0);
}

export function describeQueueContract(setups: readonly QueueSetup[]): void {
  describe.each(setups)('the queue contract on the %s backend (database on %s)', (name, engine) => {
    let bed: QueueBed;
    const workers: Worker[] = [];

    beforeAll(async () => {
      bed = await openQueueBed(name, { engine });
    });
    afterAll(async () => {
      await Promise.allSettled(workers.map((w) => w.close(true)));
      await bed.close();
    });

    const queueName = () => `contract-${randomUUID()}`;
    const start = <R>(
      queue: string,
      processor: (job: Job<{ n: number }>, token?: string) => Promise<R>,
      options: Parameters<ReturnType<QueueBed['backend']>['worker']>[2] = {},
    ) => {
      const worker = bed.backend('worker').worker<{ n: number }, R>(queue, processor, options);
      worker.on('error', () => undefined);
      workers.push(worker);
      return worker;
    };

    it('hands out jobs by priority, ties in the order they were added', async () => {
      const name = queueName();
      const queue = bed.backend('producer').queue<{ n: number }>(name);
      await queue.addBulk(
        [3, 1, 2, 1, 3, 2].map((priority, n) => ({ name: 'p', data: { n }, opts: { priority } })),
      );
      const seen: number[] = [];
      start(name, (job) => {
        seen.push(job.data.n);
        return Promise.resolve();
      });
      await eventually('every job done', () => Promise.resolve(seen.length === 6 ? true : undefined));
      expect(seen).toEqual([1, 3, 2, 5, 0, 4]);
    });

    it('retries with the worker’s own backoff, then fails for good and keeps the failed job', async () => {
      const name = queueName();
      const queue = bed.backend('producer').queue<{ n: number }>(name);
      const backoffs: number[] = [];
      start(name, (job) => Promise.reject(new Error(`attempt ${job.attemptsMade + 1}`)), {
        settings: {
          backoffStrategy: (attemptsMade: number) => {
            backoffs.push(attemptsMade);
            return 10;
          },
        },
      });
      await queue.add('r', { n: 1 }, { jobId: 'dead-letter', attempts: 3, backoff: { type: 'custom' } });
      const failed = await eventually('the job failed for good', async () =>
        (await queue.getJobState('dead-letter')) === 'failed' ? queue.getJob('dead-letter') : undefined,
      );
      expect(failed.attemptsMade).toBe(3);
      expect(failed.failedReason).toBe('attempt 3');
      expect(backoffs).toEqual([1, 2]);
      expect(await queue.getJobCounts('failed')).toMatchObject({ failed: 1 });
    });

    it('runs a delayed job once it is due, and a job set aside without spending an attempt', async () => {
      const name = queueName();
      const queue = bed.backend('producer').queue<{ n: number }>(name);
      const runs: { n: number; attemptsMade: number }[] = [];
      start(name, async (job, token) => {
        runs.push({ n: job.data.n, attemptsMade: job.attemptsMade });
        if (job.data.n === 2 && runs.filter((r) => r.n === 2).length === 1) {
          await job.moveToDelayed(Date.now() + 50, token);
          throw new DelayedError();
        }
      });
      await queue.add('d', { n: 1 }, { delay: 100 });
      expect(await queue.getJobCounts('delayed')).toMatchObject({ delayed: 1 });
      await queue.add('s', { n: 2 });
      await eventually('both done', async () =>
        (await settled(queue)) && runs.length === 3 ? true : undefined,
      );
      expect(runs.filter((r) => r.n === 2).map((r) => r.attemptsMade)).toEqual([0, 0]);
    });

    it('gives a job whose worker died to another worker', async () => {
      const name = queueName();
      const queue = bed.backend('producer').queue<{ n: number }>(name);
      let release!: () => void;
      const hung = new Promise<void>((resolve) => (release = resolve));
      const settings = { lockDuration: 1_000, stalledInterval: 500, maxStalledCount: 1 };
      let started = 0;
      const first = start(
        name,
        async () => {
          started++;
          await hung;
        },
        settings,
      );
      await queue.add('s', { n: 1 }, { jobId: 'stalls' });
      await eventually('the first worker runs it', () => Promise.resolve(started === 1 ? true : undefined));
      // The worker dies: it renews its lock no more and never finishes the job.
      await first.close(true);
      const done: string[] = [];
      start(
        name,
        (job) => {
          done.push(job.id ?? '');
          return Promise.resolve();
        },
        settings,
      );
      await eventually('another worker finished it', () =>
        Promise.resolve(done.length > 0 ? true : undefined),
      );
      expect(done).toEqual(['stalls']);
      release();
    });

    it('takes a job ID once: adding it again adds nothing', async () => {
      const name = queueName();
      const queue = bed.backend('producer').queue<{ n: number }>(name);
      const first = await queue.add('v', { n: 1 }, { jobId: 'referral.v2' });
      const again = await queue.add('v', { n: 2 }, { jobId: 'referral.v2' });
      expect(again.id).toBe(first.id);
      expect((await queue.getJob('referral.v2'))?.data).toEqual({ n: 1 });
      const runs: number[] = [];
      start(name, (job) => {
        runs.push(job.data.n);
        return Promise.resolve();
      });
      await eventually('done', async () => ((await settled(queue)) && runs.length > 0 ? true : undefined));
      expect(runs).toEqual([1]);
    });

    it('keeps finished jobs as the backend keeps them: failed ones on both, completed ones in Redis', async () => {
      const name = queueName();
      const queue = bed.backend('producer').queue<{ n: number }>(name);
      expect(queue.defaultJobOptions).toMatchObject(RETENTION[bed.name]);
      start(name, (job) => (job.data.n === 1 ? Promise.resolve() : Promise.reject(new Error('no'))));
      await queue.add('ok', { n: 1 }, { jobId: 'completes' });
      await queue.add('no', { n: 2 }, { jobId: 'fails' });
      await eventually('both finished', async () =>
        (await queue.getJobState('fails')) === 'failed' && (await settled(queue)) ? true : undefined,
      );
      // In Redis the completed job stays for the dashboard; in the database it left as it completed,
      // because BullMQ's PostgreSQL backend trims kept jobs by reading them all (job-settings.ts).
      expect(await queue.getJobState('completes')).toBe(bed.name === 'redis' ? 'completed' : 'unknown');
      expect(await queue.getJobCounts('completed', 'failed')).toEqual({
        completed: bed.name === 'redis' ? 1 : 0,
        failed: 1,
      });
    });
  });
}
