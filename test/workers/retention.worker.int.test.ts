// The retention worker through the real queue: a firing runs retention and says what it did; a firing
// while an operator's run holds retention (`refhub retention run`) does nothing, completes, and says
// in the log that it was skipped and why, so the scheduled job neither fails nor retries into it.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import type { QueueBackend } from '../../src/queue/backend.ts';
import { RETENTION_QUEUE, type RetentionPayload } from '../../src/queue/retention.queue.ts';
import { startRetentionWorker } from '../../src/workers/retention.worker.ts';
import { createQueueApp, type QueueApp } from '../support/bridge.ts';

describe('the retention worker', () => {
  let t: QueueApp;
  let backend: QueueBackend;
  let worker: Worker<RetentionPayload>;
  let archiveDir: string;
  const logs: string[] = [];

  beforeAll(async () => {
    archiveDir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-retention-worker-'));
    t = await createQueueApp('postgres', { env: { RETENTION_ARCHIVE_DIR: archiveDir } });
    await t.ctx.claimQueues();
    backend = t.ctx.queueBackend('worker');
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs.push(chunk.toString('utf8'));
        done();
      },
    });
    const logger = createLogger(t.ctx.config, sink);
    worker = startRetentionWorker({ retention: t.ctx.retention, logger }, { backend });
  });
  afterAll(async () => {
    await worker.close();
    await backend.close();
    await t.close();
    fs.rmSync(archiveDir, { recursive: true, force: true });
  });

  const fire = async () => {
    const job = await t.ctx.queues.queues[RETENTION_QUEUE].add(
      'run',
      {},
      { jobId: `firing-${randomUUID()}` },
    );
    for (;;) {
      const state = await job.getState();
      if (state === 'completed' || state === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return (await t.ctx.queues.queues[RETENTION_QUEUE].getJob(job.id ?? ''))!;
  };

  it('runs retention at a firing, and records the run', async () => {
    const job = await fire();
    expect(job.failedReason).toBeUndefined();
    expect(job.returnvalue).toMatchObject({ referralsArchived: 0, partitionsDropped: 0 });
    const runs = await t.ctx.db
      .selectFrom('retention_runs')
      .select(['started_by', 'outcome'])
      .where('started_by', '=', `retention.${job.id}`)
      .execute();
    expect(runs).toEqual([{ started_by: `retention.${job.id}`, outcome: 'succeeded' }]);
  });

  it("skips a firing while an operator's run holds retention, and says so", async () => {
    const now = new Date();
    await t.ctx.db
      .insertInto('retention_runs')
      .values({ id: randomUUID(), started_by: 'retention.cli.operator', started_at: now, heartbeat_at: now })
      .execute();
    const job = await fire();
    expect(job.failedReason).toBeUndefined();
    expect(job.returnvalue).toEqual({
      partitionsMade: 0,
      referralsArchived: 0,
      partitionsDropped: 0,
      partitionsWaiting: 0,
    });
    const skipped = logs
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((l) => l.msg === 'retention skipped: another run holds it');
    expect(skipped).toMatchObject({
      jobId: job.id,
      heldBy: 'retention.cli.operator',
      heldSince: now.toISOString(),
    });
  });
});
