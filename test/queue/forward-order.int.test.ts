// The forward queue's order (queue/forward.queue.ts): each forward is ranked in its institution's
// backlog (kept in the database, db/forwarding/backlog.ts, on both engines), a started or coalesced
// one leaves it, old entries stop counting, and the producer adds each job with its rank as its
// priority, counted as waiting, on both queue backends.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import { ORDER_HORIZON_MS, rankForwards, type QueuedForward } from '../../src/queue/forward.queue.ts';
import type { QueueProducer } from '../../src/queue/producer.ts';
import { forwardJobId } from '../../src/queue/registry.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';
import { openQueueBed, QUEUE_BACKEND_NAMES, type QueueBed } from '../support/queue-backends.ts';
import { storesOf } from '../support/stores.ts';

const A = 'hci:S1234A';
const B = 'hci:S2345B';

function forward(institution: string, version = 1): QueuedForward {
  return { referralId: randomUUID(), version, requestId: 'order-test', institution };
}

const jobOf = (f: QueuedForward) => ({
  institution: f.institution,
  jobId: forwardJobId(f.referralId, f.version),
});

describe.each(ENGINES)('each institution’s backlog on %s', (engine) => {
  let store: Store;
  let backlog: ReturnType<typeof storesOf>['forwarding']['backlog'];

  beforeAll(async () => {
    store = await openTestStore(engine);
    backlog = storesOf(store.db).forwarding.backlog;
  });
  afterAll(() => store.close());

  it('ranks each forward in its own institution’s backlog, and a started one leaves it', async () => {
    const first = [forward(A), forward(A), forward(B), forward(A)];
    expect(await rankForwards(backlog, first, Date.now())).toEqual([1, 2, 1, 3]);
    await backlog.forget([jobOf(first[0]!)]);
    expect(await rankForwards(backlog, [forward(A), forward(B)], Date.now())).toEqual([3, 2]);
    // Ranked again under the same job ID, a forward still waiting keeps its one entry.
    expect(await rankForwards(backlog, [first[1]!], Date.now())).toEqual([3]);
    await backlog.forget([...first, ...first].map(jobOf));
  });

  it('stops counting an entry once it is older than the horizon, and deletes it', async () => {
    const now = Date.now();
    const C = 'hci:S3456C';
    const old = [forward(C), forward(C)];
    expect(await rankForwards(backlog, old, now - ORDER_HORIZON_MS - 1)).toEqual([1, 2]);
    const fresh = forward(C);
    expect(await rankForwards(backlog, [fresh], now)).toEqual([1]);
    const left = await store.db
      .selectFrom('forward_backlog')
      .select('job_id')
      .where('institution', '=', C)
      .execute();
    expect(left.map((r) => r.job_id)).toEqual([jobOf(fresh).jobId]);
    await backlog.forget([jobOf(fresh)]);
  });
});

describe.each(QUEUE_BACKEND_NAMES)('the forward queue’s order on the %s backend', (name) => {
  let bed: QueueBed;
  let producer: QueueProducer;

  beforeAll(async () => {
    bed = await openQueueBed(name);
    producer = bed.producer();
  });
  afterAll(() => bed.close());

  it('adds each job with its rank as its priority, counted as waiting', async () => {
    const b = [forward(B), forward(B), forward(B)];
    const a = forward(A);
    await producer.enqueueForwards(b);
    await producer.enqueueForward(a);
    const queue = producer.queues['ehr-forward'];
    const priority = async (f: QueuedForward) =>
      (await queue.getJob(forwardJobId(f.referralId, f.version)))?.opts.priority;
    expect(await Promise.all([...b, a].map(priority))).toEqual([1, 2, 3, 1]);
    // BullMQ keeps them apart from its plain waiting list; the counts show them as waiting.
    expect(await queue.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 0, prioritized: 4 });
    expect(await producer.jobCounts('ehr-forward')).toMatchObject({ waiting: 4, active: 0 });
    await queue.obliterate({ force: true });
    await bed.backlog.forget([...b, a].map(jobOf));
  });

  it('takes a forward coalesced into its referral’s waiting job out of the backlog', async () => {
    const first = forward(A);
    await producer.enqueueForward(first);
    const waiting = () =>
      bed.store.db.selectFrom('forward_backlog').select('job_id').where('institution', '=', A).execute();
    const before = await waiting();
    // The referral changed again while its job waits: the waiting job sends the latest, nothing is added.
    await producer.enqueueForward({ ...first, version: 2 });
    expect(await producer.queues['ehr-forward'].getJob(forwardJobId(first.referralId, 2))).toBeUndefined();
    expect(await waiting()).toEqual(before);
  });
});
