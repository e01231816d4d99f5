// The conventions of the OpenAPI document that the linters do not check, and its agreement with what
// the API really sends. Shapes are named schemas; every operation has a stable camelCase operationId
// and a declared tag; every POST documents Idempotency-Key and every guarded write If-Match. Then each
// referral route is called for real: the status it answers is documented, its body is valid against
// the documented schema, the headers it sends are declared, and the declared ETag and Location are sent.
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../support/engines.ts';
import { PATIENT } from '../support/fixtures/patients.ts';
import { REFERRAL_ROUTES } from '../support/referral-routes.ts';
import { referralIn } from '../support/scenarios.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

interface Parameter {
  name: string;
  in: string;
  schema?: { type?: string; items?: { enum?: unknown[] } };
}
interface Response {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: unknown }>;
}
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  responses: Record<string, Response>;
}
interface Document {
  tags?: { name: string; description?: string }[];
  paths: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>;
  components: { schemas: Record<string, Record<string, unknown>> };
}

function operationsOf(doc: Document): { method: string; path: string; operation: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = item[method];
      return operation ? [{ method: method.toUpperCase(), path, operation }] : [];
    }),
  );
}

function schemaRef(response: Response | undefined): unknown {
  return Object.values(response?.content ?? {})[0]?.schema;
}

/** The headers refhub sends on API responses that a client may read; each must be declared where sent. */
const API_HEADERS = [
  'etag',
  'location',
  'api-version',
  'x-request-id',
  'ratelimit-policy',
  'ratelimit',
  'retry-after',
  'idempotent-replayed',
];

describe('OpenAPI conventions', () => {
  let t: TestApp;
  let doc: Document;
  beforeAll(async () => {
    t = await createTestApp('pglite');
    doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  });
  afterAll(async () => {
    await t.close();
  });

  it('names the shapes clients need under components.schemas, and the operations use them', () => {
    for (const name of [
      'Referral',
      'ReferralSummary',
      'ReferralPage',
      'PageMetadata',
      'Problem',
      'FieldError',
      'Note',
      'LinkUpsertResponse',
      'EhrSubmissionList',
      'Institution',
      'Offering',
      'Patient',
      'Appointment',
      'TimelineEvent',
    ]) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
    const of = (path: string, method: 'get' | 'post' | 'delete', code: string) =>
      schemaRef(doc.paths[`/api/v1${path}`]?.[method]?.responses[code]);
    const named = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    expect(of('/referrals/{referralId}', 'get', '200')).toEqual(named('Referral'));
    expect(of('/referrals', 'post', '201')).toEqual(named('Referral'));
    expect(of('/referrals/{referralId}/cancel', 'post', '200')).toEqual(named('ReferralSummary'));
    expect(of('/referrals/{referralId}', 'delete', '200')).toEqual(named('ReferralSummary'));
    expect(of('/referrals/{referralId}/notes', 'post', '201')).toEqual(named('Note'));
    expect(of('/links/upsert', 'post', '200')).toEqual(named('LinkUpsertResponse'));
    expect(of('/institutions/{institutionIdType}/{institutionId}/referrals', 'get', '200')).toEqual(
      named('ReferralPage'),
    );
    for (const { operation } of operationsOf(doc)) {
      for (const code of ['4XX', '429', '5XX']) {
        expect(schemaRef(operation.responses[code]), `${operation.operationId} ${code}`).toEqual(
          named('Problem'),
        );
      }
    }
  });

  it('gives every operation a unique camelCase operationId, a summary, a description and one declared tag', () => {
    const declared = new Map((doc.tags ?? []).map((tag) => [tag.name, tag.description]));
    const ids = new Set<string>();
    for (const { method, path, operation } of operationsOf(doc)) {
      const where = `${method} ${path}`;
      expect(operation.operationId, where).toMatch(/^[a-z][A-Za-z]*$/);
      expect(ids.has(operation.operationId!), where).toBe(false);
      ids.add(operation.operationId!);
      expect(operation.summary, where).toBeTruthy();
      expect(operation.description, where).toBeTruthy();
      expect(operation.tags, where).toHaveLength(1);
      expect(declared.get(operation.tags![0]!), where).toBeTruthy();
    }
  });

  it('declares Idempotency-Key on every POST, If-Match on every change to a referral, neither on reads', () => {
    for (const { method, path, operation } of operationsOf(doc)) {
      const where = `${method} ${path}`;
      const headers = (operation.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
      expect(headers.includes('Idempotency-Key'), where).toBe(method === 'POST');
      const changesReferral =
        method !== 'GET' && path.startsWith('/api/v1/referrals/{referralId}') && !path.endsWith('/search');
      if (changesReferral) expect(headers, where).toContain('If-Match');
      if (method === 'GET') expect(headers, where).toEqual([]);
      // A POST may answer with a replay, success or refusal alike; a 5xx is never kept to replay.
      for (const [code, response] of Object.entries(operation.responses)) {
        const replayable = method === 'POST' && code !== '429' && !code.startsWith('5');
        expect(Object.keys(response.headers ?? {}).includes('Idempotent-Replayed'), `${where} ${code}`).toBe(
          replayable,
        );
        expect(response.headers, `${where} ${code}`).toHaveProperty('API-Version');
        expect(response.headers, `${where} ${code}`).toHaveProperty('X-Request-Id');
      }
      expect(Object.keys(operation.responses['429']?.headers ?? {}), where).toEqual(
        expect.arrayContaining(['Retry-After', 'RateLimit-Policy', 'RateLimit']),
      );
    }
  });

  it('types every timestamp as date-time', () => {
    const timestamps: string[] = [];
    const visit = (node: unknown, name: string) => {
      if (Array.isArray(node)) for (const item of node) visit(item, name);
      else if (node !== null && typeof node === 'object') {
        const properties = (node as { properties?: Record<string, unknown> }).properties ?? {};
        for (const [property, schema] of Object.entries(properties)) {
          if (/At$/.test(property)) {
            timestamps.push(`${name}.${property}`);
            expect(schema, `${name}.${property}`).toMatchObject({ type: 'string', format: 'date-time' });
          }
        }
        for (const value of Object.values(node)) visit(value, name);
      }
    };
    for (const [name, schema] of Object.entries(doc.components.schemas)) visit(schema, name);
    expect(timestamps).toEqual(
      expect.arrayContaining(['Referral.submittedAt', 'Note.createdAt', 'LinkUpsertResponse.expiresAt']),
    );
  });

  it('documents additionalField as a list of ehrForm, while the API still takes it comma-separated', async () => {
    const parameter = doc.paths['/api/v1/referrals/{referralId}']!.get!.parameters!.find(
      (p) => p.name === 'additionalField',
    );
    expect(parameter?.schema).toMatchObject({ type: 'array', items: { enum: ['ehrForm'] } });
    const draft = await referralIn(t, 'draft');
    const url = `/api/v1/referrals/${draft.id}?${new URLSearchParams({
      ...t.sender.institution,
      requesterIdentifier: 'dr.lim@example.org',
      additionalField: 'ehrForm,ehrForm',
    }).toString()}`;
    const res = await t.request(t.sender, { method: 'GET', url });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<{ ehrForm?: string }>().ehrForm).toMatch(/^<!DOCTYPE html>/i);
  });
});

