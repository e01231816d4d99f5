// Runs once before each project's test files (vitest.config.ts): a migrated, empty PGlite's data
// directory, written to a file the run's in-memory PGlite stores start from (engines.ts), so that no
// test file pays for PGlite's initdb and the migrations again (seconds each, many times over). The file
// goes when the run ends.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { migrateToLatest, openStore } from '../../src/db/database.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The migrated PGlite data directory's file (a tarball PGlite dumped). */
    pgliteTemplate: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const store = await openStore({ engine: 'pglite', dataDir: undefined, command: 'test' });
  let snapshot: Blob;
  try {
    await migrateToLatest(store.db);
    if (store.snapshot === undefined) throw new Error('an in-memory PGlite store gives its snapshot');
    snapshot = await store.snapshot();
  } finally {
    await store.close();
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-pglite-template-'));
  const file = path.join(dir, 'pgdata.tar');
  fs.writeFileSync(file, Buffer.from(await snapshot.arrayBuffer()));
  project.provide('pgliteTemplate', file);
  return () => {
    fs.rmSync(dir, { recursive: true, force: true });
  };
}
