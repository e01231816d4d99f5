// The OpenAPI document (contract §11) is generated from the route schemas, so it cannot drift from
// the code: its operations are exactly the registered API routes, each documents its responses, the
// deprecated `status` is marked, and the description carries the interface's changelog. The shapes
// are named schemas under components.schemas; the checks on shapes read the document with its
// references resolved, as a client does.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, CHANGELOG } from '../../src/api/openapi.ts';
import { STATUSES } from '../../src/domain/statuses.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const API_PREFIX = '/api/v1';
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

interface Operation {
  summary?: string;
  tags?: string[];
  parameters?: { name: string; in: string }[];
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: unknown }> }>;
}
interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  paths: Record<string, Partial<Record<(typeof HTTP_METHODS)[number], Operation>>>;
  components?: { schemas?: Record<string, unknown> };
}

/**
 * Every route the app registered, as `METHOD /path`, read from Fastify's route tree. With
 * `commonPrefix: false` each line is one node: its indentation gives its depth, and its path is
 * its parent's path followed by its own segment.
 */
function registeredRoutes(app: FastifyInstance): string[] {
  const routes: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const node = /^((?:[│ ] {3})*)[├└]── (\S*)(?: \(([A-Z, ]+)\))?$/u.exec(line);
    if (!node) {
      expect(line.trim(), `unparsed route line: ${line}`).toBe('');
      continue;
    }
    const depth = node[1]!.length / 4;
    stack.length = depth;
    const full = stack.join('') + node[2]!;
    stack.push(node[2]!);
    for (const method of node[3]?.split(', ') ?? []) routes.push(`${method} ${full}`);
  }
  return routes;
}

function operationsOf(doc: OpenApiDocument): [string, string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    HTTP_METHODS.flatMap((method) => {
      const operation = item[method];
      return operation ? [[method.toUpperCase(), path, operation] as [string, string, Operation]] : [];
    }),
  );
}

/** The document with every `#/components/schemas/…` reference replaced by the schema it names. */
function resolveReferences(node: unknown, schemas: Record<string, unknown>): unknown {
  if (Array.isArray(node)) return node.map((item) => resolveReferences(item, schemas));
  if (node === null || typeof node !== 'object') return node;
  const reference = (node as { $ref?: unknown }).$ref;
  if (typeof reference === 'string') {
    const name = reference.replace('#/components/schemas/', '');
    expect(schemas[name], reference).toBeDefined();
    return resolveReferences(schemas[name], schemas);
  }
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [key, resolveReferences(value, schemas)]),
  );
}

/** Every object schema in the document that has both `status` and `coreStatus`: the referral shapes. */
function referralSchemas(node: unknown, found: Record<string, Record<string, unknown>>[] = []) {
  if (Array.isArray(node)) for (const item of node) referralSchemas(item, found);
  else if (node !== null && typeof node === 'object') {
    const properties = (node as { properties?: Record<string, Record<string, unknown>> }).properties;
    if (properties?.status !== undefined && properties.coreStatus !== undefined) found.push(properties);
    for (const value of Object.values(node)) referralSchemas(value, found);
  }
  return found;
}

