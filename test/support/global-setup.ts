// Runs once before the `int` and `browser` projects (vitest.config.ts): their tests run on PostgreSQL
// (every repository test on PostgreSQL as well as PGlite), so fail early, and clearly, when
// PostgreSQL cannot be reached. The `fast` project needs no server and runs without this check.
import pg from 'pg';
import { testDatabaseUrl } from './engines.ts';

export default async function setup(): Promise<void> {
  const client = new pg.Client({ connectionString: testDatabaseUrl(), connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (error) {
    throw new Error(
      `The tests need PostgreSQL at ${testDatabaseUrl()} (set TEST_DATABASE_URL): ${(error as Error).message}`,
      { cause: error },
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}
