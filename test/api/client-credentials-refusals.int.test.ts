// The token endpoint's refusals: every claim of an assertion and every field of the form is checked
// for type and form before anything reaches the database, and whatever a client sends is answered
// 400 or 401 in RFC 6749's shape (429 once its address is throttled), never 500. Every refusal of a
// client refhub knows is audited under that client, and every refusal counts towards its address's
// failed authentications, an unknown client's too.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { CompactSign } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES, testDatabaseUrl } from '../support/engines.ts';
import {
  keyPair,
  postToken,
  signed,
  signedText,
  tokenForm,
  TOKEN_URL,
  unsigned,
  validClaims,
  type KeyPair,
} from '../support/client-assertions.ts';
import { auditRowsOf } from '../support/store-inspection.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

/** An RFC 6749 §5.2 answer: only `error` and `error_description`, never cached. */
function expectOAuthError(res: LightMyRequestResponse, status: number, error: string): string {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['cache-control']).toBe('no-store');
  const body = res.json<Record<string, unknown>>();
  expect(Object.keys(body).sort()).toEqual(['error', 'error_description']);
  expect(body.error).toBe(error);
  expect(typeof body.error_description).toBe('string');
  return body.error_description as string;
}

describe.each(APP_ENGINES)('the token endpoint’s refusals on %s', (engine) => {
  let t: TestApp;
  let key: KeyPair;
  let client: string;
  let revokedKey: KeyPair;
  let revoked: string;

  // Each request from an address of its own, so that no refusal is answered 429 for the ones before
  // it; the throttle's tests pick their address themselves.
  let addresses = 0;
  const fresh = () => {
    addresses++;
    return `10.1.${Math.floor(addresses / 250)}.${addresses % 250}`;
  };
  const post = (body: Record<string, string> | string | Buffer, headers: Record<string, string> = {}) =>
    postToken(t, fresh(), body, headers);
  const grant = (assertion: string, extra: Record<string, string> = {}) => post(tokenForm(assertion, extra));

  const countOf = async (table: 'client_assertions' | 'access_tokens') =>
    (
      await t.ctx.db
        .selectFrom(table)
        .select(sql<number>`count(*)::int`.as('n'))
        .executeTakeFirstOrThrow()
    ).n;

  beforeAll(async () => {
    t = await createTestApp(engine);
    key = await keyPair('clinic-2026-1');
    revokedKey = await keyPair('clinic-2025-1');
    const institution = { idType: 'hci', id: t.sender.institution.institutionId };
    client = (
      await t.ctx.clientCredentials.register({
        system: 'HAS',
        role: 'sender',
        institution,
        keys: { kind: 'inline', jwks: { keys: [key.publicJwk] } },
      })
    ).id;
    revoked = (
      await t.ctx.clientCredentials.register({
        system: 'HAS',
        role: 'sender',
        institution,
        keys: { kind: 'inline', jwks: { keys: [revokedKey.publicJwk] } },
      })
    ).id;
    await t.ctx.clientCredentials.revoke(revoked);
  });
  afterAll(async () => {
    await t.close();
  });

  describe('an iss that is no client ID', () => {
    it.each([
      ['36 dashes', '-'.repeat(36)],
      ['36 letters past f', 'g'.repeat(36)],
      ['a UUID’s shape without its digits', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz'],
      ['a UUID with a NUL', `${randomUUID().slice(0, 35)}\u0000`],
      ['empty', ''],
    ])('refuses %s as invalid_client', async (_what, iss) => {
      const res = await grant(await signed(key, { ...validClaims(client), iss, sub: iss }));
      expect(expectOAuthError(res, 401, 'invalid_client')).toMatch(/iss/);
    });

    it('throttles an address that keeps sending one, as any failed authentication', async () => {
      const address = '10.98.0.1';
      const iss = '-'.repeat(36);
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 12; attempt++) {
        const assertion = await signed(key, { ...validClaims(client), iss, sub: iss });
        const res = await postToken(t, address, tokenForm(assertion));
        statuses.push(res.statusCode);
        if (res.statusCode === 429) {
          expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
          expectOAuthError(res, 429, 'invalid_client');
        }
      }
      expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
    });
  });

  describe('the jti', () => {
    it.each([
      ['U+0000', '\u0000'],
      ['a NUL inside', 'a\u0000b'],
      ['a bell', 'ring\u0007'],
      ['a line feed', 'two\nlines'],
      ['DEL', '\u007f'],
      ['a C1 control', 'next\u0085line'],
      ['an unpaired surrogate', 'half\ud800'],
      ['empty', ''],
      ['longer than 256 characters', 'x'.repeat(257)],
      ['a number', 12345],
      ['zero', 0],
      ['null', null],
      ['true', true],
      ['an array', ['a']],
      ['an object', { id: 'a' }],
    ])('refuses a correctly signed assertion whose jti is %s, storing nothing', async (_what, jti) => {
      const before = await countOf('client_assertions');
      const res = await grant(await signed(key, { ...validClaims(client), jti }));
      expect(expectOAuthError(res, 401, 'invalid_client')).toMatch(/jti/);
      expect(await countOf('client_assertions')).toBe(before);
    });

    it('refuses an assertion without a jti', async () => {
      const claims = validClaims(client);
      delete claims.jti;
      expect(expectOAuthError(await grant(await signed(key, claims)), 401, 'invalid_client')).toMatch(/jti/);
    });

    it('never takes a number jti for its string', async () => {
      const jti = Math.floor(Math.random() * 1e9);
      const number = await grant(await signed(key, { ...validClaims(client), jti }));
      expectOAuthError(number, 401, 'invalid_client');
      const text = await grant(await signed(key, { ...validClaims(client), jti: String(jti) }));
      expect(text.statusCode, text.body).toBe(200);
      const again = await grant(await signed(key, { ...validClaims(client), jti: String(jti) }));
      expect(expectOAuthError(again, 401, 'invalid_client')).toMatch(/used already/);
    });

    it('takes a jti of 256 characters of any script', async () => {
      const jti = `${'é😷'.repeat(84)}${randomUUID().slice(0, 4)}`;
      expect(jti.length).toBe(256);
      const res = await grant(await signed(key, { ...validClaims(client), jti }));
      expect(res.statusCode, res.body).toBe(200);
    });
  });

  describe('the other claims', () => {
    const now = () => Math.floor(Date.now() / 1000);
    const without = (claims: Record<string, unknown>, name: string) =>
      Object.fromEntries(Object.entries(claims).filter(([claim]) => claim !== name));
    // JSON.parse reads 1e400 as Infinity.
    const infinite = (claims: Record<string, unknown>, claim: string, sign: '' | '-') =>
      JSON.stringify(claims).replace(new RegExp(`"${claim}":\\d+`), `"${claim}":${sign}1e400`);
    const cases: [string, (c: Record<string, unknown>) => Promise<string>, RegExp][] = [
      ['an iss that is a number', (c) => signed(key, { ...c, iss: 42 }), /iss/],
      ['a sub that is a number', (c) => signed(key, { ...c, sub: 42 }), /sub/],
      ['a sub naming another client', (c) => signed(key, { ...c, sub: randomUUID() }), /sub/],
      ['no sub', (c) => signed(key, without(c, 'sub')), /sub/],
      ['an aud that is a number', (c) => signed(key, { ...c, aud: 42 }), /aud/],
      ['an aud of numbers', (c) => signed(key, { ...c, aud: [42, TOKEN_URL] }), /aud/],
      ['an empty aud', (c) => signed(key, { ...c, aud: [] }), /aud/],
      ['an aud that is an object', (c) => signed(key, { ...c, aud: { url: TOKEN_URL } }), /aud/],
      ['no aud', (c) => signed(key, without(c, 'aud')), /aud/],
      ['an exp that is text', (c) => signed(key, { ...c, exp: String(now() + 60) }), /exp/],
      ['no exp', (c) => signed(key, without(c, 'exp')), /exp/],
      ['an exp that is null', (c) => signed(key, { ...c, exp: null }), /exp/],
      ['an iat that is text', (c) => signed(key, { ...c, iat: 'now' }), /iat/],
      ['an iat that is an object', (c) => signed(key, { ...c, iat: {} }), /iat/],
      ['an nbf that is an array', (c) => signed(key, { ...c, nbf: [] }), /nbf/],
      ['an infinite exp', (c) => signedText(key, infinite(c, 'exp', '')), /exp/],
      ['a negative infinite iat', (c) => signedText(key, infinite(c, 'iat', '-')), /iat/],
      ['claims that are not JSON', () => signedText(key, 'not json'), /JWT/],
      ['claims that are an array', () => signedText(key, '[]'), /JWT/],
      ['claims that are a string', () => signedText(key, '"claims"'), /JWT/],
    ];
    it('names the URL an assertion’s aud must be when it names another', async () => {
      const res = await grant(
        await signed(key, { ...validClaims(client), aud: 'https://refhub.example/oauth2/token' }),
      );
      expect(expectOAuthError(res, 401, 'invalid_client')).toBe(
        `The assertion’s aud must be the token endpoint’s URL, ${TOKEN_URL}.`,
      );
    });

    it.each(cases)('refuses %s as invalid_client', async (_what, make, description) => {
      const res = await grant(await make(validClaims(client)));
      expect(expectOAuthError(res, 401, 'invalid_client')).toMatch(description);
    });

    it.each([
      ['alg none', () => unsigned(validClaims(client), { kid: 'clinic-2026-1' }), /one of RS384/],
      [
        'HS256, the public key its secret',
        () =>
          new CompactSign(new TextEncoder().encode(JSON.stringify(validClaims(client))))
            .setProtectedHeader({ alg: 'HS256', kid: 'clinic-2026-1' })
            .sign(new TextEncoder().encode(JSON.stringify(key.publicJwk))),
        /one of RS384/,
      ],
      ['an alg that is a number', () => unsigned(validClaims(client), { alg: 384 }), /one of RS384/],
      ['a kid that is a number', () => signed(key, validClaims(client), { kid: 42 }), /kid/],
      [
        'an unknown critical header',
        () => signed(key, validClaims(client), { crit: ['refhub'], refhub: 1 }, { refhub: true }),
        /crit/,
      ],
    ])('refuses a header with %s as invalid_client', async (_what, make, description) => {
      expect(expectOAuthError(await grant(await make()), 401, 'invalid_client')).toMatch(description);
    });
  });

  describe('the form', () => {
    it.each([
      ['no grant_type', { grant_type: '' }, 400, 'invalid_request', /grant_type/],
      ['another grant', { grant_type: 'password' }, 400, 'unsupported_grant_type', /client_credentials/],
      [
        'a grant with a NUL',
        { grant_type: 'client_credentials\u0000' },
        400,
        'unsupported_grant_type',
        /grant/,
      ],
      ['another assertion type', { client_assertion_type: 'saml' }, 401, 'invalid_client', /assertion_type/],
      ['an empty assertion', { client_assertion: '' }, 401, 'invalid_client', /client_assertion/],
      ['an assertion of one part', { client_assertion: 'eyJ' }, 401, 'invalid_client', /JWT/],
      ['an assertion of empty parts', { client_assertion: '..' }, 401, 'invalid_client', /JWT/],
      ['an assertion that is not base64url', { client_assertion: 'é.é.é' }, 401, 'invalid_client', /JWT/],
      ['a client_id that is no client ID', { client_id: '-'.repeat(36) }, 401, 'invalid_client', /client_id/],
      ['a client_id of another client', { client_id: randomUUID() }, 401, 'invalid_client', /client_id/],
      ['a scope refhub does not grant', { scope: 'system/*.*' }, 400, 'invalid_scope', /system\/\*\.\*/],
    ])('refuses %s', async (_what, fields, status, error, description) => {
      // A field sent empty is one not sent (RFC 6749 §3.1).
      const sent = tokenForm(await signed(key, validClaims(client)), fields);
      expect(expectOAuthError(await post(sent), status, error)).toMatch(description);
    });

    it.each([
      ['a NUL', '\u0000'],
      ['a control character', 'system/Referral.read\u0007'],
      ['a long word', 'x'.repeat(2000)],
      ['a quote', 'system/"Referral".read'],
    ])('refuses a scope with %s as invalid_scope, without quoting it', async (_what, scope) => {
      const res = await grant(await signed(key, validClaims(client)), { scope });
      const description = expectOAuthError(res, 400, 'invalid_scope');
      expect(description).not.toContain(scope);
      expect(description.length).toBeLessThan(200);
    });

    it('refuses a query that is not percent-encoded UTF-8 in the same shape', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/oauth2/token?x=%zz',
        remoteAddress: fresh(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(tokenForm(await signed(key, validClaims(client)))).toString(),
      });
      expect(expectOAuthError(res, 400, 'invalid_request')).toMatch(/query/);
    });

    it('refuses a field sent twice', async () => {
      const form = new URLSearchParams(tokenForm(await signed(key, validClaims(client))));
      form.append('scope', 'system/Referral.read');
      form.append('scope', 'system/Referral.write');
      expect(expectOAuthError(await post(form.toString()), 400, 'invalid_request')).toMatch(/scope/);
    });

    it.each([
      ['a body that is not UTF-8', Buffer.from([0x67, 0x72, 0x61, 0xff, 0xfe, 0x3d, 0x78]), {}],
      ['a bad percent escape', 'grant_type=client%zzcredentials', {}],
      ['an escape that is not UTF-8', 'grant_type=%C3%28', {}],
      ['JSON', '{"grant_type":"client_credentials"}', { 'content-type': 'application/json' }],
      ['JSON that does not parse', '{"grant_type":', { 'content-type': 'application/json' }],
      ['text', 'grant_type=client_credentials', { 'content-type': 'text/plain' }],
      [
        'a type refhub does not know',
        'grant_type=client_credentials',
        { 'content-type': 'application/x-what' },
      ],
      ['a body over 16 KiB', `grant_type=client_credentials&client_assertion=${'a'.repeat(17_000)}`, {}],
    ])('refuses %s as invalid_request', async (_what, body, headers) => {
      expectOAuthError(await post(body, headers), 400, 'invalid_request');
    });
  });

  describe('the audit trail', () => {
    const refusals: [string, () => Promise<Record<string, string>>, number][] = [
      [
        'a signature of a key it never registered',
        async () => tokenForm(await signed(await keyPair('clinic-2026-1'), validClaims(client))),
        401,
      ],
      [
        'a wrong aud',
        async () =>
          tokenForm(await signed(key, { ...validClaims(client), aud: 'https://elsewhere.example/token' })),
        401,
      ],
      [
        'an unknown kid',
        async () => tokenForm(await signed(key, validClaims(client), { kid: 'not-registered' })),
        401,
      ],
      [
        'an expired assertion',
        async () => tokenForm(await signed(key, { ...validClaims(client, Date.now() - 600_000) })),
        401,
      ],
      ['alg none', () => Promise.resolve(tokenForm(unsigned(validClaims(client)))), 401],
      ['a NUL jti', async () => tokenForm(await signed(key, { ...validClaims(client), jti: '\u0000' })), 401],
      ['a number jti', async () => tokenForm(await signed(key, { ...validClaims(client), jti: 7 })), 401],
      [
        'a scope refhub does not grant',
        async () => tokenForm(await signed(key, validClaims(client)), { scope: 'system/*.*' }),
        400,
      ],
      [
        'another grant',
        async () => tokenForm(await signed(key, validClaims(client)), { grant_type: 'password' }),
        400,
      ],
    ];

    it.each(refusals)(
      'audits a refusal for %s under the client, its institution acting',
      async (_what, make, status) => {
        const res = await post(await make());
        expect(res.statusCode, res.body).toBe(status);
        expect(await auditRowsOf(t, res)).toEqual([
          {
            request_id: res.headers['x-request-id'],
            api_key_id: client,
            system: 'HAS',
            institution_id_type: 'hci',
            institution_id: t.sender.institution.institutionId,
            requester_identifier: null,
            action: 'oauth.token',
            outcome: 'denied',
            referral_ids: [],
          },
        ]);
      },
    );

    it('audits a replayed assertion under the client', async () => {
      const assertion = await signed(key, validClaims(client));
      const first = await grant(assertion);
      expect(first.statusCode, first.body).toBe(200);
      expect((await auditRowsOf(t, first)).map((row) => [row.api_key_id, row.outcome])).toEqual([
        [client, 'success'],
      ]);
      const replay = await grant(assertion);
      expectOAuthError(replay, 401, 'invalid_client');
      expect((await auditRowsOf(t, replay)).map((row) => [row.api_key_id, row.action, row.outcome])).toEqual([
        [client, 'oauth.token', 'denied'],
      ]);
    });

    it('audits a revoked client’s assertion under that client', async () => {
      const res = await grant(await signed(revokedKey, validClaims(revoked)));
      expect(expectOAuthError(res, 401, 'invalid_client')).toMatch(/revoked/);
      expect(
        (await auditRowsOf(t, res)).map((row) => [row.api_key_id, row.institution_id, row.outcome]),
      ).toEqual([[revoked, t.sender.institution.institutionId, 'denied']]);
    });

    it('writes no row for a client it does not know: there is no one to write it under', async () => {
      const stranger = randomUUID();
      const res = await grant(await signed(key, validClaims(stranger)));
      expect(expectOAuthError(res, 401, 'invalid_client')).toMatch(/unknown/);
      expect(await auditRowsOf(t, res)).toEqual([]);
    });
  });

  describe('the throttle', () => {
    it('counts every refusal, whatever its kind, and audits none past the limit', async () => {
      const address = '10.98.1.1';
      const makes = [
        async () => tokenForm(await signed(key, validClaims(client)), { scope: 'system/*.*' }),
        async () => tokenForm(await signed(key, validClaims(client)), { grant_type: 'password' }),
        async () => tokenForm(await signed(key, { ...validClaims(client), jti: 1 })),
        async () =>
          tokenForm(await signed(key, { ...validClaims(client), aud: 'https://elsewhere.example' })),
        () => Promise.resolve(tokenForm('not a jwt')),
      ];
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 10; attempt++) {
        const make = makes[attempt % makes.length];
        if (make === undefined) throw new Error('no request to make');
        const res = await postToken(t, address, await make());
        statuses.push(res.statusCode);
      }
      expect(
        statuses.every((status) => status === 400 || status === 401),
        statuses.join(),
      ).toBe(true);
      const throttled = await postToken(
        t,
        address,
        tokenForm(await signed(key, validClaims(client)), { scope: 'system/*.*' }),
      );
      expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
      expect(expectOAuthError(throttled, 429, 'invalid_client')).toMatch(/Too many/);
      expect(await auditRowsOf(t, throttled)).toEqual([]);
      // A valid assertion still gets its token: guessing a key is hopeless, and many share an address.
      const valid = await postToken(t, address, tokenForm(await signed(key, validClaims(client))));
      expect(valid.statusCode, valid.body).toBe(200);
    });
  });
});

