// The two engines every repository test runs on. Each test file gets its own database: an in-memory
// PGlite, or a fresh PostgreSQL database created from TEST_DATABASE_URL and dropped afterwards, so
// files run in parallel without seeing each other's rows.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import pg from 'pg';
import { inject } from 'vitest';
import { migrateToLatest, openStore, type Engine, type Store } from '../../src/db/database.ts';

export const ENGINES: readonly Engine[] = ['pglite', 'postgres'];

/**
 * The engine a test of the layers above the store runs on: one. Only db/ holds SQL (the import rules say
 * so), and its tests run every statement on both engines; the embedded tier runs the whole application
 * on PGlite. So a test of routes, pages, workers or the typed client runs once, on PostgreSQL (many
 * connections, so its races are real), and loops over ENGINES only where the engine is its subject:
 * transactions, connections, concurrency, the data keys, the outbox and its queues.
 */
export const APP_ENGINES: readonly Engine[] = ['postgres'];

import { testDatabaseUrl } from './servers.ts';

export { testDatabaseUrl };

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export interface TestStoreOptions {
  readonly migrate?: boolean;
  /** How refhub reaches PostgreSQL: for example through a proxy a test can cut. */
  readonly reach?: (url: URL) => URL;
  /** A PostgreSQL database whose text sorts by this ICU locale (for example `en-US`), not by bytes. */
  readonly icuLocale?: string;
}

/**
 * A migrated, empty PGlite's data directory: the file the run made once (pglite-template.ts), read
 * once per test file. An in-memory PGlite started from it skips initdb and the migrations, which are
 * most of the time opening one takes.
 */
let migratedPglite: Blob | undefined;
function migratedPgliteDataDir(): Blob {
  migratedPglite ??= new Blob([fs.readFileSync(inject('pgliteTemplate'))]);
  return migratedPglite;
}

/** A migrated, empty store on `engine`. Closing it drops the PostgreSQL database. */
export async function openTestStore(engine: Engine, options: TestStoreOptions = {}): Promise<Store> {
  let store: Store;
  let drop: (() => Promise<void>) | undefined;
  if (engine === 'pglite') {
    store = await openStore({
      engine: 'pglite',
      dataDir: undefined,
      command: 'test',
      ...(options.migrate === false ? {} : { from: migratedPgliteDataDir() }),
    });
  } else {
    const name = `refhub_test_${randomUUID().replaceAll('-', '')}`;
    const collation =
      options.icuLocale === undefined
        ? ''
        : ` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '${options.icuLocale}' LOCALE 'C.UTF-8'`;
    await admin((c) => c.query(`CREATE DATABASE ${name}${collation}`));
    const url = new URL(testDatabaseUrl());
    url.pathname = `/${name}`;
    const reached = options.reach?.(new URL(url)) ?? url;
    store = await openStore({ engine: 'postgres', url: reached.toString(), poolSize: 5 });
    drop = () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined);
  }
  if (options.migrate !== false) await migrateToLatest(store.db);
  return {
    ...store,
    close: async () => {
      await store.close();
      await drop?.();
    },
  };
}

/**
 * A migrated, empty PostgreSQL store, with the URL that reaches its database: for a refhub process a
 * test spawns beside it (a command, as an operator runs it). Closing it drops the database.
 */
export async function openPostgresStoreWithUrl(): Promise<{ store: Store; url: string }> {
  let url = '';
  const store = await openTestStore('postgres', {
    reach: (reached) => {
      url = reached.toString();
      return reached;
    },
  });
  return { store, url };
}
