// The OpenAPI document exactly as refhub serves it at /openapi.json, built in this process: the real
// app on an embedded store in memory, so no server, database or Redis is needed and nothing is
// written to disk. The settings are fixed, so the document does not depend on the shell it runs in.
import { loadConfig } from '../../../src/config.ts';
import { createContext } from '../../../src/composition/context.ts';
import { createApiApp } from '../../../src/composition/api-app.ts';
import { migrateToLatest, openStore } from '../../../src/db/database.ts';

/** The document as JSON data; openapi-typescript checks its shape. */
export type OpenApiDocument = Readonly<Record<string, unknown>>;

export async function servedDocument(): Promise<OpenApiDocument> {
  const config = loadConfig({ LOG_LEVEL: 'silent', PUBLIC_URL: 'http://127.0.0.1:3000' });
  const store = await openStore({ engine: 'pglite', dataDir: undefined, command: 'client-generate' });
  const ctx = await createContext(config, 'client-generate', { store });
  try {
    await migrateToLatest(store.db);
    const app = await createApiApp(ctx);
    try {
      await app.ready();
      const res = await app.inject({ method: 'GET', url: '/openapi.json' });
      if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}`);
      return res.json<OpenApiDocument>();
    } finally {
      await app.close();
    }
  } finally {
    await ctx.close();
  }
}
