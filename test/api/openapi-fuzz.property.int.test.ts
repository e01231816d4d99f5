// Arbitrary requests, derived from the OpenAPI document the app serves (so a new operation or field
// is fuzzed without anyone adding it here), sent against real referrals in every state: no answer is
// a 5xx, and every 4xx is problem+json. Values are mostly valid, so requests get past the schema and
// reach the store, with text full of NULs, unpaired surrogates, whitespace and odd code points,
// dates and instants at and beyond every edge, and extreme numbers.
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Status } from '../../src/domain/statuses.ts';
import { APP_ENGINES } from '../support/engines.ts';
import { referralIn } from '../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../support/test-app.ts';

const RUNS_PER_ENGINE = 300;
const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

type Schema = Readonly<Record<string, unknown>>;

interface Parameter {
  readonly name: string;
  readonly in: string;
  readonly required?: boolean;
  readonly schema: Schema;
}

interface Operation {
  readonly method: Uppercase<(typeof HTTP_METHODS)[number]>;
  readonly path: string;
  readonly tags: readonly string[];
  readonly parameters: readonly Parameter[];
  readonly body: Schema | undefined;
}

interface OpenApiDocument {
  readonly paths: Record<
    string,
    Partial<
      Record<
        (typeof HTTP_METHODS)[number],
        {
          tags?: string[];
          parameters?: Parameter[];
          requestBody?: { content?: Record<string, { schema?: Schema }> };
        }
      >
    >
  >;
}

function operationsOf(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    HTTP_METHODS.flatMap((method) => {
      const op = item[method];
      if (op === undefined || !path.startsWith('/api/v1/')) return [];
      return [
        {
          method: method.toUpperCase() as Operation['method'],
          path,
          tags: op.tags ?? [],
          parameters: op.parameters ?? [],
          body: op.requestBody?.content?.['application/json']?.schema,
        },
      ];
    }),
  );
}

// --- Values ------------------------------------------------------------------------------------

/** Characters that have broken services before: NUL, unpaired surrogates, whitespace, quoting. */
const nastyChar = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '\u0000',
      '\ud800',
      '\udbff',
      '\udc00',
      '\udfff',
      ' ',
      '\t',
      '\n',
      '\r',
      '\u00a0',
      '\u2028',
      '\u3000',
      '\ufeff',
      '\uffff',
      '\\',
      '"',
      "'",
      '%',
      '<',
      '😷',
      'é',
    ),
  },
  // Any code point, the surrogate range included, where fromCodePoint leaves a surrogate unpaired.
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c)) },
  { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 1 }) },
);

function nastyText(maxLength: number | undefined): fc.Arbitrary<string> {
  const limit = maxLength ?? 64;
  return fc.oneof(
    { weight: 6, arbitrary: fc.string({ unit: nastyChar, maxLength: Math.min(limit, 24) }) },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', '   ', '\t\n', '\u00a0') },
    { weight: 1, arbitrary: fc.constant('x'.repeat(limit + 1)) },
  );
}

const YEAR_MS = 365.25 * 24 * 3600_000;

const extremeDate = fc.oneof(
  fc.constantFrom(
    '0000-01-01',
    '0001-01-01',
    '1800-01-01',
    '1899-12-31',
    '1900-01-01',
    '2023-02-29',
    '2024-02-29',
    '2999-01-01',
    '9999-12-31',
  ),
  fc
    .date({
      min: new Date('0001-01-01T00:00:00Z'),
      max: new Date('9999-12-31T00:00:00Z'),
      noInvalidDate: true,
    })
    .map((d) => d.toISOString().slice(0, 10)),
  fc
    .tuple(
      fc.integer({ min: 0, max: 9999 }),
      fc.integer({ min: 0, max: 13 }),
      fc.integer({ min: 0, max: 32 }),
    )
    .map(
      ([y, m, d]) =>
        `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`,
    ),
);

const offset = fc.oneof(
  fc.constant('Z'),
  fc.constant('z'),
  fc
    .tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 }))
    .map(([sign, h, m]) => `${sign}${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`),
  fc.constantFrom('+08', '+0800', ''),
);

const extremeInstant = fc.oneof(
  fc.constantFrom(
    '0000-01-01T00:00:00Z',
    '0001-01-01T00:00:00Z',
    '2026-12-31T23:59:60Z',
    '2026-06-30T23:59:60+00:00',
    '9999-12-31T23:59:59-23:59',
    '+275760-09-13T00:00:00.000Z',
    '-271821-04-20T00:00:00.000Z',
    '2026-01-01 00:00:00Z',
  ),
  // Every instant Date holds, written as toISOString writes it (six-digit years included).
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  // Near the appointment window's edges, with any offset.
  fc
    .tuple(fc.double({ min: -6, max: 6, noNaN: true }), offset)
    .map(([years, zone]) => new Date(Date.now() + years * YEAR_MS).toISOString().slice(0, 19) + zone),
);

const extremeNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, -1, 1.5, 1e-300, 1e308, -1e308, 2 ** 31, 2 ** 53, 2 ** 53 + 2, 10 ** 21),
);

/** `value` in about `percent` % of cases, else undefined. */
function sometimes<T>(value: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> {
  return fc.oneof(
    { weight: 100 - percent, arbitrary: fc.constant(undefined) },
    { weight: percent, arbitrary: value },
  );
}

interface Pool {
  readonly referralIds: readonly string[];
  readonly institution: TestParty['institution'];
}

/** A value for `schema`: mostly one the schema allows, sometimes one right at or past its edges. */
function valueFor(schema: Schema, pool: Pool, name = ''): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 30, arbitrary: typedValueFor(schema, pool, name) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  );
}

function typedValueFor(schema: Schema, pool: Pool, name: string): fc.Arbitrary<unknown> {
  if (name === 'institutionIdType' || name === 'institutionId') {
    return fc.oneof(
      { weight: 30, arbitrary: fc.constant(pool.institution[name]) },
      { weight: 1, arbitrary: stringFor(schema, pool) },
    );
  }
  if (name === 'offeringId') {
    return fc.oneof(fc.constantFrom('cgh-gastro', 'cgh-cardio', null), stringFor(schema, pool));
  }
  if (Array.isArray(schema.enum)) {
    return fc.oneof(
      { weight: 20, arbitrary: fc.constantFrom(...(schema.enum as unknown[])) },
      { weight: 1, arbitrary: nastyText(32) },
    );
  }
  if (Array.isArray(schema.anyOf)) {
    return fc.oneof(...(schema.anyOf as Schema[]).map((s) => typedValueFor(s, pool, name)));
  }
  switch (schema.type) {
    case 'string':
      return stringFor(schema, pool);
    case 'integer':
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : -1_000_000;
      const max = typeof schema.maximum === 'number' ? schema.maximum : 1_000_000;
      return fc.oneof(
        { weight: 3, arbitrary: fc.integer({ min, max }) },
        { weight: 1, arbitrary: extremeNumber },
      );
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = (schema.items ?? {}) as Schema;
      const maxItems = typeof schema.maxItems === 'number' ? schema.maxItems : 4;
      return fc.array(typedValueFor(items, pool, name), { maxLength: Math.min(maxItems + 1, 5) });
    }
    case 'object':
      return objectFor(schema, pool);
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

function stringFor(schema: Schema, pool: Pool): fc.Arbitrary<string> {
  const maxLength = typeof schema.maxLength === 'number' ? schema.maxLength : undefined;
  const valid = (() => {
    switch (schema.format) {
      case 'uuid':
        return fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(...pool.referralIds) },
          { weight: 1, arbitrary: fc.uuid() },
        );
      case 'date':
        return extremeDate;
      case 'date-time':
        return extremeInstant;
      case 'email':
        return fc.emailAddress();
    }
    if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern));
    const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
    return fc.string({ minLength, maxLength: Math.min(maxLength ?? 64, 64) });
  })();
  return fc.oneof({ weight: 8, arbitrary: valid }, { weight: 1, arbitrary: nastyText(maxLength) });
}

function objectFor(schema: Schema, pool: Pool): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set((schema.required ?? []) as string[]);
  const fields = Object.fromEntries(
    Object.entries(properties).map(([name, s]) => [
      name,
      required.has(name)
        ? // A required field is sometimes left out.
          sometimes(valueFor(s, pool, name), 98)
        : sometimes(valueFor(s, pool, name), 50),
    ]),
  );
  return fc
    .tuple(fc.record(fields), sometimes(fc.tuple(nastyText(16), fc.jsonValue({ maxDepth: 1 })), 3))
    .map(([record, extra]) => {
      const out = Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined));
      if (extra !== undefined) out[extra[0]] = extra[1];
      return out;
    });
}

// --- Requests ----------------------------------------------------------------------------------

