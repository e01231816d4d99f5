// Statements compiled once and run with new values each time: every run must read with its own values,
// in whichever executor it is given, and a statement whose text would depend on a value is refused.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledOnce } from '../../src/db/compiled-once.ts';
import type { Store } from '../../src/db/database.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';

describe.each(ENGINES)('statements compiled once, on %s', (engine) => {
  let store: Store;

  beforeAll(async () => {
    store = await openTestStore(engine);
    await store.db
      .insertInto('systems')
      .values([{ name: 'Alpha' }, { name: 'Beta' }, { name: 'Gamma' }])
      .execute();
  });
  afterAll(async () => {
    await store.close();
  });

  // Two placeholders, one of them used twice, beside constant parameters of the statement itself.
  const systemsNamed = compiledOnce(2, (db, first: string, second: string) =>
    db
      .selectFrom('systems')
      .select('name')
      .where('name', 'in', ['Alpha', 'Beta', 'Gamma', 'Delta'])
      .where((eb) =>
        eb.or([
          eb('name', '=', first),
          eb.and([eb('name', '=', second), eb('name', '<>', first)]),
          eb('name', '=', 'never a system'),
        ]),
      )
      .orderBy('name'),
  );

  it('reads with the values of each run, not those of the first', async () => {
    expect(await systemsNamed(store.db, 'Beta', 'Alpha')).toEqual([{ name: 'Alpha' }, { name: 'Beta' }]);
    expect(await systemsNamed(store.db, 'Gamma', 'Gamma')).toEqual([{ name: 'Gamma' }]);
    expect(await systemsNamed(store.db, 'nobody', 'Beta')).toEqual([{ name: 'Beta' }]);
  });

  it('runs in a transaction, and sees what the transaction wrote', async () => {
    await store.db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('systems').values({ name: 'Delta' }).execute();
        expect(await systemsNamed(trx, 'Delta', 'nobody')).toEqual([{ name: 'Delta' }]);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect(await systemsNamed(store.db, 'Delta', 'nobody')).toEqual([]);
  });

  it('refuses a statement that puts a value into its text', async () => {
    const inlined = compiledOnce(1, (db, name: string) =>
      db.selectFrom('systems').select('name').where('name', '=', sql.lit(name)),
    );
    await expect(inlined(store.db, 'HAS')).rejects.toThrow(/part of the SQL text/);
  });

  it('refuses a statement that leaves out one of its values', async () => {
    const forgets = compiledOnce<[string, string], { name: string }>(2, (db, name: string) =>
      db.selectFrom('systems').select('name').where('name', '=', name),
    );
    await expect(forgets(store.db, 'HAS', 'Epic')).rejects.toThrow(/placeholder 1 is not a parameter/);
  });
});
