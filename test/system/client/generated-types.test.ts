// The client's generated types cannot fall behind the API: they are generated again, in memory, from
// the document refhub serves, and must equal the committed file byte for byte. When a route schema
// changes, this fails until `npm run client:generate` is run and its output committed.
import fs from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { GENERATED_FILE, renderClientTypes } from '../../../clients/typescript/scripts/client-types.ts';
import { servedDocument, type OpenApiDocument } from '../../../clients/typescript/scripts/served-document.ts';
import { createTestApp } from '../../support/test-app.ts';

const STALE = 'clients/typescript/src/openapi.generated.ts is out of date: run `npm run client:generate`';

describe('the generated client types', () => {
  let document: OpenApiDocument;
  let committed: string;
  beforeAll(async () => {
    document = await servedDocument();
    committed = await fs.readFile(GENERATED_FILE, 'utf8');
  });

  it('equal those generated from the document the generator builds', async () => {
    expect(committed === (await renderClientTypes(document)), STALE).toBe(true);
  });

  it('equal those generated from the document a running app serves at /openapi.json', async () => {
    const t = await createTestApp('pglite');
    try {
      const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
      expect(res.statusCode).toBe(200);
      expect(committed === (await renderClientTypes(res.json<OpenApiDocument>())), STALE).toBe(true);
    } finally {
      await t.close();
    }
    // A whole app on embedded PGlite starts slowly on a loaded 2-core machine.
  }, 120_000);

  it('change when the document changes', async () => {
    // The comparison above is only worth something if a change in a schema reaches the types.
    const changed = JSON.parse(JSON.stringify(document)) as {
      components: { schemas: { Note: { properties: Record<string, unknown> } } };
    };
    changed.components.schemas.Note.properties.mood = { type: 'string' };
    const fresh = await renderClientTypes(changed);
    expect(fresh).toContain('mood');
    expect(fresh === committed).toBe(false);
  });
});