describe('OpenAPI document', () => {
  let t: TestApp;
  /** The document as served. */
  let served: OpenApiDocument;
  /** The same, with its references resolved. */
  let doc: OpenApiDocument;
  beforeAll(async () => {
    t = await createTestApp('pglite');
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['api-version']).toBe(API_VERSION);
    served = res.json();
    doc = {
      ...served,
      paths: resolveReferences(served.paths, served.components?.schemas ?? {}),
    } as OpenApiDocument;
  });
  afterAll(async () => {
    await t.close();
  });

  it('is OpenAPI 3.1 for this API version, needing no key to read', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.version).toBe(API_VERSION);
    expect(doc.info.title).toMatch(/refhub/);
  });

  it('documents exactly the registered API routes', () => {
    const documented = operationsOf(doc)
      .map(([method, path]) => `${method} ${path.replace(/\{(\w+)\}/g, ':$1')}`)
      .sort();
    const registered = registeredRoutes(t.app);
    // The parser above is checked against Fastify itself, so a format change cannot pass silently.
    expect(registered.length).toBeGreaterThan(10);
    // (HEAD and the docs' wildcard are Fastify's and the docs plugin's own; hasRoute skips them.)
    for (const route of registered.filter((r) => !r.startsWith('HEAD ') && !r.endsWith('*'))) {
      const [method, url] = route.split(' ') as [string, string];
      expect(t.app.hasRoute({ method, url }), route).toBe(true);
    }
    expect(registered).toContain('GET /healthz');
    const api = registered
      .filter((r) => r.split(' ')[1]!.startsWith(`${API_PREFIX}/`))
      // Fastify answers HEAD for every GET by itself; it is not an operation of its own.
      .filter((r) => !r.startsWith('HEAD '))
      .sort();
    expect(documented).toEqual(api);
    expect(new Set(documented).size).toBe(documented.length);
    // Health checks, docs and the document itself stay out of it.
    for (const path of Object.keys(doc.paths)) expect(path.startsWith(`${API_PREFIX}/`), path).toBe(true);
  });

  it('covers the seven operations of the spec and the provider operations', () => {
    const documented = new Set(operationsOf(doc).map(([method, path]) => `${method} ${path}`));
    for (const operation of [
      'GET /api/v1/institutions/{institutionIdType}/{institutionId}/referrals',
      'GET /api/v1/referrals/{referralId}',
      'DELETE /api/v1/referrals/{referralId}',
      'POST /api/v1/referrals/{referralId}/cancel',
      'POST /api/v1/referrals/{referralId}/back-to-draft',
      'POST /api/v1/referrals/{referralId}/notes',
      'POST /api/v1/links/upsert',
      'POST /api/v1/referrals',
      'PATCH /api/v1/referrals/{referralId}',
      'POST /api/v1/referrals/{referralId}/submit',
      'POST /api/v1/referrals/{referralId}/accept',
      'POST /api/v1/referrals/{referralId}/reject',
      'POST /api/v1/referrals/{referralId}/request-action',
      'PUT /api/v1/referrals/{referralId}/appointments/{appointmentId}',
    ]) {
      expect(documented.has(operation), operation).toBe(true);
    }
  });

  it('documents the responses of every operation: success with a schema, and problem+json errors', () => {
    for (const [method, path, operation] of operationsOf(doc)) {
      const where = `${method} ${path}`;
      expect(operation.summary, where).toBeTruthy();
      const responses = operation.responses ?? {};
      const success = Object.keys(responses).filter((code) => /^2/.test(code));
      expect(success, where).toHaveLength(1);
      const ok = responses[success[0]!]!;
      expect(ok.description, where).toBeTruthy();
      if (success[0] !== '204') {
        // JSON, FHIR's JSON for the FHIR view, or a file's bytes for an attachment's content.
        const body =
          ok.content?.['application/json'] ??
          ok.content?.['application/fhir+json'] ??
          ok.content?.['application/octet-stream'];
        expect(body?.schema, where).toBeDefined();
        if (ok.content?.['application/octet-stream'] !== undefined) {
          expect(body?.schema, where).toEqual({ type: 'string', format: 'binary' });
        }
      }
      for (const errors of ['4XX', '5XX']) {
        const problem = Object.entries(responses).find(([code]) => code.toUpperCase() === errors)?.[1];
        expect(problem, `${where} ${errors}`).toBeDefined();
        const schema = Object.values(problem!.content ?? {})[0]?.schema as
          { properties?: Record<string, unknown> } | undefined;
        expect(Object.keys(schema?.properties ?? {}), `${where} ${errors}`).toEqual(
          expect.arrayContaining(['type', 'title', 'status', 'detail', 'code', 'requestId']),
        );
      }
      // Every path parameter is declared.
      for (const [, name] of path.matchAll(/\{(\w+)\}/g)) {
        expect(
          operation.parameters?.some((p) => p.in === 'path' && p.name === name),
          `${where} ${name}`,
        ).toBe(true);
      }
    }
  });

  it('describes the FHIR view as a Bundle served as application/fhir+json', () => {
    const operation: (Operation & { operationId?: string; description?: string }) | undefined =
      doc.paths['/api/v1/referrals/{referralId}/fhir']?.get;
    expect(operation?.operationId).toBe('getReferralFhir');
    expect(operation?.tags).toEqual(['Referrals']);
    expect(operation?.description).toBeTruthy();
    const content = operation?.responses?.['200']?.content;
    expect(Object.keys(content ?? {})).toEqual(['application/fhir+json']);
    expect(content?.['application/fhir+json']?.schema).toMatchObject({
      properties: { resourceType: { enum: ['Bundle'] }, type: { enum: ['collection'] } },
    });
    expect(operation?.parameters?.map((p) => `${p.in} ${p.name}`).sort()).toEqual([
      'path referralId',
      'query institutionId',
      'query institutionIdType',
      'query requesterIdentifier',
    ]);
  });

  it('marks status as deprecated in every referral shape, and only there', () => {
    const shapes = referralSchemas(doc);
    // The list, the full referral and the summaries that delete, cancel and back-to-draft return.
    expect(shapes.length).toBeGreaterThanOrEqual(5);
    for (const properties of shapes) {
      expect(properties.status).toMatchObject({ deprecated: true });
      expect(properties.status!.enum ?? properties.status!.anyOf).toBeDefined();
      expect(JSON.stringify(properties.status)).toContain('pending-acceptance');
      expect(properties.coreStatus!.deprecated).toBeUndefined();
    }
    // The get operation's 200 is one of them.
    const get = doc.paths['/api/v1/referrals/{referralId}']?.get;
    const body = get?.responses?.['200']?.content?.['application/json']?.schema;
    expect(referralSchemas(body)).toHaveLength(1);
    expect(JSON.stringify(body)).toContain('"deprecated":true');
    for (const status of STATUSES) expect(JSON.stringify(referralSchemas(body)[0]!.status)).toContain(status);
  });

  it('carries the changelog from v0.0.71 back to v0.0.66 in its description', () => {
    const description = doc.info.description;
    expect(description).toMatch(/## Changelog/);
    const releases = ['v0.0.71', 'v0.0.70', 'v0.0.69', 'v0.0.68', 'v0.0.67', 'v0.0.66'];
    const positions = releases.map((release) => description.indexOf(`| ${release} |`));
    for (const [i, position] of positions.entries()) expect(position, releases[i]).toBeGreaterThan(-1);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    for (const [release, change] of CHANGELOG) expect(description).toContain(`| ${release} | ${change} |`);
    expect(description).toContain('status deprecated');
    expect(description).toContain('patient.isHsgEnrolled removed');
    expect(description).toContain('referral.provider-patient-create-reminder-sent');
  });

  it('serves the docs UI as HTML without a key', async () => {
    let res = await t.app.inject({ method: 'GET', url: '/docs' });
    for (let hops = 0; res.statusCode >= 300 && res.statusCode < 400 && hops < 3; hops++) {
      const location = new URL(String(res.headers.location), 'http://refhub.test/docs');
      res = await t.app.inject({ method: 'GET', url: location.pathname });
    }
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/<html/i);
    expect(res.body).toMatch(/swagger/i);
    // The UI reads the same document, at its one address (test/api/docs-page.test.ts).
    const json = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(json.statusCode).toBe(301);
    expect(json.headers.location).toBe('/openapi.json');
  });
});
