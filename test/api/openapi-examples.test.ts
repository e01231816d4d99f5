// Every operation of the OpenAPI document gives an example of its request body and of each of its
// parameters, and each example is one refhub takes: it passes its own schema under the API's own
// validator settings, and sent as a request to an installation set up as `npm start` sets one up (the
// demo catalog and the demo keys), it is not turned away for its input or for the institution it
// names. The docs page fills "Try it out" with these examples.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withExamples } from '../../src/api/schemas/examples.ts';
import { createApiApp } from '../../src/composition/api-app.ts';
import { createContext, type AppContext } from '../../src/composition/context.ts';
import { setUpDemo } from '../../src/composition/demo-setup.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { createRequestSchemaCompiler } from '../../src/services/referrals/fields.ts';
import { openTestStore } from '../support/engines.ts';
import { resolved } from '../support/openapi-references.ts';
import {
  bodyMedia,
  examplesOf,
  exampleRequest,
  institutionOf,
  operationsOf,
  type Document,
  type Found,
  type Operation,
} from '../support/openapi-operations.ts';

/** What an operation's document lacks: `body` and the parameters without an example. */
function missingExamples(operation: Operation): string[] {
  const missing = (operation.parameters ?? [])
    .filter((p) => examplesOf(p).length === 0)
    .map((p) => `${p.in} ${p.name}`);
  const body = bodyMedia(operation);
  if (operation.requestBody !== undefined && examplesOf(body).length === 0) missing.push('body');
  return missing;
}

/** Every example the document gives, with the schema it must pass and how that part is validated. */
function examplesToCheck(doc: Document, { operation }: Found) {
  const checks: { where: string; schema: object; value: unknown; typed: boolean }[] = [];
  for (const parameter of operation.parameters ?? []) {
    for (const value of examplesOf(parameter)) {
      checks.push({
        where: `${parameter.in} ${parameter.name}`,
        // As the API validates a parameter: one property of its part, coerced from text.
        schema: {
          type: 'object',
          properties: { [parameter.name]: resolved(parameter.schema, doc.components.schemas) },
          required: [parameter.name],
        },
        value: { [parameter.name]: value },
        typed: false,
      });
    }
  }
  const body = bodyMedia(operation);
  for (const value of examplesOf(body)) {
    checks.push({
      where: 'body',
      schema: resolved(body!.schema, doc.components.schemas) as object,
      value,
      typed: true,
    });
  }
  return checks;
}

const typedBodies = createRequestSchemaCompiler(false);
const textParts = createRequestSchemaCompiler('array');

/** The problems of one example under the API's validator, or [] when it passes. */
function refusals(check: { schema: object; value: unknown; typed: boolean }): string[] {
  const validate = (check.typed ? typedBodies : textParts)(check.schema);
  // The text validator coerces in place; the document's example stays as it is.
  if (validate(structuredClone(check.value))) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`);
}

describe('OpenAPI examples', () => {
  let ctx: AppContext;
  let app: FastifyInstance;
  let dataDir: string;
  let doc: Document;
  /** The demo keys by the institution they act for, as `npm start` creates them. */
  const demoKeys = new Map<string, string>();

  beforeAll(async () => {
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'refhub-examples-'));
    const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'warn', PUBLIC_URL: 'http://refhub.test' });
    const quiet = new Writable({
      write: (_chunk, _encoding, done) => {
        done();
      },
    });
    ctx = await createContext(config, 'test', {
      store: await openTestStore('pglite'),
      logger: createLogger(config, quiet),
    });
    const demo = await setUpDemo(ctx.db, { dataDir, engine: 'pglite', installationId: 'examples' });
    for (const key of demo?.keys ?? []) {
      const institution = /\(hci:(\w+)\)/.exec(key.description)?.[1];
      if (institution !== undefined) demoKeys.set(institution, key.key);
    }
    app = await createApiApp(ctx);
    await app.ready();
    doc = app.swagger() as unknown as Document;
    // A whole app on embedded PGlite starts slowly on a loaded 2-core machine.
  }, 180_000);
  afterAll(async () => {
    await app.close();
    await ctx.close();
    await fs.rm(dataDir, { recursive: true, force: true });
  });

  it('gives every operation an example body and an example of each parameter', () => {
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThan(20);
    const lacking = operations
      .map(({ method, path: route, operation }) => ({
        operation: `${method} ${route} (${operation.operationId})`,
        missing: missingExamples(operation),
      }))
      .filter((o) => o.missing.length > 0);
    expect(lacking).toEqual([]);
  });

  it('gives examples that pass their own schemas under the API validator', () => {
    const refused = operationsOf(doc).flatMap((found) =>
      examplesToCheck(doc, found).flatMap((check) => {
        const problems = refusals(check);
        return problems.length === 0
          ? []
          : [`${found.operation.operationId} ${check.where}: ${problems.join('; ')}`];
      }),
    );
    expect(refused).toEqual([]);
  });

  it('gives example requests that the demo installation takes from its demo keys', async () => {
    expect([...demoKeys.keys()].sort()).toEqual(['S1234A', 'S9001Z']);
    const turnedAway: string[] = [];
    for (const found of operationsOf(doc)) {
      const request = exampleRequest(found);
      const institution = institutionOf(request);
      const key = institution === undefined ? undefined : demoKeys.get(institution);
      if (key === undefined) {
        turnedAway.push(`${found.operation.operationId}: names ${institution}, no demo key acts for it`);
        continue;
      }
      const res = await app.inject({
        ...request,
        headers: { ...request.headers, authorization: `ApiKey ${key}` },
      });
      // A referral or a subscription the example names may not exist (404), and a referral may not be
      // in the status an operation needs (409, 412): those answers are the installation's state, not
      // a refusal of the example. Refusing its input, its key or its institution is.
      if ([400, 401, 403, 415, 422].includes(res.statusCode) || res.statusCode >= 500) {
        turnedAway.push(`${found.operation.operationId}: ${res.statusCode} ${res.body}`);
      }
    }
    expect(turnedAway).toEqual([]);
  });

  it('the checks see an operation without examples and an example its schema refuses', () => {
    // The three checks above prove nothing if they cannot fail.
    const found = operationsOf(doc).find((o) => o.operation.operationId === 'createReferral')!;
    const bare = structuredClone(found.operation);
    delete bare.requestBody!.content['application/json']!.example;
    for (const p of bare.parameters ?? []) delete p.example;
    expect(missingExamples(bare)).toEqual(['header Idempotency-Key', 'body']);

    const wrong = structuredClone(found.operation);
    (wrong.requestBody!.content['application/json']!.example as Record<string, unknown>).dob = 'yesterday';
    const [check] = examplesToCheck(doc, { ...found, operation: wrong }).filter((c) => c.where === 'body');
    expect(refusals(check!).join()).toMatch(/dob/);
  });

  it('adds examples to the document only, never to the schemas the API validates with', () => {
    const schema = { operationId: 'createReferral', body: { type: 'object', properties: {} } };
    const documented = withExamples(schema);
    expect(documented.body).toHaveProperty('examples');
    expect(schema.body).not.toHaveProperty('examples');
  });
});
