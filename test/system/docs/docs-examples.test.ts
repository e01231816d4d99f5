// The examples in docs/*.md work. Every JSON example says what it is in its fence's info string
// (docs/testing.md, "Examples in the docs"), and is checked as that:
//
//   ```json catalog                  a catalog file: loaded through the real loader into an empty store
//   ```json request <operationId>    a request body: it passes the operation's schema in /openapi.json
//   ```json response <Schema>        a response: it passes components.schemas.<Schema>
//   ```json fragment <Schema>        some members of a <Schema> object: each passes its property
//
// and a JSON block that says none of these fails. The `curl` commands of the shell blocks must name an
// operation of the document, with a body and a query that pass its schemas. The institutions and
// offerings an example names must be in the demo catalog (catalog/demo.json), which the docs' readers
// have, and every refhub address a doc names in backticks (`/docs`, `/admin/queues`, …) must be a route.
// The catalog page's field table must say which fields are required exactly as the loader does.
import fs from 'node:fs/promises';
import path from 'node:path';
import { Lexer, type Tokens } from 'marked';
import { parse as parseShell } from 'shell-quote';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TSchema } from 'typebox';
import { DEMO_CATALOG_FILE } from '../../../src/composition/demo-setup.ts';
import { CatalogDocument, createCatalogService } from '../../../src/services/catalog/catalog.service.ts';
import { createStores } from '../../../src/db/stores.ts';
import { testDataKeys } from '../../support/data-keys.ts';
import { createRequestSchemaCompiler } from '../../../src/services/referrals/fields.ts';
import { openTestStore } from '../../support/engines.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import { resolved } from '../../support/openapi-references.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const DOCS = path.join(ROOT, 'docs');
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

interface Block {
  readonly file: string;
  readonly line: number;
  readonly info: string;
  readonly text: string;
}

interface Operation {
  operationId: string;
  parameters?: { name: string; in: string; schema: object }[];
  requestBody?: { content: Record<string, { schema: object }> };
}
interface Document {
  paths: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>;
  components: { schemas: Record<string, object> };
}

async function docsPages(): Promise<{ file: string; text: string }[]> {
  const names = (await fs.readdir(DOCS)).filter((name) => name.endsWith('.md')).sort();
  return Promise.all(
    names.map(async (name) => ({
      file: `docs/${name}`,
      text: await fs.readFile(path.join(DOCS, name), 'utf8'),
    })),
  );
}

/** The fenced code blocks of a markdown page, as a markdown parser reads them. */
function blocksOf(page: { file: string; text: string }): Block[] {
  const blocks: Block[] = [];
  let offset = 0;
  for (const token of Lexer.lex(page.text)) {
    const at = page.text.indexOf(token.raw, offset);
    if (at >= 0) offset = at + token.raw.length;
    if (token.type === 'code' && (token as Tokens.Code).codeBlockStyle !== 'indented') {
      const code = token as Tokens.Code;
      const line = page.text.slice(0, Math.max(at, 0)).split('\n').length;
      blocks.push({ file: page.file, line, info: (code.lang ?? '').trim(), text: code.text });
    }
  }
  return blocks;
}

const where = (block: Block) => `${block.file}:${block.line}`;

const typed = createRequestSchemaCompiler(false);
const text = createRequestSchemaCompiler('array');

