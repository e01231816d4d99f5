// Opens the store: PostgreSQL through a pg pool when DATABASE_URL is set, embedded PGlite in DATA_DIR
// otherwise. Both speak the same SQL and run the same migrations.
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Migrator, type MigrationResultSet } from 'kysely/migration';
import pg from 'pg';
import { lockDataDir } from './data-dir-lock.ts';
import { migrations } from './migrations/index.ts';
import { PGliteDialect } from './pglite-dialect.ts';
import type { Database } from './schema.ts';

export type Engine = 'postgres' | 'pglite';

export interface Store {
  readonly db: Kysely<Database>;
  readonly engine: Engine;
  close(): Promise<void>;
}

export type StoreTarget =
  | { readonly engine: 'postgres'; readonly url: string; readonly poolSize?: number }
  | { readonly engine: 'pglite'; readonly dataDir: string | undefined; readonly command: string };

export async function openStore(target: StoreTarget): Promise<Store> {
  if (target.engine === 'postgres') {
    const pool = new pg.Pool({
      connectionString: target.url,
      max: target.poolSize ?? 10,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      application_name: 'refhub',
    });
    // An idle client that loses its server must not crash the process; the next query reports it.
    pool.on('error', () => undefined);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, engine: 'postgres', close: () => db.destroy() };
  }
  // No dataDir means an in-memory database (tests).
  const release =
    target.dataDir === undefined ? () => undefined : lockDataDir(target.dataDir, target.command);
  try {
    const client = target.dataDir === undefined ? new PGlite() : new PGlite(`${target.dataDir}/pgdata`);
    // Opening fails here, not at the first query, when the data directory is unusable.
    await client.waitReady;
    const db = new Kysely<Database>({ dialect: new PGliteDialect(client) });
    return {
      db,
      engine: 'pglite',
      close: async () => {
        try {
          await db.destroy();
        } finally {
          release();
        }
      },
    };
  } catch (error) {
    release();
    throw error;
  }
}

export function createMigrator(db: Kysely<Database>): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(migrations) },
  });
}

/** Applies every pending migration; throws the first failure. */
export async function migrateToLatest(db: Kysely<Database>): Promise<MigrationResultSet> {
  const result = await createMigrator(db).migrateToLatest();
  if (result.error !== undefined) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Migration ${failed} failed`, { cause: result.error });
  }
  return result;
}

/** True when every known migration has been applied (used by /readyz). */
export async function isMigrated(db: Kysely<Database>): Promise<boolean> {
  const list = await createMigrator(db).getMigrations();
  return list.every((m) => m.executedAt !== undefined);
}

export async function ping(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}
