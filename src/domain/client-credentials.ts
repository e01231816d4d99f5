// Signed client credentials (OAuth 2.0 client credentials with `private_key_jwt`, RFC 7523, as SMART
// Backend Services profile them): what a client asks for and what refhub grants, as pure rules. The
// JWT work itself is jose's (services/client-credentials/client-credentials.service.ts); what is here is the form each
// field and claim must have before refhub looks anything up or stores it.
import { isUuid } from './ids.ts';

/** Where clients get access tokens: the `aud` of their assertions is the public URL with this path. */
export const TOKEN_PATH = '/oauth2/token';

/** The grant a token request names. */
export const CLIENT_CREDENTIALS_GRANT = 'client_credentials';
/** The only client assertion type refhub takes: a JWT the client signed with its private key. */
export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * The scopes of an access token, SMART-style: reading referrals (and every other operation of the API
 * that changes nothing, for the token's institution) and changing them. A token carries those it asked
 * for, or both. Which one an operation needs is the operation's own declaration (its schema's
 * `operation()`, api/schemas/operation.ts), never its HTTP method: a search sent as POST to keep the
 * patient out of the URL is a read.
 */
export const SCOPES = ['system/Referral.read', 'system/Referral.write'] as const;
export type Scope = (typeof SCOPES)[number];

/** The signature algorithms a client may sign with: asymmetric only, so `none` and HS256 never pass. */
export const ASSERTION_ALGORITHMS = ['RS384', 'ES384', 'PS384', 'RS256', 'ES256', 'PS256'] as const;

/** The longest an assertion may live (its `exp` past now), and the longest an access token lives. */
export const MAX_ASSERTION_SECONDS = 300;
export const ACCESS_TOKEN_SECONDS = 300;
/** How far the clocks of a client and refhub may disagree. */
export const CLOCK_TOLERANCE_SECONDS = 30;

/**
 * A scope-token as RFC 6749 §3.3 writes it (printable ASCII but `"` and `\\`), of a length a scope
 * name could have: anything else is not a scope, and is refused without being quoted back.
 */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]{1,64}$/;

/**
 * The scopes a `scope` names (scope-tokens separated by spaces, RFC 6749 §3.3), the unknown one it
 * names first, or `malformed` when it is not scope-tokens separated by spaces.
 */
export function parseScopes(
  scope: string | undefined,
): { readonly scopes: Scope[] } | { readonly unknown: string } | { readonly malformed: true } {
  const words = (scope ?? '').split(' ').filter((word) => word !== '');
  if (words.length === 0) return { scopes: [...SCOPES] };
  if (!words.every((word) => SCOPE_TOKEN.test(word))) return { malformed: true };
  const scopes: Scope[] = [];
  for (const word of words) {
    if (!(SCOPES as readonly string[]).includes(word)) return { unknown: word };
    if (!scopes.includes(word as Scope)) scopes.push(word as Scope);
  }
  return { scopes };
}

/** The longest `jti` refhub keeps; an assertion's ID needs far less (a UUID is 36 characters). */
export const MAX_JTI_LENGTH = 256;
/** The longest `kid` refhub looks for among a client's keys. */
export const MAX_KID_LENGTH = 256;

/**
 * Whether `value` has the form of a client ID as refhub gives one: a UUID, in lower case. Only such a
 * value is looked up in the database (a `uuid` column, which refuses anything else with an error).
 */
export function isClientId(value: unknown): value is string {
  return typeof value === 'string' && isUuid(value) && value === value.toLowerCase();
}

/** Text of 1 to `max` characters, well-formed Unicode, without control characters (C0, DEL, C1). */
function isPlainText(value: unknown, max: number): value is string {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= max &&
    value.isWellFormed() &&
    !/\p{Cc}/u.test(value)
  );
}

/** A NumericDate (RFC 7519 §2): a number of seconds, finite (JSON's 1e400 reads as Infinity). */
const isNumericDate = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value);

/**
 * What is wrong with the form of an assertion's protected header, in words for the client's
 * developer, or undefined. Whether the key and signature hold is jose's to say, after this.
 */
export function assertionHeaderProblem(header: Readonly<Record<string, unknown>>): string | undefined {
  const alg = header.alg;
  if (typeof alg !== 'string' || !(ASSERTION_ALGORITHMS as readonly string[]).includes(alg))
    return `The assertion must be signed with one of ${ASSERTION_ALGORITHMS.join(', ')}.`;
  if (header.kid !== undefined && !isPlainText(header.kid, MAX_KID_LENGTH))
    return `The assertion’s kid must be the kid of a registered key: text of at most ${MAX_KID_LENGTH} characters.`;
  // RFC 7515 §4.1.11: a critical parameter must be understood, and refhub understands none.
  if (header.crit !== undefined)
    return 'The assertion’s header names critical parameters (crit), which refhub does not take.';
  return undefined;
}

/**
 * What is wrong with the type or form of an assertion's claims, in words for the client's developer,
 * or undefined. Only claims of these forms go further: `iss` is looked up as a client ID, `jti` is
 * stored. Whether they hold (the right client, `aud` and times) is checked after this.
 */
export function assertionClaimsProblem(claims: Readonly<Record<string, unknown>>): string | undefined {
  if (!isClientId(claims.iss))
    return 'The assertion’s iss must be the client ID refhub gave the client (a UUID, in lower case).';
  if (claims.sub !== claims.iss) return 'The assertion’s sub must be the client ID, as its iss.';
  const aud = claims.aud;
  const audiences = Array.isArray(aud) ? (aud as unknown[]) : [aud];
  if (audiences.length === 0 || !audiences.every((value) => typeof value === 'string'))
    return 'The assertion’s aud must be the token endpoint’s URL: a string, or an array of strings.';
  for (const claim of ['exp', 'iat', 'nbf'] as const) {
    const value = claims[claim];
    if (value === undefined && claim !== 'exp') continue;
    if (!isNumericDate(value))
      return `The assertion’s ${claim} must be a finite number of seconds since 1970 (a NumericDate).`;
  }
  if (!isPlainText(claims.jti, MAX_JTI_LENGTH))
    return `The assertion’s jti must be text of 1 to ${MAX_JTI_LENGTH} characters, without control characters.`;
  return undefined;
}