// What is not the request's fault is not answered as a refusal: while PostgreSQL cannot be reached,
// a token request is 503 problem+json with Retry-After, as every API request is, and not counted
// against its address. (PostgreSQL only: embedded PGlite cannot become unreachable.)
describe('a token request while the database cannot be reached', () => {
  let proxy: TcpProxy;
  let t: TestApp;
  let key: KeyPair;
  let client: string;

  beforeAll(async () => {
    const target = new URL(testDatabaseUrl());
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    t = await createTestApp('postgres', {
      store: {
        reach: (url) => {
          url.hostname = '127.0.0.1';
          url.port = String(proxy.port);
          return url;
        },
      },
    });
    key = await keyPair('clinic-2026-1');
    client = (
      await t.ctx.clientCredentials.register({
        system: 'HAS',
        role: 'sender',
        institution: { idType: 'hci', id: t.sender.institution.institutionId },
        keys: { kind: 'inline', jwks: { keys: [key.publicJwk] } },
      })
    ).id;
  });
  afterAll(async () => {
    await proxy.restore();
    await t.close();
    await proxy.close();
  });

  it('is 503 problem+json, neither a refusal nor a 500, and counts for nothing', async () => {
    const address = '10.97.0.1';
    await proxy.cut();
    for (let attempt = 0; attempt < 12; attempt++) {
      const res = await postToken(t, address, tokenForm(await signed(key, validClaims(client))));
      expect(res.statusCode, res.body).toBe(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
      expect(res.json()).toMatchObject({ status: 503, code: 'unavailable' });
    }
    await proxy.restore();
    // Twelve failures would have throttled the address; none was counted, so its first refusal is a 401.
    let res = await postToken(t, address, tokenForm(await signed(key, { ...validClaims(client), jti: 1 })));
    for (let attempt = 0; attempt < 20 && res.statusCode === 503; attempt++) {
      // The pool finds its connections reset only as it uses them: each answer is a fresh try.
      res = await postToken(t, address, tokenForm(await signed(key, { ...validClaims(client), jti: 1 })));
    }
    expectOAuthError(res, 401, 'invalid_client');
  });
});
