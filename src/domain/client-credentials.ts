// Signed client credentials (OAuth 2.0 client credentials with `private_key_jwt`, RFC 7523, as SMART
// Backend Services profile them): what a client asks for and what refhub grants, as pure rules. The
// JWT work itself is jose's (services/client-credentials.service.ts).

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

/** The scopes a space-separated `scope` names, or the unknown one it names first. */
export function parseScopes(
  scope: string | undefined,
): { readonly scopes: Scope[] } | { readonly unknown: string } {
  if (scope === undefined || scope.trim() === '') return { scopes: [...SCOPES] };
  const scopes: Scope[] = [];
  for (const word of scope.trim().split(/\s+/)) {
    if (!(SCOPES as readonly string[]).includes(word)) return { unknown: word };
    if (!scopes.includes(word as Scope)) scopes.push(word as Scope);
  }
  return { scopes };
}
