// Signed client credentials: OAuth 2.0's client credentials grant, the client authenticated by a JWT
// it signed with its private key (RFC 7523 `private_key_jwt`, as SMART Backend Services and NHS
// England's API platform profile it). refhub keeps only public keys: a JWKS registered inline, or a
// URL it fetches with the outbound rules of webhooks, remembers, and fetches again when an assertion
// names a key it does not know (a rotation needs no change in refhub). Every JWT and JWK operation is
// jose's; what is refhub's own is which claims it requires and what it grants.
//
// An access token is opaque (`rfh_at_…`, 256 bits), kept as its SHA-256 like an API key, lives at
// most ACCESS_TOKEN_SECONDS, and acts for the client's one institution in the client's role, with the
// scopes asked for. A revoked client's tokens stop working at once, whatever their expiry.
import { createHash, randomBytes } from 'node:crypto';
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  importJWK,
  jwtVerify,
  type JSONWebKeySet,
  type JWK,
} from 'jose';
import { v7 as uuidv7 } from 'uuid';
import type { InstitutionRef } from '../../domain/access.ts';
import type { Clock } from '../../domain/clock.ts';
import {
  ACCESS_TOKEN_SECONDS,
  ASSERTION_ALGORITHMS,
  CLIENT_CREDENTIALS_GRANT,
  CLOCK_TOLERANCE_SECONDS,
  JWT_BEARER_ASSERTION,
  MAX_ASSERTION_SECONDS,
  assertionClaimsProblem,
  assertionHeaderProblem,
  isClientId,
  parseScopes,
  type Scope,
} from '../../domain/client-credentials.ts';
import type { Role } from '../../domain/statuses.ts';
import { NotFoundError, OAuthError, ValidationError } from '../../errors.ts';
import type { ClientKeySource, ClientRecord, TokenRecord } from '../../db/client-credentials.repository.ts';
import type { Stores } from '../../db/stores.ts';
import { unknownToCatalog } from '../catalog/names.ts';
import { checkEndpointUrl, type EndpointPolicy } from '../webhooks/endpoint-policy.ts';

/** Fetches a client's JWKS from its URL: the same outbound rules as webhooks (composition's). */
export type JwksFetcher = (url: string) => Promise<unknown>;

export interface ClientCredentialsDeps {
  /** Clients, their keys and tokens; a client is a credential row beside the API keys, checked against the catalog. */
  readonly stores: Pick<Stores, 'clientCredentials' | 'catalog' | 'transaction'>;
  readonly clock: Clock;
  /** The token endpoint's URL: the `aud` every assertion must name. */
  readonly tokenUrl: string;
  readonly fetchJwks: JwksFetcher;
  /** What a JWKS URL may be: the rules of a webhook's URL. */
  readonly endpoints: EndpointPolicy;
}

export interface NewClientRequest {
  readonly system: string;
  readonly role: Extract<Role, 'sender' | 'provider'>;
  readonly institution: InstitutionRef;
  readonly label?: string | undefined;
  readonly keys: ClientKeySource;
}

export interface IssuedToken {
  readonly access_token: string;
  readonly token_type: 'Bearer';
  readonly expires_in: number;
  readonly scope: string;
}

const TOKEN_PATTERN = /^rfh_at_[0-9A-Za-z_-]{43}$/;
/** A URL's keys are fetched again on an unknown `kid` at most this often, so a stream of bad kids cannot make refhub hammer it. */
export const JWKS_REFRESH_MIN_MS = 10_000;
/** How long fetched keys are used before they are fetched again, whatever the assertions name. */
export const JWKS_MAX_AGE_MS = 60 * 60_000;

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** A JWKS as registered: each key public, asymmetric, with a `kid`, importable by jose; else a 400 naming it. */
export async function checkedJwks(value: unknown, path: string): Promise<JSONWebKeySet> {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new ValidationError([{ path, message: 'must be a JWKS: an object with a non-empty "keys" array' }]);
  }
  const problems: { path: string; message: string }[] = [];
  const kids = new Set<string>();
  for (const [index, key] of (keys as unknown[]).entries()) {
    const where = `${path}/keys/${index}`;
    if (typeof key !== 'object' || key === null) {
      problems.push({ path: where, message: 'is not a JWK' });
      continue;
    }
    const jwk = key as JWK;
    if (jwk.kty !== 'RSA' && jwk.kty !== 'EC') {
      problems.push({ path: where, message: 'must be an RSA or EC public key' });
      continue;
    }
    if ('d' in jwk || 'p' in jwk || 'k' in jwk) {
      problems.push({ path: where, message: 'holds a private key: register the public key only' });
      continue;
    }
    if (typeof jwk.kid !== 'string' || jwk.kid === '') {
      problems.push({ path: where, message: 'needs a "kid"' });
      continue;
    }
    if (kids.has(jwk.kid)) problems.push({ path: where, message: `repeats kid ${jwk.kid}` });
    kids.add(jwk.kid);
    try {
      await importJWK(jwk, jwk.alg ?? (jwk.kty === 'EC' ? 'ES384' : 'RS384'));
    } catch (error) {
      problems.push({ path: where, message: `cannot be read as a key: ${(error as Error).message}` });
    }
  }
  if (problems.length > 0) throw new ValidationError(problems);
  return { keys: keys as JWK[] };
}

