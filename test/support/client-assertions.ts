// Signed client assertions for the tests of the token endpoint: key pairs, assertions signed with
// any header and any claims (jose's CompactSign signs the bytes it is given, so a claim may be of any
// type, and the payload need not even be JSON), unsigned ones, and the form a client posts.
import { randomUUID } from 'node:crypto';
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from './test-app.ts';

/** The token endpoint's URL as the test app (PUBLIC_URL http://refhub.test) names it: the `aud`. */
export const TOKEN_URL = 'http://refhub.test/oauth2/token';
export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export interface KeyPair {
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function keyPair(kid: string, alg: 'ES384' | 'RS384' | 'ES256' = 'ES384'): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** The claims of a valid assertion of `clientId`, issued now and living a minute. */
export function validClaims(clientId: string, nowMs = Date.now()): Record<string, unknown> {
  const now = Math.floor(nowMs / 1000);
  return { iss: clientId, sub: clientId, aud: TOKEN_URL, jti: randomUUID(), iat: now, exp: now + 60 };
}

/**
 * A JWS signed with `key`, whose payload is `text`: its protected header is the key's `alg` and `kid`
 * with `header` over them. `crit` names the critical header parameters jose is to sign although it
 * does not know them.
 */
export async function signedText(
  key: KeyPair,
  text: string,
  header: Record<string, unknown> = {},
  crit?: Record<string, boolean>,
): Promise<string> {
  return new CompactSign(new TextEncoder().encode(text))
    .setProtectedHeader({ alg: key.publicJwk.alg ?? 'ES384', kid: key.publicJwk.kid, ...header })
    .sign(key.privateKey, crit === undefined ? undefined : { crit });
}

/** A JWT signed with `key`, with `claims` as they are, of whatever type. */
export function signed(
  key: KeyPair,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
  crit?: Record<string, boolean>,
): Promise<string> {
  return signedText(key, JSON.stringify(claims), header, crit);
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An unsigned JWT (`alg: none`, RFC 7519 §6), as an attacker writes one. */
export function unsigned(payload: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  return `${b64url({ alg: 'none', typ: 'JWT', ...header })}.${b64url(payload)}.`;
}

/** The form of a token request with `assertion`, and `extra` fields over it. */
export function tokenForm(assertion: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    grant_type: 'client_credentials',
    client_assertion_type: ASSERTION_TYPE,
    client_assertion: assertion,
    ...extra,
  };
}

/** POSTs `body` to the token endpoint from `address`, as a form unless told otherwise. */
export function postToken(
  t: TestApp,
  address: string,
  body: Record<string, string> | string | Buffer,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url: '/oauth2/token',
    remoteAddress: address,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : new URLSearchParams(body).toString(),
  });
}
