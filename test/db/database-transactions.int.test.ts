// A statement sent to the store from inside a transaction, but not through it, would wait for a
// connection while the transaction holds one: on PGlite's one connection for good, and on PostgreSQL
// until the pool runs dry. On both engines the store refuses it at once, with the stack that sent it,
// and keeps answering.
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StatementOutsideTransactionError, type Store } from '../../src/db/database.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';

describe.each(ENGINES)('statements inside a transaction, on %s', (engine) => {
  let store: Store;
  beforeEach(async () => {
    store = await openTestStore(engine);
  });
  afterEach(async () => {
    await store.close();
  });

  it('refuses a statement sent to the store, not the transaction, from inside it', async () => {
    await expect(
      store.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        await sql`select 2`.execute(store.db);
      }),
    ).rejects.toThrow(StatementOutsideTransactionError);
    // Refused in what the transaction's code started too, however deep.
    await expect(
      store.db
        .transaction()
        .setIsolationLevel('serializable')
        .execute(async () => {
          const later = async () => {
            await Promise.resolve();
            return sql`select 3`.execute(store.db);
          };
          return later();
        }),
    ).rejects.toThrow(StatementOutsideTransactionError);
    // The store answers after both.
    expect((await sql<{ n: number }>`select 4 as n`.execute(store.db)).rows).toEqual([{ n: 4 }]);
  });

  it('runs statements through the transaction, and on the store before and after it', async () => {
    const held: number[] = [];
    const result = await store.db.transaction().execute(async (trx) => {
      held.push(store.connections().held);
      return (await sql<{ n: number }>`select 5 as n`.execute(trx)).rows;
    });
    expect(result).toEqual([{ n: 5 }]);
    expect(held).toEqual([1]);
    expect(store.connections()).toEqual({ held: 0, max: engine === 'pglite' ? 1 : 5 });
    await Promise.all([sql`select 6`.execute(store.db), sql`select 7`.execute(store.db)]);
    expect(store.connections().held).toBe(0);
  });
});
