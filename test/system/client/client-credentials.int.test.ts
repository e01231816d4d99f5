// A clinic system and a hospital system authenticated by signed client credentials alone work a
// referral through its whole life with @refhub/client, against a real listening refhub: each signs
// an assertion with its private key, gets an access token from POST /oauth2/token, and uses it for
// every call while it lasts; calls made together share one token request. A token refhub no longer
// knows is replaced and the refused call sent again, body and all; a refused assertion is a typed
// RefhubTokenError, and a token lacking a scope a typed 403.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import {
  createRefhubClient,
  RefhubProblemError,
  RefhubTokenError,
  type AttemptReport,
  type ClientCredentialsOptions,
  type InstitutionClient,
  type RefhubClientOptions,
  type ReferralFields,
} from '../../../clients/typescript/src/index.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { createTestApp, listeningUrl, type TestApp } from '../../support/test-app.ts';

/** The token endpoint's public URL, as refhub (PUBLIC_URL http://refhub.test) names it: the `aud`. */
const AUDIENCE = 'http://refhub.test/oauth2/token';

const PATIENT: ReferralFields = {
  patientName: 'Tan Ah Kow',
  patientUin: 'S1234567D',
  dob: '1960-02-29',
  patientGender: 'Male',
  nationality: 'SG',
  patientPhoneNumber: '91234567',
  residentialStatus: 'SC',
};

interface KeyPair {
  readonly privateKey: CryptoKey;
  readonly privateJwk: JWK;
  readonly publicJwk: JWK;
}

async function keyPair(kid: string): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair('ES384', { extractable: true });
  return {
    privateKey,
    privateJwk: { ...(await exportJWK(privateKey)), kid },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES384', use: 'sig' },
  };
}

/** The requests a client sent, through its `fetch` option: token requests and API calls apart. */
class Wire {
  readonly tokenRequests: Request[] = [];
  /** The Authorization header of each API call, in the order sent. */
  readonly authorizations: string[] = [];
  readonly fetch = (request: Request): Promise<Response> => {
    if (new URL(request.url).pathname === '/oauth2/token') this.tokenRequests.push(request.clone());
    else this.authorizations.push(request.headers.get('authorization') ?? '');
    return fetch(request);
  };

  /** The distinct tokens the API calls carried, in the order first sent. */
  get bearerTokens(): string[] {
    return [...new Set(this.authorizations.map((value) => /^Bearer (\S+)$/.exec(value)?.[1] ?? value))];
  }
}

/** The error a call failed with; fails the test if it did not fail with one of that class. */
async function failureOf<E extends Error>(
  call: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  try {
    await call;
  } catch (error) {
    if (error instanceof type) return error;
    throw error;
  }
  throw new Error(`the call succeeded, but a ${type.name} was expected`);
}

