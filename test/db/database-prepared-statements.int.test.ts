// Each connection keeps the statements it runs with parameters prepared, so that PostgreSQL (or
// embedded PGlite) plans them once, not on every request; `select *` stays unprepared, so that a
// migration adding a column cannot break a statement prepared before it.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';

describe.each(ENGINES)('prepared statements on %s', (engine) => {
  let store: Store;
  beforeAll(async () => {
    store = await openTestStore(engine);
  });
  afterAll(async () => {
    await store.close();
  });

  it('keeps a statement with parameters prepared on its connection, and runs select * unnamed', async () => {
    const prepared = await store.db.connection().execute(async (conn) => {
      for (const name of ['Manual', 'Nobody', 'Manual']) {
        const rows = await conn.selectFrom('systems').select('name').where('name', '=', name).execute();
        expect(rows.length).toBe(name === 'Manual' ? 1 : 0);
      }
      await conn.selectFrom('systems').selectAll().where('name', '=', 'Manual').execute();
      const { rows } = await sql<{ name: string; statement: string }>`
        select name, statement from pg_prepared_statements where name like 'refhub_%'`.execute(conn);
      return rows;
    });
    const named = prepared.filter((p) => p.statement.includes('"systems"'));
    expect(named.map((p) => p.statement)).toEqual(['select "name" from "systems" where "name" = $1']);
  });
});
