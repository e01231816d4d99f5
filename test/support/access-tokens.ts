// Signed client credentials for a test app's parties: a client registered with a fresh key pair, and
// access tokens for it, got from POST /oauth2/token with an assertion it signs, as a clinic system does.
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { expect } from 'vitest';
import type { TestApp, TestParty } from './test-app.ts';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export interface TestClient {
  readonly id: string;
  readonly kid: string;
  readonly privateKey: CryptoKey;
}

/** A client of `party`'s institution, in `role`, with one inline ES384 key. */
export async function registerClient(
  t: TestApp,
  party: TestParty,
  role: 'sender' | 'provider',
): Promise<TestClient> {
  const kid = `key-${randomUUID()}`;
  const { privateKey, publicKey } = await generateKeyPair('ES384', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES384', use: 'sig' };
  const { id } = await t.ctx.clientCredentials.register({
    system: role === 'sender' ? 'HAS' : 'Epic',
    role,
    institution: { idType: party.institution.institutionIdType, id: party.institution.institutionId },
    keys: { kind: 'inline', jwks: { keys: [publicJwk] } },
  });
  return { id, kid, privateKey };
}

/** An access token of `client` with the scopes `scope` names (both when undefined). */
export async function accessToken(t: TestApp, client: TestClient, scope?: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const assertion = await new SignJWT({ jti: randomUUID() })
    .setProtectedHeader({ alg: 'ES384', kid: client.kid })
    .setIssuer(client.id)
    .setSubject(client.id)
    .setAudience(`${t.ctx.config.publicUrl}/oauth2/token`)
    .setIssuedAt(now)
    .setExpirationTime(now + 60)
    .sign(client.privateKey);
  const res = await t.app.inject({
    method: 'POST',
    url: '/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'client_credentials',
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: assertion,
      ...(scope === undefined ? {} : { scope }),
    }).toString(),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ access_token: string }>().access_token;
}