export function createClientCredentials(deps: ClientCredentialsDeps) {
  const repo = () => deps.stores.clientCredentials;
  /** Keys fetched from clients' URLs, by client: the set and when it was fetched (clock milliseconds). */
  const fetched = new Map<
    string,
    { readonly url: string; readonly set: JSONWebKeySet; readonly at: number }
  >();

  /** Keys as registered: an inline JWKS checked key by key, or a URL a webhook could be sent to. */
  async function checkedKeys(keys: ClientKeySource): Promise<ClientKeySource> {
    if (keys.kind === 'inline') return { kind: 'inline', jwks: await checkedJwks(keys.jwks, 'jwk') };
    return { kind: 'url', url: await checkEndpointUrl(keys.url, deps.endpoints, 'jwks-url') };
  }

  async function keysOf(client: ClientRecord, refresh: boolean): Promise<JSONWebKeySet> {
    if (client.keys.kind === 'inline') return client.keys.jwks as JSONWebKeySet;
    const now = deps.clock.now().getTime();
    const url = client.keys.url;
    // Keys fetched from another URL (the client's was changed since) are not the client's now.
    const cached = fetched.get(client.id);
    const known = cached?.url === url ? cached : undefined;
    const stale = known === undefined || now - known.at >= JWKS_MAX_AGE_MS || now < known.at;
    if (!stale && !(refresh && now - known.at >= JWKS_REFRESH_MIN_MS)) return known.set;
    let set: JSONWebKeySet;
    try {
      set = await checkedJwks(await deps.fetchJwks(url), 'jwks');
    } catch (error) {
      // Keys fetched before stay in use while the URL fails, until they are too old.
      if (known !== undefined && !stale) return known.set;
      throw new OAuthError(
        'invalid_client',
        `The client's JWKS could not be fetched from its URL: ${(error as Error).message}`,
      );
    }
    fetched.set(client.id, { url, set, at: now });
    return set;
  }

  /** The assertion's claims once verified against the client's keys; an OAuthError says why not. */
  async function verify(client: ClientRecord, assertion: string) {
    const options = {
      issuer: client.id,
      subject: client.id,
      audience: deps.tokenUrl,
      algorithms: [...ASSERTION_ALGORITHMS],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      currentDate: deps.clock.now(),
      requiredClaims: ['exp', 'jti'],
    };
    const attempt = async (refresh: boolean) =>
      jwtVerify(assertion, createLocalJWKSet(await keysOf(client, refresh)), options);
    try {
      try {
        return (await attempt(false)).payload;
      } catch (error) {
        // A key the client has added since the keys were fetched: fetch them again, once.
        if (error instanceof joseErrors.JWKSNoMatchingKey && client.keys.kind === 'url')
          return (await attempt(true)).payload;
        throw error;
      }
    } catch (error) {
      if (error instanceof OAuthError) throw error;
      throw new OAuthError('invalid_client', assertionProblem(error, deps.tokenUrl));
    }
  }

  /** The token for a request whose assertion names `client` (undefined: no client refhub knows). */
  async function issue(
    form: Readonly<Record<string, string | undefined>>,
    assertion: DecodedAssertion | undefined,
    client: ClientRecord | undefined,
  ): Promise<{ readonly token: IssuedToken; readonly client: ClientRecord }> {
    if (form.grant_type !== CLIENT_CREDENTIALS_GRANT) {
      throw form.grant_type === undefined
        ? new OAuthError('invalid_request', 'grant_type is required: client_credentials.')
        : new OAuthError('unsupported_grant_type', 'Only grant_type=client_credentials is supported.');
    }
    if (form.client_assertion_type !== JWT_BEARER_ASSERTION) {
      throw new OAuthError(
        'invalid_client',
        `Authenticate with a signed assertion: client_assertion_type=${JWT_BEARER_ASSERTION}.`,
      );
    }
    if (form.client_assertion === undefined)
      throw new OAuthError('invalid_client', 'client_assertion is required.');
    if (assertion === undefined) throw new OAuthError('invalid_client', 'client_assertion is not a JWT.');
    const problem = assertionHeaderProblem(assertion.header) ?? assertionClaimsProblem(assertion.claims);
    if (problem !== undefined) throw new OAuthError('invalid_client', problem);
    if (form.client_id !== undefined && form.client_id !== assertion.claims.iss) {
      throw new OAuthError(
        'invalid_client',
        'client_id, when it is sent, must be the client ID the assertion names as iss and sub.',
      );
    }
    if (client === undefined || client.revokedAt !== null)
      throw new OAuthError('invalid_client', 'The client is unknown or has been revoked.');
    const scopes = parseScopes(form.scope);
    if ('malformed' in scopes) {
      throw new OAuthError(
        'invalid_scope',
        'scope must be scope names separated by spaces: system/Referral.read, system/Referral.write.',
      );
    }
    if ('unknown' in scopes) {
      throw new OAuthError(
        'invalid_scope',
        `Scope ${scopes.unknown} is not one refhub grants: system/Referral.read, system/Referral.write.`,
      );
    }
    const claims = await verify(client, assertion.compact);
    const now = deps.clock.now();
    const nowSeconds = Math.floor(now.getTime() / 1000);
    // Both were checked to be finite numbers (assertionClaimsProblem), and exp to be there.
    const exp = claims.exp ?? 0;
    if (exp - nowSeconds > MAX_ASSERTION_SECONDS + CLOCK_TOLERANCE_SECONDS) {
      throw new OAuthError(
        'invalid_client',
        `The assertion may live at most ${MAX_ASSERTION_SECONDS} seconds: its exp is too far ahead.`,
      );
    }
    if (claims.iat !== undefined && claims.iat > nowSeconds + CLOCK_TOLERANCE_SECONDS)
      throw new OAuthError('invalid_client', 'The assertion was issued in the future (iat).');
    // A string of bounded length without control characters (assertionClaimsProblem).
    const jti = String(claims.jti);
    // Kept until the assertion expires: a replay within its life is refused; after it, exp is.
    const expiresAt = new Date((exp + CLOCK_TOLERANCE_SECONDS) * 1000);
    if (!(await repo().acceptAssertion(client.id, jti, expiresAt)))
      throw new OAuthError(
        'invalid_client',
        'This assertion was used already: sign a new one, with a new jti.',
      );
    const token = `rfh_at_${randomBytes(32).toString('base64url')}`;
    const institution = client.institutions[0];
    if (institution === undefined) throw new Error(`client ${client.id} has no institution`);
    await repo().insertToken({
      hash: hashToken(token),
      clientId: client.id,
      institution,
      scopes: scopes.scopes,
      issuedAt: now,
      expiresAt: new Date(now.getTime() + ACCESS_TOKEN_SECONDS * 1000),
    });
    return {
      token: {
        access_token: token,
        token_type: 'Bearer',
        expires_in: ACCESS_TOKEN_SECONDS,
        scope: scopes.scopes.join(' '),
      },
      client,
    };
  }

  return {
    /** Registers a client for one institution of the catalog, in a role; its keys are checked now. */
    async register(request: NewClientRequest): Promise<ClientRecord> {
      const problems = await unknownToCatalog(deps.stores.catalog, request.system, [request.institution]);
      if (problems.length > 0) throw new ValidationError(problems);
      const keys = await checkedKeys(request.keys);
      const id = uuidv7();
      await deps.stores.transaction((tx) =>
        tx.clientCredentials.insertClient({
          id,
          system: request.system,
          role: request.role,
          label: request.label ?? null,
          institution: request.institution,
          keys,
          now: deps.clock.now(),
        }),
      );
      const client = await repo().findClient(id);
      if (client === undefined) throw new Error(`client ${id} vanished while it was registered`);
      return client;
    },

    list: () => repo().listClients(),

    /** Replaces a client's keys: the rotation of an inline JWKS (a URL's keys rotate by themselves). */
    async setKeys(id: string, source: ClientKeySource): Promise<ClientRecord> {
      const keys = await checkedKeys(source);
      if (!(await repo().setKeys(id, keys, deps.clock.now())))
        throw new NotFoundError(`No active client has the ID ${id}.`);
      fetched.delete(id);
      const client = await repo().findClient(id);
      if (client === undefined) throw new NotFoundError(`No active client has the ID ${id}.`);
      return client;
    },

    /**
     * Revokes an active client by its ID or display prefix. A client is a credential row, so this is
     * what revoking an API key is; the access tokens it holds stop working at once, as every token
     * lookup requires its client unrevoked.
     */
    async revoke(idOrPrefix: string): Promise<ClientRecord> {
      const revoked = await deps.stores.transaction(async (tx) => {
        const keys = tx.apiKeys;
        const [match, ...others] = await keys.findActiveByIdOrPrefix(idOrPrefix, 'client');
        if (!match) throw new NotFoundError(`No active client has the ID or prefix ${idOrPrefix}.`);
        if (others.length > 0) {
          throw new ValidationError([
            { path: 'id', message: `prefix ${idOrPrefix} matches several clients; use the ID` },
          ]);
        }
        await keys.revoke(match.id, deps.clock.now());
        return tx.clientCredentials.findClient(match.id);
      });
      if (revoked === undefined) throw new Error(`client ${idOrPrefix} vanished while it was revoked`);
      fetched.delete(revoked.id);
      return revoked;
    },

    /**
     * The token endpoint (RFC 6749 §4.4 with RFC 7523 §2.2 client authentication): checks the
     * request's form, the client, its signed assertion and the scopes, and issues an access token.
     * A refusal is an `OAuthError` that names the client the assertion names when refhub knows it,
     * so that the refusal can be audited under that client.
     *
     * The client is looked up first, so that every refusal after it is the client's; it is looked up
     * only by an `iss` of a client ID's form, and nothing else the request sends reaches the database
     * before each claim has been checked for type and form (`assertionClaimsProblem`).
     */
    async issueToken(sent: Readonly<Record<string, string | undefined>>): Promise<{
      readonly token: IssuedToken;
      readonly client: ClientRecord;
    }> {
      // A field sent empty is one not sent (RFC 6749 §3.1).
      const form = Object.fromEntries(Object.entries(sent).filter(([, value]) => value !== ''));
      const assertion = decodedAssertion(form.client_assertion);
      const iss = assertion?.claims.iss;
      const client = isClientId(iss) ? await repo().findClient(iss) : undefined;
      try {
        return await issue(form, assertion, client);
      } catch (error) {
        if (error instanceof OAuthError) throw error.of(client);
        throw error;
      }
    },

    /** The active token presented as `Bearer …`, or undefined. */
    async authenticate(presented: string): Promise<TokenRecord | undefined> {
      if (!TOKEN_PATTERN.test(presented)) return undefined;
      return repo().findActiveToken(hashToken(presented), deps.clock.now());
    },
  };
}