function problemsOf(schema: object, value: unknown, asText = false): string[] {
  const validate = (asText ? text : typed)(schema);
  if (validate(structuredClone(value))) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`);
}

/** The operation a method and a concrete path name, with the path's parameters. */
function operationAt(doc: Document, method: string, urlPath: string) {
  for (const [template, item] of Object.entries(doc.paths)) {
    const names: string[] = [];
    const pattern = template
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      .replace(/\\\{(\w+)\\\}/g, (_m, name: string) => {
        names.push(name);
        return '([^/]+)';
      });
    const match = new RegExp(`^${pattern}$`).exec(urlPath);
    const operation = item[method.toLowerCase() as (typeof METHODS)[number]];
    if (match && operation) {
      return {
        operation,
        params: Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(match[i + 1]!)])),
      };
    }
  }
  return undefined;
}

interface Curl {
  readonly method: string;
  readonly url: URL;
  readonly body: unknown;
}

/** The curl commands of a shell block: method, URL and JSON body, with shell variables left as text. */
function curlsOf(block: Block): Curl[] {
  // One command ends at an operator (`|`, `;`, `&&`) or where the next `curl` begins; a quoted body
  // may span lines.
  const commands: string[][] = [];
  for (const word of parseShell(block.text.replace(/\\\n/g, ' '), (name) => `$${name}`)) {
    if (typeof word !== 'string') commands.push([]);
    else if (word === 'curl') commands.push([word]);
    else commands.at(-1)?.push(word);
  }
  return commands.flatMap((words) => {
    if (words[0] !== 'curl') return [];
    let method: string | undefined;
    let url: string | undefined;
    let data: string | undefined;
    for (let i = 1; i < words.length; i++) {
      const word = words[i]!;
      if (word === '-X' || word === '--request') method = words[++i];
      else if (word === '-d' || word === '--data' || word === '--data-raw') data = words[++i];
      else if (['-H', '--header', '-u', '--user', '-o', '--output'].includes(word)) i++;
      else if (!word.startsWith('-') && url === undefined) url = word;
    }
    if (url === undefined || !url.includes('/api/')) return [];
    return [
      {
        method: method ?? (data === undefined ? 'GET' : 'POST'),
        url: new URL(url.slice(url.indexOf('/api/')), 'http://refhub.example'),
        body: data === undefined ? undefined : (JSON.parse(data) as unknown),
      },
    ];
  });
}

/** Every `hci` institution and every offering a value names, wherever it sits. */
function catalogNames(
  value: unknown,
  found = { institutions: new Set<string>(), offerings: new Set<string>() },
) {
  if (Array.isArray(value)) for (const item of value) catalogNames(item, found);
  else if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    for (const key of ['institutionId', 'id'] as const) {
      const idType = key === 'id' ? record.idType : record.institutionIdType;
      if (idType === 'hci' && typeof record[key] === 'string') found.institutions.add(record[key]);
    }
    if (typeof record.offeringId === 'string') found.offerings.add(record.offeringId);
    for (const item of Object.values(record)) catalogNames(item, found);
  }
  return found;
}

/** The fields of the catalog file, as `offerings[].name`, each with whether the loader requires it. */
function catalogFields(schema: TSchema, prefix = ''): [string, boolean][] {
  const node = schema as {
    type?: string;
    properties?: Record<string, TSchema>;
    required?: string[];
    items?: TSchema;
  };
  if (node.type === 'array' && node.items !== undefined) {
    const items = node.items as { type?: string };
    return items.type === 'object' ? catalogFields(node.items, `${prefix}[]`) : [[`${prefix}[]`, true]];
  }
  if (node.type !== 'object' || node.properties === undefined) return [];
  return Object.entries(node.properties).flatMap(([name, child]) => {
    const field = prefix === '' ? name : `${prefix}.${name}`;
    const required = node.required?.includes(name) === true;
    const inner = catalogFields(child, field);
    const childType = (child as { type?: string }).type;
    // An object field (an offering's institution) is one row; a list is described by its items, and a
    // list of values (an offering's priorities) by one row, required as the list is.
    if (childType === 'array') {
      const items = (child as { items?: { type?: string } }).items;
      return items?.type === 'object' ? inner : [[`${field}[]`, required] as [string, boolean]];
    }
    return [[field, required] as [string, boolean]];
  });
}

describe('the examples in docs/', () => {
  let pages: { file: string; text: string }[];
  let blocks: Block[];
  let t: TestApp;
  let doc: Document;
  let demo: { institutions: Set<string>; offerings: Set<string> };

  beforeAll(async () => {
    pages = await docsPages();
    blocks = pages.flatMap(blocksOf);
    t = await createTestApp('pglite');
    doc = t.app.swagger() as unknown as Document;
    const catalog = JSON.parse(await fs.readFile(DEMO_CATALOG_FILE, 'utf8')) as {
      institutions: { id: string }[];
      offerings: { id: string }[];
    };
    demo = {
      institutions: new Set(catalog.institutions.map((i) => i.id)),
      offerings: new Set(catalog.offerings.map((o) => o.id)),
    };
    // A whole app on embedded PGlite starts slowly on a loaded 2-core machine.
  }, 180_000);
  afterAll(async () => {
    await t.close();
  });

  const jsonBlocks = () => blocks.filter((b) => b.info.split(/\s+/)[0] === 'json');

  it('finds the examples: a parser that saw none would prove nothing', () => {
    expect(jsonBlocks().length).toBeGreaterThanOrEqual(5);
    expect(jsonBlocks().filter((b) => b.info.startsWith('json catalog'))).toHaveLength(1);
  });

  it('parses each example of a file or message outside the API', () => {
    for (const block of jsonBlocks().filter((b) => b.info.startsWith('json outside '))) {
      expect(() => JSON.parse(block.text) as unknown, where(block)).not.toThrow();
    }
  });

  it('says what each JSON example is', () => {
    const unmarked = jsonBlocks()
      .filter((b) => !/^json (catalog|(request|response|fragment|outside) \S+)$/.test(b.info))
      .map((b) => `${where(b)}: \`\`\`${b.info}`);
    expect(unmarked, 'mark it as in docs/testing.md, "Examples in the docs"').toEqual([]);
  });

  it('loads every catalog example, alone, into an empty store through the catalog loader', async () => {
    for (const block of jsonBlocks().filter((b) => b.info === 'json catalog')) {
      const store = await openTestStore('pglite');
      try {
        const summary = await createCatalogService({ stores: createStores(store.db, testDataKeys()) }).load(
          JSON.parse(block.text),
        );
        expect(summary.offerings, where(block)).toBeGreaterThan(0);
      } catch (error) {
        throw new Error(
          `${where(block)} does not load: ${JSON.stringify((error as { errors?: unknown }).errors ?? String(error))}`,
          {
            cause: error,
          },
        );
      } finally {
        await store.close();
      }
    }
  });

  it('holds every request, response and fragment example to its schema in /openapi.json', () => {
    const problems: string[] = [];
    for (const block of jsonBlocks()) {
      const [, kind, target] = block.info.split(/\s+/);
      if (kind === 'catalog' || kind === 'outside' || target === undefined) continue;
      let schema: object | undefined;
      let value: unknown;
      if (kind === 'request') {
        const operation = Object.values(doc.paths)
          .flatMap((item) => METHODS.map((m) => item[m]))
          .find((o) => o?.operationId === target);
        schema = operation?.requestBody?.content['application/json']?.schema;
        value = JSON.parse(block.text);
      } else if (kind === 'response') {
        schema = doc.components.schemas[target];
        value = JSON.parse(block.text);
      } else {
        // A fragment is some members of an object: each is held to that property of the schema.
        const whole = doc.components.schemas[target] as { properties?: Record<string, object> } | undefined;
        value = JSON.parse(`{${block.text}}`);
        const names = Object.keys(value as object);
        schema =
          whole?.properties === undefined
            ? undefined
            : {
                type: 'object',
                properties: Object.fromEntries(names.map((n) => [n, whole.properties![n] ?? false])),
              };
      }
      if (schema === undefined) {
        problems.push(`${where(block)}: ${kind} ${target} names nothing in /openapi.json`);
        continue;
      }
      for (const problem of problemsOf(resolved(schema, doc.components.schemas) as object, value)) {
        problems.push(`${where(block)}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('has curl commands that name real operations, with bodies and queries their schemas take', () => {
    const problems: string[] = [];
    const curls = blocks
      .filter((b) => ['sh', 'bash', 'shell'].includes(b.info.split(/\s+/)[0] ?? ''))
      .flatMap((b) => curlsOf(b).map((curl) => ({ block: b, curl })));
    expect(curls.length).toBeGreaterThan(0);
    for (const { block, curl } of curls) {
      const found = operationAt(doc, curl.method, curl.url.pathname);
      if (found === undefined) {
        problems.push(`${where(block)}: ${curl.method} ${curl.url.pathname} is no operation of the API`);
        continue;
      }
      const { operation, params } = found;
      const byPart = (part: string) => (operation.parameters ?? []).filter((p) => p.in === part);
      const partSchema = (part: string) => ({
        type: 'object',
        properties: Object.fromEntries(
          byPart(part).map((p) => [p.name, resolved(p.schema, doc.components.schemas)]),
        ),
        additionalProperties: false,
      });
      const query: Record<string, string | string[]> = {};
      for (const [name, value] of curl.url.searchParams) {
        const before = query[name];
        query[name] = before === undefined ? value : [...[before].flat(), value];
      }
      const checks: [string, object, unknown, boolean][] = [
        ['path', partSchema('path'), params, true],
        ['query', partSchema('query'), query, true],
      ];
      const body = operation.requestBody?.content['application/json']?.schema;
      if (curl.body !== undefined || body !== undefined) {
        checks.push([
          'body',
          resolved(body ?? false, doc.components.schemas) as object,
          curl.body ?? null,
          false,
        ]);
      }
      for (const [part, schema, value, asText] of checks) {
        for (const problem of problemsOf(schema, value, asText)) {
          problems.push(`${where(block)}: ${operation.operationId} ${part} ${problem}`);
        }
      }
      const named = catalogNames([params, query, curl.body]);
      for (const id of named.institutions) {
        if (!demo.institutions.has(id))
          problems.push(`${where(block)}: institution ${id} is not in the demo catalog`);
      }
      for (const id of named.offerings) {
        if (!demo.offerings.has(id))
          problems.push(`${where(block)}: offering ${id} is not in the demo catalog`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('names only institutions and offerings of the demo catalog in its request and response examples', () => {
    const strangers = jsonBlocks()
      .filter((b) => /^json (request|response|fragment) /.test(b.info))
      .flatMap((block) => {
        const value: unknown = block.info.startsWith('json fragment')
          ? JSON.parse(`{${block.text}}`)
          : JSON.parse(block.text);
        const named = catalogNames(value);
        return [
          ...[...named.institutions]
            .filter((id) => !demo.institutions.has(id))
            .map((id) => `${where(block)}: ${id}`),
          ...[...named.offerings]
            .filter((id) => !demo.offerings.has(id))
            .map((id) => `${where(block)}: ${id}`),
        ];
      });
    expect(strangers).toEqual([]);
  });

  it('names only refhub addresses that exist', async () => {
    // Absolute paths in backticks; those of the file system (a container's /proc and /app, a data
    // directory) are not addresses.
    const FILE_SYSTEM = /^\/(proc|app|data|etc|usr|var|tmp|run|home)(\/|$)/;
    const missing: string[] = [];
    for (const page of pages) {
      for (const [, address] of page.text.matchAll(/`(\/[a-z][A-Za-z0-9_./{}-]*)`/g)) {
        if (FILE_SYSTEM.test(address!)) continue;
        const url = address!.replace(/\{[^}]+\}/g, '01970a4d-0b1a-7c2d-9e30-0123456789ab');
        const res = await t.app.inject({ method: 'GET', url });
        const body =
          res.headers['content-type']?.includes('json') === true ? res.json<{ code?: string }>() : {};
        // The router's own answer to a path it does not know; a route's 404 (no such referral) is fine.
        // A prefix of routes (`/api/v1`) is an address too.
        const prefix = Object.keys(doc.paths).some((route) => route.startsWith(`${address}/`));
        if (res.statusCode === 404 && body.code === 'not_found' && !prefix) {
          missing.push(`${page.file}: ${address}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('says in the catalog table which fields are required, as the loader does', async () => {
    const page = await fs.readFile(path.join(DOCS, 'catalog.md'), 'utf8');
    const rows = [...page.matchAll(/^\| `([^`]+)`\s*\| (yes|no)\s*\|/gm)].map(([, field, required]) => [
      field!,
      required === 'yes',
    ]);
    expect(rows.length, 'the table has a Required column of yes or no').toBeGreaterThan(0);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(catalogFields(CatalogDocument)));
  });
});
