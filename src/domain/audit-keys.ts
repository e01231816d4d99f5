// The audit trail's Ed25519 keys as the environment gives them (JWK, RFC 8037): parsed and checked,
// with errors that say what is wrong and never quote a key.
/** A private Ed25519 key as a JWK (RFC 8037). */
export interface AuditSigningKey {
  readonly kty: 'OKP';
  readonly crv: 'Ed25519';
  readonly x: string;
  readonly d: string;
  readonly kid: string;
}

/** The audit trail's signing key from its JSON text; throws with what is wrong, never quoting the key. */
export function parseAuditSigningKey(raw: string): AuditSigningKey {
  let jwk: Record<string, unknown>;
  try {
    jwk = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    throw new Error('must be a JWK, as JSON');
  }
  const text = (name: string) => (typeof jwk[name] === 'string' && jwk[name] !== '' ? jwk[name] : undefined);
  const [x, d, kid] = [text('x'), text('d'), text('kid')];
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || x === undefined || d === undefined || kid === undefined)
    throw new Error('must be a private Ed25519 JWK (kty OKP, crv Ed25519) with x, d and a kid');
  return { kty: 'OKP', crv: 'Ed25519', x, d, kid };
}

/** A public Ed25519 key as a JWK (RFC 8037), with its `kid`. */
export interface AuditPublicKey {
  readonly kty: 'OKP';
  readonly crv: 'Ed25519';
  readonly x: string;
  readonly kid: string;
}

/**
 * The earlier public keys of the audit trail from their JSON text (a JWK or a JWKS); throws with what is
 * wrong. A key with the signing key's kid must be its public half.
 */
export function parseAuditPublicKeys(raw: string, signingKey: AuditSigningKey | undefined): AuditPublicKey[] {
  const refuse = (why: string) => new Error(why);
  let value: unknown;
  try {
    value = JSON.parse(raw) as unknown;
  } catch {
    throw refuse('must be a JWK or a JWKS ({"keys": [...]}), as JSON');
  }
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  const entries: unknown[] = isObject(value) && Array.isArray(value.keys) ? value.keys : [value];
  const keys: AuditPublicKey[] = [];
  for (const entry of entries) {
    if (isObject(entry) && 'd' in entry)
      throw refuse('must hold public keys only: a private key (with d) never leaves AUDIT_SIGNING_KEY');
    const x = isObject(entry) && typeof entry.x === 'string' && entry.x !== '' ? entry.x : undefined;
    const kid = isObject(entry) && typeof entry.kid === 'string' && entry.kid !== '' ? entry.kid : undefined;
    if (
      !isObject(entry) ||
      entry.kty !== 'OKP' ||
      entry.crv !== 'Ed25519' ||
      x === undefined ||
      kid === undefined
    )
      throw refuse('must hold public Ed25519 JWKs (kty OKP, crv Ed25519), each with x and a kid');
    if (keys.some((k) => k.kid === kid)) throw refuse(`holds two keys with the kid "${kid}"`);
    if (signingKey !== undefined && signingKey.kid === kid && signingKey.x !== x)
      throw refuse(`holds a key with the kid "${kid}" of AUDIT_SIGNING_KEY, but not its public half`);
    keys.push({ kty: 'OKP', crv: 'Ed25519', x, kid });
  }
  return keys;
}