describe.each(APP_ENGINES)('@refhub/client with signed client credentials against refhub on %s', (engine) => {
  let t: TestApp;
  let baseUrl: string;
  let clinicKey: KeyPair;
  let hospitalKey: KeyPair;
  let clinicId: string;
  let hospitalId: string;

  /** A client signing as the clinic, its requests seen on `wire`. */
  const clinicClient = (wire: Wire, credentials: Partial<ClientCredentialsOptions> = {}) =>
    createRefhubClient({
      baseUrl,
      clientCredentials: {
        clientId: clinicId,
        privateKey: clinicKey.privateKey,
        kid: 'clinic-2026-1',
        audience: AUDIENCE,
        ...credentials,
      },
      fetch: wire.fetch,
    }).actingFor({ ...t.sender.institution, requesterIdentifier: 'dr.lim@bukittimah.example' });

  const hospitalClient = (wire: Wire) =>
    createRefhubClient({
      baseUrl,
      // The private JWK, whose kid is the registered key's.
      clientCredentials: { clientId: hospitalId, privateKey: hospitalKey.privateJwk, audience: AUDIENCE },
      fetch: wire.fetch,
    }).actingFor({ ...t.provider.institution, requesterIdentifier: 'dr.wong@cgh.example' });

  beforeAll(async () => {
    t = await createTestApp(engine);
    baseUrl = await listeningUrl(t);
    clinicKey = await keyPair('clinic-2026-1');
    hospitalKey = await keyPair('hospital-2026-1');
    clinicId = (
      await t.ctx.clientCredentials.register({
        system: 'HAS',
        role: 'sender',
        institution: { idType: 'hci', id: t.sender.institution.institutionId },
        keys: { kind: 'inline', jwks: { keys: [clinicKey.publicJwk] } },
      })
    ).id;
    hospitalId = (
      await t.ctx.clientCredentials.register({
        system: 'Epic',
        role: 'provider',
        institution: { idType: 'hci', id: t.provider.institution.institutionId },
        keys: { kind: 'inline', jwks: { keys: [hospitalKey.publicJwk] } },
      })
    ).id;
  });
  afterAll(async () => {
    await t.close();
  });

  it('walks a referral through its whole life, each side on one token', async () => {
    const clinicWire = new Wire();
    const hospitalWire = new Wire();
    const clinic = clinicClient(clinicWire);
    const hospital = hospitalClient(hospitalWire);

    const created = await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT });
    expect(created.coreStatus).toBe('draft');
    const referral = clinic.referral(created);
    expect((await referral.submit()).coreStatus).toBe('pending');

    const received = hospital.referral(created.id);
    expect((await received.read()).coreStatus).toBe('pending');
    await received.accept({ acceptedByName: 'Dr Wong' });
    const completed = await received.complete({
      outcomeCode: 'seen-discharged',
      summary: 'Gastroscopy normal. Discharged to the referring clinic.',
      completedByName: 'Dr Wong',
    });
    expect(completed.coreStatus).toBe('completed');
    expect(completed.outcome?.code).toBe('seen-discharged');

    const read = await referral.read();
    expect(read.allowedActions).toContain('acknowledge-outcome');
    const acknowledged = await referral.acknowledgeOutcome({ acknowledgedByName: 'Dr Lim' });
    expect(acknowledged.outcome?.acknowledgedByName).toBe('Dr Lim');
    expect(acknowledged.actionRequired).toBeUndefined();

    // One token request each, signed as the signed-credentials profile asks; every call carried its token.
    for (const [wire, clientId, kid] of [
      [clinicWire, clinicId, 'clinic-2026-1'],
      [hospitalWire, hospitalId, 'hospital-2026-1'],
    ] as const) {
      expect(wire.tokenRequests).toHaveLength(1);
      const form = new URLSearchParams(await wire.tokenRequests[0]!.text());
      expect(form.get('grant_type')).toBe('client_credentials');
      expect(form.get('client_assertion_type')).toBe(
        'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      );
      const [header, claims] = (form.get('client_assertion') ?? '')
        .split('.')
        .slice(0, 2)
        .map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()) as Record<string, unknown>);
      expect(header).toMatchObject({ alg: 'ES384', kid });
      expect(claims).toMatchObject({ iss: clientId, sub: clientId, aud: AUDIENCE });
      expect(claims!.jti).toMatch(/^[0-9a-f-]{36}$/);
      expect(Number(claims!.exp) - Number(claims!.iat)).toBe(60);
      expect(wire.bearerTokens).toEqual([expect.stringMatching(/^rfh_at_/)]);
    }
    expect(clinicWire.authorizations).toHaveLength(4);
    expect(hospitalWire.authorizations).toHaveLength(3);
  });

  it('shares one token request among calls made together', async () => {
    const wire = new Wire();
    const clinic = clinicClient(wire);
    const created = await Promise.all(
      [1, 2, 3, 4].map(() => clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT })),
    );
    expect(new Set(created.map((referral) => referral.id)).size).toBe(4);
    expect(wire.tokenRequests).toHaveLength(1);
    expect(wire.bearerTokens).toHaveLength(1);
  });

  it('replaces a token refhub refuses, and sends the refused call again with its body', async () => {
    const wire = new Wire();
    const attempts: AttemptReport[] = [];
    const clinic = createRefhubClient({
      baseUrl,
      clientCredentials: {
        clientId: clinicId,
        privateKey: clinicKey.privateJwk,
        audience: AUDIENCE,
      },
      fetch: wire.fetch,
      onAttempt: (attempt) => attempts.push(attempt),
    }).actingFor({ ...t.sender.institution, requesterIdentifier: 'dr.lim@bukittimah.example' });
    const referral = clinic.referral(await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT }));
    expect(wire.tokenRequests).toHaveLength(1);

    // refhub forgets every token: the next change is refused 401, then sent again with a new token.
    await t.ctx.db.deleteFrom('access_tokens').execute();
    const updated = await referral.update({ clinicalInfo: 'Dyspepsia for 3 months.' });
    expect(updated.clinicalInfo).toBe('Dyspepsia for 3 months.');
    expect(wire.tokenRequests).toHaveLength(2);
    const [first, second] = wire.bearerTokens;
    expect(second).not.toBe(first);
    expect(wire.authorizations.slice(-2)).toEqual([`Bearer ${first}`, `Bearer ${second}`]);
    expect(attempts.map(({ method, path, status }) => `${method} ${path} ${status}`)).toEqual([
      'POST /oauth2/token 200',
      'POST /api/v1/referrals 201',
      `PATCH /api/v1/referrals/${referral.id} 401`,
      'POST /oauth2/token 200',
      `PATCH /api/v1/referrals/${referral.id} 200`,
    ]);

    // Again, with calls made together: they are refused together and share the one new token.
    await t.ctx.db.deleteFrom('access_tokens').execute();
    const reads = await Promise.all([referral.read(), clinic.referral(referral.id).read()]);
    expect(reads.map((read) => read.clinicalInfo)).toEqual([
      'Dyspepsia for 3 months.',
      'Dyspepsia for 3 months.',
    ]);
    expect(wire.tokenRequests).toHaveLength(3);
    expect(wire.bearerTokens).toHaveLength(3);
  });

  it('surfaces an assertion refhub refuses as a typed RefhubTokenError', async () => {
    // Signed with a key that is not the registered one, under the registered key's kid.
    const stranger = await keyPair('clinic-2026-1');
    const wire = new Wire();
    const forged = clinicClient(wire, { privateKey: stranger.privateKey });
    const refused = await failureOf(forged.createReferral({ offeringId: 'cgh-gastro' }), RefhubTokenError);
    expect(refused.status).toBe(401);
    expect(refused.error).toBe('invalid_client');
    expect(refused.description).toMatch(/signature/);
    // Refused before any API call was made.
    expect(wire.tokenRequests).toHaveLength(1);
    expect(wire.authorizations).toEqual([]);

    const unknownScope = await failureOf(
      clinicClient(new Wire(), { scope: 'system/Patient.read' })
        .referral('01890a5d-ac96-774b-bcce-b302099a8057')
        .read(),
      RefhubTokenError,
    );
    expect(unknownScope.status).toBe(400);
    expect(unknownScope.error).toBe('invalid_scope');
  });

  it('refuses a read-only token a change with a typed 403', async () => {
    const writer = clinicClient(new Wire());
    const created = await writer.createReferral({ offeringId: 'cgh-gastro', ...PATIENT });
    const reader: InstitutionClient = clinicClient(new Wire(), { scope: 'system/Referral.read' });
    const referral = reader.referral(created.id);
    expect((await referral.read()).id).toBe(created.id);
    const refused = await failureOf(referral.update({ isUrgent: true }), RefhubProblemError);
    expect(refused.status).toBe(403);
    expect(refused.code).toBe('insufficient_scope');
  });

  it('refuses options that cannot sign an assertion refhub would take', () => {
    const options = (credentials: Partial<ClientCredentialsOptions>) => ({
      baseUrl,
      clientCredentials: { clientId: clinicId, privateKey: clinicKey.privateKey, ...credentials },
    });
    expect(() => createRefhubClient(options({}))).toThrow(/kid is required/);
    expect(() => createRefhubClient(options({ privateKey: clinicKey.publicJwk }))).toThrow(/public JWK/);
    expect(() => createRefhubClient({ baseUrl } as RefhubClientOptions)).toThrow(
      /one of apiKey and clientCredentials/,
    );
    // @ts-expect-error: an API key or signed client credentials, not both
    const both: RefhubClientOptions = { ...options({ kid: 'clinic-2026-1' }), apiKey: t.sender.key };
    expect(() => createRefhubClient(both)).toThrow(/one of apiKey and clientCredentials/);
  });
});