/** Percent-encodes the UTF-8 bytes of `text`, as a client would put it in a URL. */
function percentEncoded(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9._~-]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).padStart(2, '0').toUpperCase()}`,
    )
    .join('');
}

function textOf(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

interface FuzzRequest {
  readonly asProvider: boolean;
  /** `METHOD url`, to name the request when it fails. */
  readonly line: string;
  readonly options: InjectOptions;
}

function requestFor(operation: Operation, pool: (asProvider: boolean) => Pool): fc.Arbitrary<FuzzRequest> {
  const providerRoute = operation.tags.includes('Provider');
  return fc
    .oneof(
      { weight: 6, arbitrary: fc.constant(providerRoute) },
      { weight: 1, arbitrary: fc.constant(!providerRoute) },
    )
    .chain((asProvider) => {
      const p = pool(asProvider);
      const parameter = (where: string) =>
        operation.parameters
          .filter((param) => param.in === where)
          .map((param) => ({
            name: param.name,
            value:
              where === 'path'
                ? typedValueFor(param.schema, p, param.name)
                : sometimes(valueFor(param.schema, p, param.name), param.required === true ? 98 : 50),
          }));
      const path = parameter('path');
      const query = parameter('query');
      const body =
        operation.body === undefined
          ? fc.constant(undefined)
          : fc.oneof(
              { weight: 30, arbitrary: objectFor(operation.body, p).map((b) => JSON.stringify(b)) },
              { weight: 1, arbitrary: nastyText(64) },
            );
      const rarely = <T>(value: fc.Arbitrary<T>) => sometimes(value, 10);
      const headers = fc.record({
        'if-match': rarely(
          fc.oneof(fc.constantFrom('"1"', '"2"', '*', 'W/"3"'), fc.string({ maxLength: 12 })),
        ),
        'idempotency-key': rarely(fc.string({ minLength: 1, maxLength: 40 })),
        'x-request-id': rarely(fc.string({ maxLength: 40 })),
      });
      return fc
        .record({
          path: fc.tuple(...path.map((x) => x.value)),
          query: fc.tuple(...query.map((x) => x.value)),
          body,
          headers,
        })
        .map(({ path: pathValues, query: queryValues, body: payload, headers: extra }) => {
          let url = operation.path;
          path.forEach(({ name }, i) => {
            url = url.replace(`{${name}}`, percentEncoded(textOf(pathValues[i])));
          });
          const search = query.flatMap(({ name }, i) => {
            const value = queryValues[i];
            if (value === undefined) return [];
            const values = Array.isArray(value) ? (value as unknown[]) : [value];
            return values.map((v) => `${name}=${percentEncoded(textOf(v))}`);
          });
          if (search.length > 0) url += `?${search.join('&')}`;
          // Header values a client could send: visible ASCII only (anything else never gets past Node).
          const printable = Object.fromEntries(
            Object.entries(extra)
              .filter(([, v]) => v !== undefined)
              .map(([k, v]) => [k, String(v).replace(/[^\x20-\x7e]/g, '')]),
          );
          const options: InjectOptions = {
            method: operation.method,
            url,
            headers: {
              ...printable,
              ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
            },
            ...(payload === undefined ? {} : { payload }),
          };
          return { asProvider, line: `${operation.method} ${url}`, options };
        });
    });
}

describe.each(APP_ENGINES)('arbitrary requests on %s', (engine) => {
  let t: TestApp;
  let operations: Operation[];
  const referralIds: string[] = [];

  beforeAll(async () => {
    t = await createTestApp(engine, { env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
    operations = operationsOf(t.app.swagger() as unknown as OpenApiDocument);
    const states: Status[] = [
      'draft',
      'draft',
      'pending-acceptance',
      'pending-acceptance',
      'accepted',
      'accepted',
      'scheduled',
      'sender-action-required',
      'rejected',
      'cancelled',
    ];
    for (const state of states) referralIds.push((await referralIn(t, state)).id);
  });
  afterAll(async () => {
    await t.close();
  });

  it('derives a request for every operation of the OpenAPI document', () => {
    expect(operations.length).toBeGreaterThanOrEqual(16);
    expect(operations.filter((o) => o.body !== undefined).length).toBeGreaterThanOrEqual(11);
  });

  it(`answers ${RUNS_PER_ENGINE} arbitrary requests without a 5xx, and every 4xx as problem+json`, async () => {
    const pool = (asProvider: boolean): Pool => ({
      referralIds,
      institution: (asProvider ? t.provider : t.sender).institution,
    });
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof(...operations.map((o) => requestFor(o, pool))), async (request) => {
        const res = await t.request(request.asProvider ? t.provider : t.sender, request.options);
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        const said = `${request.line} → ${res.statusCode}: ${res.body}`;
        expect(res.statusCode, said).toBeLessThan(500);
        if (res.statusCode >= 400) {
          expect(res.headers['content-type'], said).toMatch(/^application\/problem\+json/);
          expect(res.json(), said).toMatchObject({
            status: res.statusCode,
            code: expect.any(String) as unknown,
          });
        }
      }),
      { numRuns: RUNS_PER_ENGINE },
    );
    // The requests reached the services, not only the schema: some were carried out.
    const succeeded = [...statuses].filter(([s]) => s < 300).reduce((n, [, count]) => n + count, 0);
    expect(succeeded, JSON.stringify([...statuses])).toBeGreaterThan(RUNS_PER_ENGINE / 20);
  });
});