describe.each(APP_ENGINES)('the document matches what the API sends, on %s', (engine) => {
  let t: TestApp;
  let doc: Document;
  let ajv: Ajv;
  beforeAll(async () => {
    t = await createTestApp(engine);
    doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    ajv = new Ajv({ strict: false, allErrors: true });
    formats.default(ajv);
    // References point into the document, so the document is the schema they resolve against.
    ajv.addSchema({ components: doc.components }, 'openapi.json');
  });
  afterAll(async () => {
    await t.close();
  });

  function validator(schema: unknown) {
    const anchored = JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/');
    return ajv.compile(JSON.parse(anchored) as object);
  }

  function documented(method: string, url: string): { path: string; operation: Operation } {
    const pathname = new URL(url, 'http://refhub.test').pathname;
    for (const { method: m, path, operation } of operationsOf(doc)) {
      const pattern = new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}$`);
      if (m === method && pattern.test(pathname)) return { path, operation };
    }
    throw new Error(`${method} ${pathname} is not documented`);
  }

  it.each(REFERRAL_ROUTES.map((route) => [route.name, route] as const))('%s', async (_name, route) => {
    const referral = await referralIn(t, route.status, { ...PATIENT });
    const party = route.owner === 'sender' ? t.sender : t.provider;
    const request = route.request(referral.id, party, { 'idempotency-key': `conventions-${referral.id}` });
    const method = String(request.method);
    const { path, operation } = documented(method, request.url);
    const where = `${method} ${path}`;
    const res = await t.request(party, request);
    expect(res.statusCode, `${where}: ${res.body}`).toBeLessThan(300);

    const response = operation.responses[String(res.statusCode)];
    expect(response, `${where} ${res.statusCode} is documented`).toBeDefined();
    const [mediaType, media] = Object.entries(response!.content ?? {})[0]!;
    expect(String(res.headers['content-type'])).toContain(mediaType);
    const validate = validator(media.schema);
    expect(validate(res.json()), `${where}: ${JSON.stringify(validate.errors)}`).toBe(true);

    const declared = Object.keys(response!.headers ?? {}).map((h) => h.toLowerCase());
    for (const header of API_HEADERS.filter((h) => res.headers[h] !== undefined)) {
      expect(declared, `${where} sends ${header}`).toContain(header);
    }
    for (const header of declared.filter((h) => h === 'etag' || h === 'location')) {
      expect(res.headers[header], `${where} declares ${header}`).toBeDefined();
    }
    if (route.ifMatch) {
      expect(
        operation.parameters?.map((p) => p.name),
        where,
      ).toContain('If-Match');
    }

    if (method === 'POST') {
      // The replay of the same request is documented the same way.
      const replay = await t.request(party, request);
      expect(replay.headers['idempotent-replayed'], where).toBe('true');
      expect(declared, where).toContain('idempotent-replayed');
    }

    // A refusal is documented too: the same request for a referral that does not exist.
    const missing = route.request('01890a5d-ac96-774b-bcce-b302099a8057', party);
    const refused = await t.request(party, missing);
    expect(refused.statusCode).toBe(404);
    const problem = operation.responses['4XX']!;
    expect(String(refused.headers['content-type'])).toContain('application/problem+json');
    const validateProblem = validator(problem.content!['application/problem+json']!.schema);
    expect(validateProblem(refused.json()), JSON.stringify(validateProblem.errors)).toBe(true);
    const declaredProblem = Object.keys(problem.headers ?? {}).map((h) => h.toLowerCase());
    for (const header of API_HEADERS.filter((h) => refused.headers[h] !== undefined)) {
      expect(declaredProblem, `${where} 404 sends ${header}`).toContain(header);
    }
  });
});
