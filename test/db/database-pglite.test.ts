// The embedded store's contract: PGlite is one backend, so the store hands its one connection to one
// caller at a time. A transaction holds it from BEGIN to COMMIT or ROLLBACK, and other queries wait
// instead of running inside somebody else's transaction.
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/db/database.ts';
import type { Database } from '../../src/db/schema.ts';
import { openTestStore } from '../support/engines.ts';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function systemNames(db: Kysely<Database>): Promise<string[]> {
  const rows = await db
    .selectFrom('systems')
    .select('name')
    .where('name', '<>', 'Manual')
    .orderBy('name')
    .execute();
  return rows.map((r) => r.name);
}

describe('the embedded PGlite store', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openTestStore('pglite');
  });
  afterAll(async () => {
    await store.close();
  });
  beforeEach(async () => {
    await store.db.deleteFrom('systems').where('name', '<>', 'Manual').execute();
  });

  it('runs concurrent transactions one after the other, never interleaved', async () => {
    const events: string[] = [];
    const transaction = (name: string) =>
      store.db.transaction().execute(async (trx) => {
        events.push(`${name} begin`);
        await trx.insertInto('systems').values({ name }).execute();
        // Yield to the event loop so that the other transaction would run now if it could.
        await pause(50);
        const seen = await systemNames(trx);
        events.push(`${name} commit`);
        return seen;
      });
    const [first, second] = await Promise.all([transaction('First'), transaction('Second')]);
    expect(events).toEqual(['First begin', 'First commit', 'Second begin', 'Second commit']);
    // Each saw its own row; only the later one also saw the earlier, committed one.
    expect(first).toEqual(['First']);
    expect(second).toEqual(['First', 'Second']);
    expect(await systemNames(store.db)).toEqual(['First', 'Second']);
  });

  it('keeps a query issued during a transaction out of it', async () => {
    const trx = await store.db.startTransaction().execute();
    await trx.insertInto('systems').values({ name: 'Uncommitted' }).execute();
    // If this ran on the shared connection now, it would see the uncommitted row.
    const outside = systemNames(store.db);
    await pause(50);
    await trx.rollback().execute();
    expect(await outside).toEqual([]);
  });

  it('serializes many concurrent transactions that read, then write what they read', async () => {
    // A lost update would show with interleaving: each reads the count, then inserts count + 1.
    const bump = () =>
      store.db.transaction().execute(async (trx) => {
        const { n } = await trx
          .selectFrom('systems')
          .select(sql<number>`count(*)::int`.as('n'))
          .where('name', 'like', 'Counter%')
          .executeTakeFirstOrThrow();
        await pause(5);
        await trx
          .insertInto('systems')
          .values({ name: `Counter${n}` })
          .execute();
      });
    await Promise.all(Array.from({ length: 10 }, bump));
    expect(await systemNames(store.db)).toEqual(Array.from({ length: 10 }, (_, i) => `Counter${i}`).sort());
  });

  it('rolls back a failed transaction and releases the connection', async () => {
    await expect(
      store.db.transaction().execute(async (trx) => {
        await trx.insertInto('systems').values({ name: 'RolledBack' }).execute();
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await systemNames(store.db)).toEqual([]);
    // The next transaction gets the connection and commits normally.
    await store.db.transaction().execute(async (trx) => {
      await trx.insertInto('systems').values({ name: 'Afterwards' }).execute();
    });
    expect(await systemNames(store.db)).toEqual(['Afterwards']);
  });

  it('recovers from a statement that fails inside a transaction', async () => {
    await expect(
      store.db.transaction().execute(async (trx) => {
        await trx.insertInto('systems').values({ name: 'BeforeTheError' }).execute();
        // Violates the name CHECK: PostgreSQL aborts the transaction.
        await trx.insertInto('systems').values({ name: '!bad name' }).execute();
      }),
    ).rejects.toThrow(/check constraint/i);
    // Had the ROLLBACK not run, this would fail with "current transaction is aborted".
    expect(await systemNames(store.db)).toEqual([]);
    const { one } = await sql<{ one: number }>`select 1 as one`.execute(store.db).then((r) => r.rows[0]!);
    expect(one).toBe(1);
  });

  it('releases the connection after a failed query outside a transaction', async () => {
    await expect(sql`select * from no_such_table`.execute(store.db)).rejects.toThrow(/no_such_table/);
    await expect(store.db.insertInto('systems').values({ name: 'Manual' }).execute()).rejects.toThrow(
      /duplicate key/,
    );
    await store.db.insertInto('systems').values({ name: 'StillWorks' }).execute();
    expect(await systemNames(store.db)).toEqual(['StillWorks']);
  });

  it('reports affected rows and runs multi-statement scripts', async () => {
    await store.db
      .insertInto('systems')
      .values([{ name: 'A1' }, { name: 'A2' }, { name: 'A3' }])
      .execute();
    const updated = await store.db.deleteFrom('systems').where('name', 'like', 'A%').executeTakeFirst();
    expect(updated.numDeletedRows).toBe(3n);
    // A script without parameters (as the migrations are) runs every statement in it.
    await sql`
      insert into systems (name) values ('Scripted1'); insert into systems (name) values ('Scripted2')
    `.execute(store.db);
    expect(await systemNames(store.db)).toEqual(['Scripted1', 'Scripted2']);
  });

  it('keeps 32 MB of shared buffers, not the 128 MB of PostgreSQL: they are resident from the start', async () => {
    const { rows } = await sql<{ shared_buffers: string }>`show shared_buffers`.execute(store.db);
    expect(rows[0]?.shared_buffers).toBe('32MB');
  });

  it('honours the isolation level of a transaction', async () => {
    const level = await store.db
      .transaction()
      .setIsolationLevel('serializable')
      .execute(
        async (trx) =>
          (
            await sql<{ level: string }>`select current_setting('transaction_isolation') as level`.execute(
              trx,
            )
          ).rows[0]?.level,
      );
    expect(level).toBe('serializable');
  });
});

describe('an in-memory PGlite started from another one’s snapshot', () => {
  it('has the schema and the rows the other had then, and none of what either writes after', async () => {
    const first = await openStore({ engine: 'pglite', dataDir: undefined, command: 'test' });
    const second = await (async () => {
      try {
        await sql`CREATE TABLE notes_seen (note text)`.execute(first.db);
        await sql`INSERT INTO notes_seen VALUES ('before')`.execute(first.db);
        const snapshot = await first.snapshot?.();
        if (snapshot === undefined) throw new Error('an in-memory store gives its snapshot');
        await sql`INSERT INTO notes_seen VALUES ('after')`.execute(first.db);
        return await openStore({ engine: 'pglite', dataDir: undefined, command: 'test', from: snapshot });
      } finally {
        await first.close();
      }
    })();
    try {
      await sql`INSERT INTO notes_seen VALUES ('its own')`.execute(second.db);
      const rows = await sql<{ note: string }>`SELECT note FROM notes_seen ORDER BY note`.execute(second.db);
      expect(rows.rows.map((r) => r.note)).toEqual(['before', 'its own']);
    } finally {
      await second.close();
    }
  });
});
