// Signed client credentials over HTTP: a client registered with its public keys signs an assertion,
// gets an access token from POST /oauth2/token and walks a referral's life with it, audited under the
// client. Each way an assertion can be wrong is refused as RFC 6749 says, and a token acts only for
// its client's institution and scopes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { JWKS_REFRESH_MIN_MS } from '../../src/services/client-credentials/client-credentials.service.ts';
import { APP_ENGINES } from '../support/engines.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const TOKEN_URL = 'http://refhub.test/oauth2/token';
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

interface KeyPair {
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

async function keyPair(kid: string, alg: 'ES384' | 'RS384' = 'ES384'): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

interface AssertionOptions {
  readonly alg?: string;
  readonly kid?: string;
  readonly aud?: string;
  readonly iss?: string;
  readonly jti?: string;
  /** Seconds from now. */
  readonly exp?: number;
  readonly iat?: number;
}

async function assertion(clientId: string, key: KeyPair, options: AssertionOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ jti: options.jti ?? randomUUID() })
    .setProtectedHeader({
      alg: options.alg ?? key.publicJwk.alg ?? 'ES384',
      kid: options.kid ?? key.publicJwk.kid ?? '',
    })
    .setIssuer(options.iss ?? clientId)
    .setSubject(options.iss ?? clientId)
    .setAudience(options.aud ?? TOKEN_URL)
    .setIssuedAt(now + (options.iat ?? 0))
    .setExpirationTime(now + (options.exp ?? 60))
    .sign(key.privateKey);
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe.each(APP_ENGINES)('signed client credentials on %s', (engine) => {
  let t: TestApp;
  let senderKey: KeyPair;
  let providerKey: KeyPair;
  let senderClient: string;
  let providerClient: string;

  beforeAll(async () => {
    t = await createTestApp(engine);
    senderKey = await keyPair('clinic-2026-1');
    providerKey = await keyPair('hospital-2026-1', 'RS384');
    senderClient = (
      await t.ctx.clientCredentials.register({
        system: 'HAS',
        role: 'sender',
        institution: { idType: 'hci', id: t.sender.institution.institutionId },
        label: 'Bukit Timah clinic system',
        keys: { kind: 'inline', jwks: { keys: [senderKey.publicJwk] } },
      })
    ).id;
    providerClient = (
      await t.ctx.clientCredentials.register({
        system: 'Epic',
        role: 'provider',
        institution: { idType: 'hci', id: t.provider.institution.institutionId },
        keys: { kind: 'inline', jwks: { keys: [providerKey.publicJwk] } },
      })
    ).id;
  });
  afterAll(async () => {
    await t.close();
  });

  // Each request from an address of its own: the refusals below would otherwise throttle the address,
  // which the last test here does on purpose.
  let requests = 0;
  function tokenRequest(fields: Record<string, string>) {
    requests++;
    return t.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      remoteAddress: `10.0.${Math.floor(requests / 250)}.${requests % 250}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(fields).toString(),
    });
  }

  const grant = (clientAssertion: string, extra: Record<string, string> = {}) =>
    tokenRequest({
      grant_type: 'client_credentials',
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: clientAssertion,
      ...extra,
    });

  async function tokenFor(clientId: string, key: KeyPair, scope?: string): Promise<string> {
    const res = await grant(await assertion(clientId, key), scope === undefined ? {} : { scope });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ access_token: string }>().access_token;
  }

  function api(token: string, method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) {
    return t.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}` },
      ...(payload === undefined ? {} : { payload }),
    });
  }

  it('issues a token of at most five minutes for a signed assertion, never cached', async () => {
    const res = await grant(await assertion(senderClient, senderKey));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json<Record<string, unknown>>();
    expect(body).toEqual({
      access_token: expect.stringMatching(/^rfh_at_[0-9A-Za-z_-]{43}$/) as unknown,
      token_type: 'Bearer',
      expires_in: 300,
      scope: 'system/Referral.read system/Referral.write',
    });
  });

  it('walks a referral from the clinic to the hospital and back with tokens alone, audited under each client', async () => {
    const clinic = await tokenFor(senderClient, senderKey);
    const hospital = await tokenFor(providerClient, providerKey);
    const sender = { institutionIdType: 'hci', institutionId: t.sender.institution.institutionId };
    const provider = { institutionIdType: 'hci', institutionId: t.provider.institution.institutionId };
    const created = await api(clinic, 'POST', '/api/v1/referrals', {
      ...sender,
      requesterIdentifier: 'dr.lim@bukittimah.example',
      offeringId: 'cgh-gastro',
      patientName: 'Tan Ah Kow',
      patientUin: 'S1234567D',
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id } = created.json<{ id: string }>();
    const step = async (token: string, op: string, body: Record<string, unknown>) => {
      const res = await api(token, 'POST', `/api/v1/referrals/${id}/${op}`, body);
      expect(res.statusCode, `${op}: ${res.body}`).toBe(200);
      return res.json<{ status: string }>();
    };
    await step(clinic, 'submit', sender);
    await step(hospital, 'accept', provider);
    await step(hospital, 'complete', { ...provider, outcomeCode: 'seen-discharged', summary: 'Seen.' });
    expect((await step(clinic, 'acknowledge-outcome', sender)).status).toBe('outcome-acknowledged');
    const read = await api(
      hospital,
      'GET',
      `/api/v1/referrals/${id}?requesterIdentifier=dr.wong%40cgh.example&institutionIdType=hci&institutionId=${provider.institutionId}`,
    );
    expect(read.statusCode, read.body).toBe(200);

    const audit = await t.ctx.db
      .selectFrom('audit_events')
      .select(['api_key_id', 'action', 'system'])
      .where(sql<boolean>`${id}::uuid = any(referral_ids)`)
      .orderBy('seq')
      .execute();
    expect(audit.map((row) => [row.action, row.api_key_id])).toEqual([
      ['referral.create', senderClient],
      ['referral.submit', senderClient],
      ['referral.accept', providerClient],
      ['referral.complete', providerClient],
      ['referral.acknowledge-outcome', senderClient],
      ['referral.read', providerClient],
    ]);
  });

  it('acts only for the client’s institution, in its role', async () => {
    const clinic = await tokenFor(senderClient, senderKey);
    const other = await api(
      clinic,
      'GET',
      `/api/v1/institutions/hci/${t.otherSender.institution.institutionId}/referrals`,
    );
    expect(other.statusCode).toBe(403);
    expect(other.json()).toMatchObject({ code: 'institution_not_permitted' });
    const hospital = await tokenFor(providerClient, providerKey);
    const create = await api(hospital, 'POST', '/api/v1/referrals', {
      institutionIdType: 'hci',
      institutionId: t.provider.institution.institutionId,
      offeringId: 'cgh-gastro',
    });
    expect(create.statusCode).toBe(403);
    expect(create.json()).toMatchObject({ code: 'forbidden_role' });
  });

  it('lets a read-only token read and refuses it a write, naming the scope', async () => {
    const reader = await tokenFor(senderClient, senderKey, 'system/Referral.read');
    const list = await api(
      reader,
      'GET',
      `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals`,
    );
    expect(list.statusCode, list.body).toBe(200);
    const write = await api(reader, 'POST', '/api/v1/referrals', {
      institutionIdType: 'hci',
      institutionId: t.sender.institution.institutionId,
    });
    expect(write.statusCode).toBe(403);
    expect(write.headers['www-authenticate']).toBe('Bearer error="insufficient_scope"');
    expect(write.json()).toMatchObject({
      code: 'insufficient_scope',
      detail: 'This request needs the scope system/Referral.write, which the access token was not granted.',
    });
  });

  describe('reads sent as POST, so that the patient stays out of URLs', () => {
    const searchUrl = () => `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals/search`;
    const reportUrl = '/api/v1/patients/access-report/search';
    const reportBody = () => ({
      ...t.sender.institution,
      requesterIdentifier: 'dr.lim@bukittimah.example',
      patientUin: 'S1234567D',
    });
    let id: string;
    beforeAll(async () => {
      const clinic = await tokenFor(senderClient, senderKey);
      const created = await api(clinic, 'POST', '/api/v1/referrals', {
        ...t.sender.institution,
        offeringId: 'cgh-gastro',
        patientName: 'Tan Ah Kow',
        patientUin: 'S1234567D',
      });
      expect(created.statusCode, created.body).toBe(201);
      id = created.json<{ id: string }>().id;
    });

    it('lets a read-only token search referrals by patient and read the access report', async () => {
      const reader = await tokenFor(senderClient, senderKey, 'system/Referral.read');
      const search = await api(reader, 'POST', searchUrl(), { patientUin: 'S1234567D' });
      expect(search.statusCode, search.body).toBe(200);
      expect(search.json<{ data: { id: string }[] }>().data.map((r) => r.id)).toContain(id);
      const report = await api(reader, 'POST', reportUrl, reportBody());
      expect(report.statusCode, report.body).toBe(200);
    });

    it('refuses a write-only token the search and the access report, naming the read scope', async () => {
      const writer = await tokenFor(senderClient, senderKey, 'system/Referral.write');
      for (const [url, body] of [
        [searchUrl(), { patientUin: 'S1234567D' }],
        [reportUrl, reportBody()],
      ] as const) {
        const res = await api(writer, 'POST', url, body);
        expect(res.statusCode, `${url}: ${res.body}`).toBe(403);
        expect(res.headers['www-authenticate']).toBe('Bearer error="insufficient_scope"');
        expect(res.json()).toMatchObject({
          code: 'insufficient_scope',
          detail:
            'This request needs the scope system/Referral.read, which the access token was not granted.',
        });
        // Neither the referral nor the patient is in the answer.
        expect(res.body).not.toContain(id);
        expect(res.body).not.toContain('S1234567D');
        // Audited as denied, under the client, with the action the route names.
        const requestId = res.headers['x-request-id'] as string;
        const audit = await t.ctx.db
          .selectFrom('audit_events')
          .select(['api_key_id', 'action', 'outcome'])
          .where('request_id', '=', requestId)
          .execute();
        expect(audit).toEqual([
          {
            api_key_id: senderClient,
            action: url === reportUrl ? 'patient.access-report' : 'referral.search',
            outcome: 'denied',
          },
        ]);
      }
    });
  });

  it('refuses an assertion used twice (the same jti)', async () => {
    const signed = await assertion(senderClient, senderKey);
    expect((await grant(signed)).statusCode).toBe(200);
    const again = await grant(signed);
    expect(again.statusCode).toBe(401);
    expect(again.json()).toEqual({
      error: 'invalid_client',
      error_description: 'This assertion was used already: sign a new one, with a new jti.',
    });
  });

  const refusals: [string, (client: string, key: KeyPair) => Promise<string>, RegExp][] = [
    ['an expired assertion', (c, k) => assertion(c, k, { exp: -120, iat: -180 }), /expired/],
    ['an assertion issued in the future', (c, k) => assertion(c, k, { iat: 600, exp: 660 }), /future|exp/],
    ['an assertion that lives over five minutes', (c, k) => assertion(c, k, { exp: 900 }), /at most 300/],
    ['a wrong aud', (c, k) => assertion(c, k, { aud: 'https://elsewhere.example/token' }), /aud/],
    ['an unknown kid', (c, k) => assertion(c, k, { kid: 'not-registered' }), /kid/],
    ['another client named as iss', (_c, k) => assertion(randomUUID(), k), /unknown or has been revoked/],
    [
      'a key the client never registered',
      async (c) => assertion(c, await keyPair('clinic-2026-1')),
      /signature/,
    ],
    [
      'alg none',
      (c) =>
        Promise.resolve(
          `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({
            iss: c,
            sub: c,
            aud: TOKEN_URL,
            jti: randomUUID(),
            exp: Math.floor(Date.now() / 1000) + 60,
          })}.`,
        ),
      /one of RS384/,
    ],
    [
      'HS256 signed with the public key as its secret',
      (c, k) =>
        new SignJWT({ jti: randomUUID() })
          .setProtectedHeader({ alg: 'HS256', kid: k.publicJwk.kid ?? '' })
          .setIssuer(c)
          .setSubject(c)
          .setAudience(TOKEN_URL)
          .setIssuedAt()
          .setExpirationTime('1m')
          .sign(new TextEncoder().encode(JSON.stringify(k.publicJwk))),
      /one of RS384/,
    ],
  ];

  it.each(refusals)('refuses %s as invalid_client', async (_what, make, description) => {
    const res = await grant(await make(senderClient, senderKey));
    expect(res.statusCode, res.body).toBe(401);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json<{ error: string; error_description: string }>();
    expect(body.error).toBe('invalid_client');
    expect(body.error_description).toMatch(description);
  });

  it('takes token requests by POST only', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/oauth2/token' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses other grants, other assertion types and unknown scopes as RFC 6749 names them', async () => {
    const signed = await assertion(senderClient, senderKey);
    const password = await tokenRequest({ grant_type: 'password', client_assertion: signed });
    expect(password.statusCode).toBe(400);
    expect(password.json()).toMatchObject({ error: 'unsupported_grant_type' });
    const secret = await tokenRequest({ grant_type: 'client_credentials', client_secret: 'x' });
    expect(secret.statusCode).toBe(401);
    expect(secret.json()).toMatchObject({ error: 'invalid_client' });
    const scope = await grant(await assertion(senderClient, senderKey), { scope: 'system/*.*' });
    expect(scope.statusCode).toBe(400);
    expect(scope.json()).toMatchObject({ error: 'invalid_scope' });
  });

  it('stops a revoked client’s tokens at once', async () => {
    const key = await keyPair('short-lived');
    const client = await t.ctx.clientCredentials.register({
      system: 'HAS',
      role: 'sender',
      institution: { idType: 'hci', id: t.sender.institution.institutionId },
      keys: { kind: 'inline', jwks: { keys: [key.publicJwk] } },
    });
    const token = await tokenFor(client.id, key);
    const url = `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals`;
    expect((await api(token, 'GET', url)).statusCode).toBe(200);
    await t.ctx.db
      .updateTable('api_keys')
      .set({ revoked_at: new Date() })
      .where('id', '=', client.id)
      .execute();
    const refused = await api(token, 'GET', url);
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ code: 'unauthorized' });
    expect((await grant(await assertion(client.id, key))).json()).toMatchObject({ error: 'invalid_client' });
  });

  it('throttles an address that keeps failing to authenticate, as with unknown API keys', async () => {
    const refused = async () =>
      t.app.inject({
        method: 'POST',
        url: '/oauth2/token',
        remoteAddress: '10.99.0.1',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          grant_type: 'client_credentials',
          client_assertion_type: ASSERTION_TYPE,
          client_assertion: await assertion(senderClient, senderKey, { aud: 'https://elsewhere.example' }),
        }).toString(),
      });
    let res = await refused();
    for (let attempt = 0; res.statusCode === 401 && attempt < 1000; attempt++) res = await refused();
    expect(res.statusCode).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.json()).toMatchObject({ error: 'invalid_client' });
  });

  describe('keys at a URL', () => {
    let server: Server;
    let served: { keys: JWK[] };
    let fetches = 0;
    // refhub's clock, moved on by the test: keys are fetched again at most every JWKS_REFRESH_MIN_MS.
    let ahead = 0;
    let u: TestApp;
    beforeAll(async () => {
      u = await createTestApp(engine, { clock: { now: () => new Date(Date.now() + ahead) } });
      server = createServer((_request, response) => {
        fetches++;
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(served));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      await u.close();
    });

    const grantAt = async (clientAssertion: string) =>
      u.app.inject({
        method: 'POST',
        url: '/oauth2/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({
          grant_type: 'client_credentials',
          client_assertion_type: ASSERTION_TYPE,
          client_assertion: clientAssertion,
        }).toString(),
      });

    it('fetches the keys, and fetches them again when an assertion names a new kid: a rotation', async () => {
      const first = await keyPair('rotating-1');
      served = { keys: [first.publicJwk] };
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
      const client = await u.ctx.clientCredentials.register({
        system: 'HAS',
        role: 'sender',
        institution: { idType: 'hci', id: u.sender.institution.institutionId },
        keys: { kind: 'url', url },
      });
      expect((await grantAt(await assertion(client.id, first))).statusCode).toBe(200);
      expect((await grantAt(await assertion(client.id, first))).statusCode).toBe(200);
      expect(fetches).toBe(1);
      // The client publishes its next key beside the old one and signs with it. Right after a fetch,
      // an unknown kid does not make refhub fetch again (anyone may name any kid).
      const second = await keyPair('rotating-2');
      served = { keys: [first.publicJwk, second.publicJwk] };
      const early = await grantAt(await assertion(client.id, second));
      expect(early.json()).toMatchObject({ error: 'invalid_client' });
      expect(fetches).toBe(1);
      ahead = JWKS_REFRESH_MIN_MS;
      const rotated = await grantAt(await assertion(client.id, second));
      expect(rotated.statusCode, rotated.body).toBe(200);
      expect(fetches).toBe(2);
      // The old key still works while the URL lists it.
      expect((await grantAt(await assertion(client.id, first))).statusCode).toBe(200);
    });
  });

  it('refuses the API keys of senders and providers where the installation takes signed credentials only', async () => {
    const strict = await createTestApp(engine, { env: { ACCEPT_API_KEYS: 'false' } });
    try {
      const list = `/api/v1/institutions/hci/${strict.sender.institution.institutionId}/referrals`;
      const refused = await strict.request(strict.sender, { method: 'GET', url: list });
      expect(refused.statusCode).toBe(401);
      expect(refused.json()).toMatchObject({
        code: 'unauthorized',
        detail: expect.stringMatching(/oauth2\/token/) as unknown,
      });
      // Ops keys are the operators' own, and keep working.
      const ledger = await strict.request(strict.ops, {
        method: 'GET',
        url: `/api/v1/referrals/${randomUUID()}/ehr-submissions`,
      });
      expect(ledger.statusCode).toBe(404);
    } finally {
      await strict.close();
    }
  });
});
