// An access token's scopes, operation by operation. Every operation of the served document declares
// the one scope a token needs for it, beside the API key, under an OAuth 2.0 client-credentials
// scheme; the API enforces exactly that. Walking every operation of the document (so a new one is
// covered without being listed here) with a read-only and a write-only token of the institution its
// example acts for, naming a real referral, file and subscription: the token without the declared
// scope is refused 403 insufficient_scope before anything changes, and the token with it is not
// refused. An API route that declares no scope keeps the app from becoming ready.
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operation } from '../../../src/api/schemas/operation.ts';
import { createApiApp } from '../../../src/composition/api-app.ts';
import { createContext, type AppContext } from '../../../src/composition/context.ts';
import { loadConfig } from '../../../src/config.ts';
import { SCOPES, type Scope } from '../../../src/domain/client-credentials.ts';
import { createLogger } from '../../../src/logger.ts';
import { accessToken, registerClient } from '../../support/access-tokens.ts';
import { openTestStore } from '../../support/engines.ts';
import { call, createDraft } from '../../support/scenarios.ts';
import {
  exampleRequest,
  institutionOf,
  operationsOf,
  type Document,
  type Found,
} from '../../support/openapi-operations.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const [READ, WRITE] = SCOPES;
const TOKEN_SCHEME = 'ClientCredentials';

/** The scope an operation of the document lists under the token scheme, or what it lists instead. */
function scopeOf({ operation: op }: Found): Scope {
  const listed = (op.security ?? []).flatMap((requirement) => requirement[TOKEN_SCHEME] ?? []);
  expect(listed, op.operationId).toHaveLength(1);
  expect(SCOPES, op.operationId).toContain(listed[0]);
  return listed[0] as Scope;
}

/** Row counts of the tables a change of any operation writes to. */
async function stored(t: TestApp): Promise<Record<string, number>> {
  const tables = [
    'referrals',
    'timeline_events',
    'attachments',
    'link_tokens',
    'webhook_subscriptions',
    'webhook_attempts',
    'idempotency_keys',
    'outbox',
  ] as const;
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const row = await t.ctx.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}

