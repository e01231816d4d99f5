// The queues on PGlite share its one session with the store (db/queue-database.ts). A statement of
// the queues that arrives while a transaction of the store holds the session waits for it to end: it
// never runs inside it, where the transaction's rollback would take a job with it (or its commit
// publish the job's half). Sent from inside a transaction's own code, it is refused at once.
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StatementOutsideTransactionError, type Store } from '../../src/db/database.ts';
import { createLogger } from '../../src/logger.ts';
import { migrateQueues, postgresQueueBackend, type QueueDatabase } from '../../src/queue/backend.ts';
import { openTestStore } from '../support/engines.ts';

/** The queues' database, telling `seen` each statement of the queues as it is sent. */
function watched(database: QueueDatabase, seen: (text: string) => void): QueueDatabase {
  const pool = database.pool as { query: (text: string, params?: unknown[]) => Promise<unknown> };
  const query = pool.query.bind(pool);
  return {
    ...database,
    pool: Object.assign(Object.create(pool) as object, {
      query: (text: string, params?: unknown[]) => {
        seen(text);
        return query(text, params);
      },
    }),
  };
}

describe('the queues on PGlite’s one session', () => {
  let store: Store;
  let queue: Queue<{ n: number }>;
  const sent: string[] = [];
  let onSent: (() => void) | undefined;

  beforeAll(async () => {
    store = await openTestStore('pglite');
    await migrateQueues(store.queueDatabase());
    const database = watched(store.queueDatabase(), (text) => {
      sent.push(text);
      if (text.includes('add_job')) onSent?.();
    });
    queue = postgresQueueBackend(database, createLogger({ logLevel: 'silent', env: 'test' })).queue('hazard');
    await queue.waitUntilReady();
  });
  afterAll(async () => {
    await queue.close();
    await store.close();
  });

  it('waits for a transaction of the store to end instead of running inside it', async () => {
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let rollBack!: (error: Error) => void;
    const rolledBack = new Promise<never>((_resolve, reject) => (rollBack = reject));
    const transaction = store.db
      .transaction()
      .execute(async (trx) => {
        await trx
          .insertInto('forward_backlog')
          .values({ institution: 'hci:S1234A', job_id: 'rolled-back', added_at: new Date() })
          .execute();
        entered();
        await rolledBack;
      })
      .catch((error: unknown) => error);
    await inside;
    // The transaction holds the session; the queue's statement is sent now, from outside it.
    const issued = new Promise<void>((resolve) => (onSent = resolve));
    const adding = queue.add('job', { n: 1 }, { jobId: 'kept' });
    await issued;
    rollBack(new Error('rolled back'));
    expect(await transaction).toEqual(new Error('rolled back'));
    await adding;
    // Had the job's statement run inside the transaction, its rollback would have taken the job.
    expect((await queue.getJob('kept'))?.data).toEqual({ n: 1 });
    expect(await store.db.selectFrom('forward_backlog').selectAll().execute()).toEqual([]);
  });

  it('refuses a statement of the queues sent from inside a transaction’s own code', async () => {
    await expect(
      store.db.transaction().execute(() => queue.add('job', { n: 2 }, { jobId: 'inside' })),
    ).rejects.toBeInstanceOf(StatementOutsideTransactionError);
  });
});