interface DecodedAssertion {
  readonly compact: string;
  readonly header: Readonly<Record<string, unknown>>;
  readonly claims: Readonly<Record<string, unknown>>;
}

/**
 * The header and claims of an assertion, as jose decodes them before anything is verified; undefined
 * when it is not a JWT (not three base64url parts, a header or claims that are not a JSON object).
 */
function decodedAssertion(compact: string | undefined): DecodedAssertion | undefined {
  if (compact === undefined) return undefined;
  try {
    return { compact, header: decodeProtectedHeader(compact), claims: decodeJwt(compact) };
  } catch {
    return undefined;
  }
}

/**
 * What was wrong with an assertion jose refused, in words for the client's developer: for a wrong
 * `aud`, the URL it must be (a proxy in front of refhub makes the one a client sees easy to get wrong).
 */
function assertionProblem(error: unknown, tokenUrl: string): string {
  if (error instanceof joseErrors.JWTExpired) return 'The assertion has expired (exp).';
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return 'No registered key of the client matches the assertion’s kid and alg.';
  if (error instanceof joseErrors.JOSEAlgNotAllowed)
    return `The assertion must be signed with one of ${ASSERTION_ALGORITHMS.join(', ')}.`;
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return `The assertion’s aud must be the token endpoint’s URL, ${tokenUrl}.`;
    if (error.claim === 'nbf') return 'The assertion is not valid yet (nbf).';
    if (error.claim === 'iat') return 'The assertion was issued in the future (iat).';
    return `The assertion’s ${error.claim} claim is missing or wrong.`;
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return 'The assertion’s signature does not verify with the client’s key.';
  if (error instanceof joseErrors.JOSEError) return `The assertion is not valid: ${error.code}.`;
  return 'The assertion is not valid.';
}

export type ClientCredentials = ReturnType<typeof createClientCredentials>;
export type { Scope };
