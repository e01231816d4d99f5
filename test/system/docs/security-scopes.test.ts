// docs/security.md ("Scopes") lists every operation of the OpenAPI document under the scope it
// declares, once, in the row of its tag: the page cannot drift from what refhub enforces.
import fs from 'node:fs/promises';
import path from 'node:path';
import { Lexer, type Tokens } from 'marked';
import { beforeAll, describe, expect, it } from 'vitest';
import { servedDocument } from '../../../clients/typescript/scripts/served-document.ts';
import { SCOPES } from '../../../src/domain/client-credentials.ts';
import { operationsOf, type Document } from '../../support/openapi-operations.ts';

const PAGE = path.resolve(import.meta.dirname, '../../../docs/security.md');

interface Listed {
  readonly operationId: string;
  readonly tag: string;
  readonly scope: string;
}

/** The operations the page's table of scopes lists, with the tag and the scope it names. */
function listed(markdown: string): Listed[] {
  const tables = Lexer.lex(markdown).filter((token): token is Tokens.Table => token.type === 'table');
  const table = tables.find((candidate) =>
    SCOPES.every((scope) => candidate.header.some((cell) => cell.text === `\`${scope}\``)),
  );
  expect(table, 'a table with a column for each scope').toBeDefined();
  const scopeOfColumn = table!.header.map((cell) => /^`(.+)`$/.exec(cell.text)?.[1]);
  return table!.rows.flatMap((row) =>
    row.flatMap((cell, column) => {
      const scope = scopeOfColumn[column];
      if (scope === undefined) return [];
      return [...cell.text.matchAll(/`(\w+)`/g)].map(([, operationId]) => ({
        operationId: operationId!,
        tag: row[0]!.text,
        scope,
      }));
    }),
  );
}

describe('the scopes in docs/security.md', () => {
  let doc: Document & { paths: Record<string, Record<string, { tags?: string[] }>> };
  let page: string;
  beforeAll(async () => {
    doc = (await servedDocument()) as unknown as typeof doc;
    page = await fs.readFile(PAGE, 'utf8');
  }, 120_000);

  it('lists every operation once, in the row of its tag, under the scope it declares', () => {
    const declared = operationsOf(doc)
      .map(({ method, path: route, operation }) => {
        const scopes = (operation.security ?? []).flatMap((r) => r['ClientCredentials'] ?? []);
        expect(scopes, operation.operationId).toHaveLength(1);
        const tags = doc.paths[route]?.[method.toLowerCase()]?.tags ?? [];
        return { operationId: operation.operationId, tag: tags[0] ?? '', scope: scopes[0]! };
      })
      .sort((a, b) => a.operationId.localeCompare(b.operationId));
    const onPage = listed(page).sort((a, b) => a.operationId.localeCompare(b.operationId));
    expect(onPage).toEqual(declared);
  });

  it('sees an operation the page puts under the wrong scope', () => {
    const moved = page.replace('| `listReferrals`, `searchReferrals`,', '| `listReferrals`,');
    expect(moved).not.toBe(page);
    expect(listed(moved).some((entry) => entry.operationId === 'searchReferrals')).toBe(false);
  });
});