describe('scopes per operation', () => {
  let t: TestApp;
  let doc: Document;
  /** The read-only and the write-only token of each institution the examples act for. */
  const tokens = new Map<string, Readonly<Record<Scope, string>>>();
  /** A token of the sender's client with both scopes. */
  let full: string;
  /** What the requests name instead of the examples' IDs: a referral, its file, a subscription. */
  let real: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp('pglite');
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    doc = res.json<Document>();
    for (const [party, role] of [
      [t.sender, 'sender'],
      [t.provider, 'provider'],
    ] as const) {
      const client = await registerClient(t, party, role);
      tokens.set(party.institution.institutionId, {
        [READ]: await accessToken(t, client, READ),
        [WRITE]: await accessToken(t, client, WRITE),
      });
      if (role === 'sender') full = await accessToken(t, client);
    }
    // A referral both parties see (submitted, with a file), and a subscription of the sender.
    const draft = await createDraft(t);
    const file = await t.request(t.sender, {
      method: 'POST',
      url: `/api/v1/referrals/${draft.id}/attachments`,
      query: { ...t.sender.institution },
      headers: { 'content-type': 'text/plain', 'content-disposition': 'attachment; filename="ecg.txt"' },
      payload: 'ECG 12-lead: sinus rhythm.',
    });
    expect(file.statusCode, file.body).toBe(201);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
    const subscription = await t.request(t.sender, {
      method: 'POST',
      url: `/api/v1/institutions/hci/${t.sender.institution.institutionId}/webhook-subscriptions`,
      payload: { url: 'https://his.bukittimah.example/refhub/events' },
    });
    expect(subscription.statusCode, subscription.body).toBe(201);
    real = {
      referralId: draft.id,
      attachmentId: file.json<{ id: string }>().id,
      subscriptionId: subscription.json<{ id: string }>().id,
      // Whatever version the referral has reached: the status decides, not a stale ETag.
      'If-Match': '*',
    };
    // A whole app on embedded PGlite starts slowly on a loaded 2-core machine.
  }, 120_000);
  afterAll(async () => {
    await t.close();
  });

  it('declares one scope for every operation, beside the API key, under an OAuth 2.0 client-credentials scheme', () => {
    expect(doc.components.securitySchemes?.[TOKEN_SCHEME]).toEqual({
      type: 'oauth2',
      description: expect.stringContaining('Bearer') as unknown,
      flows: {
        clientCredentials: {
          tokenUrl: 'http://refhub.test/oauth2/token',
          scopes: { [READ]: expect.any(String) as unknown, [WRITE]: expect.any(String) as unknown },
        },
      },
    });
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThan(30);
    const used = new Set<Scope>();
    for (const found of operations) {
      const where = `${found.method} ${found.path}`;
      const scope = scopeOf(found);
      used.add(scope);
      expect(found.operation.security, where).toEqual([{ ApiKey: [] }, { [TOKEN_SCHEME]: [scope] }]);
      // What a GET does is read; a search changes nothing either, though it is a POST.
      if (found.method === 'GET' || /^search[A-Z]/.test(found.operation.operationId)) {
        expect(scope, where).toBe(READ);
      }
    }
    expect([...used].sort()).toEqual([READ, WRITE]);
    // No operation falls back on a scope the document gives them all.
    expect(doc.security).toBeUndefined();
  });

  it('refuses each operation to the token without its scope, before anything changes, and not to the token with it', async () => {
    const operations = operationsOf(doc).map((found) => {
      const request = exampleRequest(found, real);
      const institution = institutionOf(request);
      const own = institution === undefined ? undefined : tokens.get(institution);
      expect(own, `${found.operation.operationId} acts for ${institution}`).toBeDefined();
      return { found, request, scope: scopeOf(found), own: own! };
    });
    const send = (request: ReturnType<typeof exampleRequest>, token: string) =>
      t.app.inject({ ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } });

    const before = await stored(t);
    for (const { found, request, scope, own } of operations) {
      const lacking = own[scope === READ ? WRITE : READ];
      const res = await send(request, lacking);
      const where = `${found.operation.operationId} with only ${scope === READ ? WRITE : READ}`;
      expect(res.statusCode, `${where}: ${res.body}`).toBe(403);
      expect(res.headers['www-authenticate'], where).toBe('Bearer error="insufficient_scope"');
      expect(res.json(), where).toMatchObject({
        code: 'insufficient_scope',
        detail: `This request needs the scope ${scope}, which the access token was not granted.`,
      });
    }
    // Refused before anything was written, an Idempotency-Key included.
    expect(await stored(t)).toEqual(before);

    const refused: string[] = [];
    // The deletes last, so that the other operations find what they name.
    const deletesLast = [...operations].sort(
      (a, b) => Number(a.found.method === 'DELETE') - Number(b.found.method === 'DELETE'),
    );
    for (const { found, request, scope, own } of deletesLast) {
      const res = await send(request, own[scope]);
      // The referral may not be in the status the operation needs (409, 412), an earlier operation may
      // have deleted what it names (404), an attempt the example names does not exist (404): that is
      // the store's state. A refusal of the token, its scope, its institution or its role, or of the
      // example's input, is not.
      if ([400, 401, 403, 415, 422].includes(res.statusCode) || res.statusCode >= 500) {
        refused.push(`${found.operation.operationId} with ${scope}: ${res.statusCode} ${res.body}`);
      }
    }
    expect(refused).toEqual([]);
  });

  it('serves the HEAD of a read to a read-only token, and refuses it to a write-only one', async () => {
    const list = `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals`;
    const own = tokens.get(t.sender.institution.institutionId)!;
    const head = (token: string) =>
      t.app.inject({ method: 'HEAD', url: list, headers: { authorization: `Bearer ${token}` } });
    expect((await head(own[READ])).statusCode).toBe(200);
    const refused = await head(own[WRITE]);
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['www-authenticate']).toBe('Bearer error="insufficient_scope"');
  });

  it('takes no access token on the ops routes, whatever its scopes', async () => {
    const basic = `Basic ${Buffer.from(`ops:${full}`).toString('base64')}`;
    for (const url of ['/doctor', '/metrics', '/admin']) {
      for (const authorization of [`Bearer ${full}`, basic]) {
        const res = await t.app.inject({ method: 'GET', url, headers: { authorization } });
        expect(res.statusCode, `${url} with ${authorization.split(' ')[0]}: ${res.body}`).toBe(401);
      }
    }
  });
});

describe('an API route that declares no scope', () => {
  let ctx: AppContext;
  beforeAll(async () => {
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
  }, 120_000);
  afterAll(async () => {
    await ctx.close();
  });

  /** The app with one more route under /api/v1, registered as the route files register theirs. */
  async function appWith(schema: Record<string, unknown> | undefined): Promise<FastifyInstance> {
    const app = await createApiApp(ctx);
    void app.register(
      (scoped: FastifyInstance) => {
        scoped.get('/extra', schema === undefined ? {} : { schema }, () => ({ ok: true }));
      },
      { prefix: '/api/v1' },
    );
    return app;
  }

  const documented = {
    operationId: 'readExtra',
    tag: 'Referrals',
    summary: 'Read something',
    description: 'Something.',
  } as const;

  it.each([
    ['no schema', undefined],
    ['a schema without security', { hide: true }],
    ['an API key alone', { security: [{ ApiKey: [] }] }],
    ['a scope refhub does not grant', { security: [{ ClientCredentials: ['system/*.*'] }] }],
    ['two scopes', { security: [{ ClientCredentials: [...SCOPES] }] }],
  ])('stops the app from starting: %s', async (_what, schema) => {
    const app = await appWith(schema);
    try {
      await expect(app.ready()).rejects.toThrow(
        /^An API route declares no scope \(GET \/api\/v1\/extra, HEAD \/api\/v1\/extra\)/,
      );
    } finally {
      await app.close().catch(() => undefined);
    }
  });

  it('starts with a route that declares its scope through operation()', async () => {
    const app = await appWith({ ...operation({ ...documented, scope: READ }) });
    try {
      await app.ready();
      const res = await app.inject({ method: 'GET', url: '/api/v1/extra' });
      // Registered, and behind authentication like every API route.
      expect(res.statusCode).toBe(401);
    } finally {
      await app.close();
    }
  });
});
