// Signed client credentials: instead of an API key, the client holds a private key whose public half
// is registered with refhub, and gets short-lived access tokens from refhub's token endpoint (OAuth
// 2.0 client credentials, the client authenticated by a JWT it signs, RFC 7523 `private_key_jwt`, as
// SMART Backend Services profile it). Every JWT and key operation is jose's.
//
// - Each token request carries a freshly signed assertion: `iss` = `sub` = the client ID, `aud` the
//   token endpoint's URL, a new random `jti`, `iat` now and `exp` a minute later. A request that got
//   no answer is sent again with a new assertion, so refhub never sees a `jti` twice.
// - A token is kept until 30 seconds before it expires (half its life for a short one), and the next
//   call after that gets a new one first. Calls made while a token is on its way share that request.
// - A call refused 401 with a token (refhub revoked it, or it expired in flight) gets a new token
//   and is sent once more. A token endpoint that refuses is a `RefhubTokenError`.
import { importJWK, SignJWT, type CryptoKey, type JWK, type KeyObject } from 'jose';
import { RefhubNetworkError, RefhubTokenError, tokenError } from './problems.ts';
import {
  backoff,
  RETRY_STATUSES,
  retryAfterMs,
  sleep,
  type AttemptReport,
  type Fetch,
  type Settings,
} from './retrying-fetch.ts';

/** The algorithms refhub takes for an assertion. */
export type AssertionAlgorithm = 'RS384' | 'ES384' | 'PS384' | 'RS256' | 'ES256' | 'PS256';

const ALGORITHMS: readonly string[] = ['RS384', 'ES384', 'PS384', 'RS256', 'ES256', 'PS256'];

export interface ClientCredentialsOptions {
  /** The client's ID, as refhub gave it at registration (a UUID): the `iss` and `sub` of assertions. */
  readonly clientId: string;
  /**
   * The private key of the registered public key: a Web Crypto `CryptoKey`, a Node.js `KeyObject`,
   * or a private JWK (imported once, with jose's `importJWK`).
   */
  readonly privateKey: CryptoKey | KeyObject | JWK;
  /** The `kid` of the registered public key; the private JWK's own `kid` by default. */
  readonly kid?: string;
  /**
   * The signature algorithm. By default the JWK's `alg`, else from the key: ES384 for a P-384 key
   * (ES256 for P-256), RS384 for RSA, PS384 for RSA-PSS, or what a Web Crypto key was made for.
   */
  readonly alg?: AssertionAlgorithm;
  /** The scopes to ask for, space-separated; refhub grants both when absent. */
  readonly scope?: string;
  /** Where to ask for tokens; `<baseUrl>/oauth2/token` by default. */
  readonly tokenUrl?: string;
  /**
   * The `aud` of assertions: the token endpoint's public URL as refhub knows it (its PUBLIC_URL with
   * `/oauth2/token`). `tokenUrl` by default; set it when this client reaches refhub by another URL.
   */
  readonly audience?: string;
}

/** The access tokens of one client, got when needed and kept while they last. */
export interface TokenSource {
  /** A token to send: the one kept, or a new one. */
  token(signal?: AbortSignal): Promise<string>;
  /** A token other than `rejected`, which refhub refused. */
  renew(rejected: string, signal?: AbortSignal): Promise<string>;
}

/** A token is replaced this long before it expires, or at half its life when that is sooner. */
const REFRESH_MARGIN_SECONDS = 30;
/** Assertions live this long: long enough for a slow network, far below refhub's limit of 300 s. */
const ASSERTION_SECONDS = 60;
const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

interface SigningKey {
  readonly alg: AssertionAlgorithm;
  readonly kid: string;
  readonly key: () => Promise<CryptoKey | KeyObject | Uint8Array>;
}

function isJwk(key: CryptoKey | KeyObject | JWK): key is JWK {
  return typeof (key as { kty?: unknown }).kty === 'string';
}

function checkedAlg(alg: string, where: string): AssertionAlgorithm {
  if (!ALGORITHMS.includes(alg)) {
    throw new TypeError(`${where} is ${alg}; refhub takes assertions signed with ${ALGORITHMS.join(', ')}`);
  }
  return alg as AssertionAlgorithm;
}

const EC_ALGORITHMS: Readonly<Record<string, AssertionAlgorithm>> = {
  'P-256': 'ES256',
  prime256v1: 'ES256',
  'P-384': 'ES384',
  secp384r1: 'ES384',
};

/** The algorithm a key that names none is used with. */
function algorithmOf(key: CryptoKey | KeyObject | JWK): AssertionAlgorithm | undefined {
  if (isJwk(key)) {
    if (key.kty === 'EC') return EC_ALGORITHMS[key.crv ?? ''] ?? 'ES384';
    return key.kty === 'RSA' ? 'RS384' : undefined;
  }
  const { algorithm } = key as {
    algorithm?: { name?: string; namedCurve?: string; hash?: { name?: string } };
  };
  if (algorithm !== undefined) {
    // A Web Crypto key is bound to its algorithm and, for RSA, to its hash.
    const bits = algorithm.hash?.name === 'SHA-256' ? '256' : '384';
    if (algorithm.name === 'ECDSA') return EC_ALGORITHMS[algorithm.namedCurve ?? ''];
    if (algorithm.name === 'RSASSA-PKCS1-v1_5') return `RS${bits}`;
    if (algorithm.name === 'RSA-PSS') return `PS${bits}`;
    return undefined;
  }
  const { asymmetricKeyType: type, asymmetricKeyDetails: details } = key as {
    asymmetricKeyType?: string;
    asymmetricKeyDetails?: { namedCurve?: string };
  };
  if (type === 'ec') return EC_ALGORITHMS[details?.namedCurve ?? ''];
  if (type === 'rsa') return 'RS384';
  return type === 'rsa-pss' ? 'PS384' : undefined;
}

/** The key, algorithm and kid assertions are signed with; a TypeError now for what cannot work. */
export function signingKey(options: ClientCredentialsOptions): SigningKey {
  const { privateKey } = options;
  if (isJwk(privateKey)) {
    if (privateKey.d === undefined) {
      throw new TypeError('clientCredentials.privateKey is a public JWK: pass the private key (with "d")');
    }
  } else if (privateKey.type !== 'private') {
    throw new TypeError(`clientCredentials.privateKey is a ${privateKey.type} key: pass the private key`);
  }
  const alg =
    options.alg === undefined
      ? isJwk(privateKey) && privateKey.alg !== undefined
        ? checkedAlg(privateKey.alg, "clientCredentials.privateKey's alg")
        : algorithmOf(privateKey)
      : checkedAlg(options.alg, 'clientCredentials.alg');
  if (alg === undefined) {
    throw new TypeError('clientCredentials.privateKey is not an RSA, P-256 or P-384 key: name its alg');
  }
  const kid = options.kid ?? (isJwk(privateKey) ? privateKey.kid : undefined);
  if (kid === undefined || kid === '') {
    throw new TypeError(
      'clientCredentials.kid is required: the kid of the public key registered with refhub',
    );
  }
  let imported: Promise<CryptoKey | Uint8Array> | undefined;
  return {
    alg,
    kid,
    key: isJwk(privateKey)
      ? () => (imported ??= importJWK(privateKey, alg))
      : () => Promise.resolve(privateKey),
  };
}

/** A new assertion: one minute long, with its own `jti`. */
async function assertion(options: ClientCredentialsOptions, signing: SigningKey, audience: string) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: signing.alg, kid: signing.kid, typ: 'JWT' })
    .setIssuer(options.clientId)
    .setSubject(options.clientId)
    .setAudience(audience)
    .setJti(crypto.randomUUID())
    .setIssuedAt(now)
    .setExpirationTime(now + ASSERTION_SECONDS)
    .sign(await signing.key());
}

interface Issued {
  readonly token: string;
  readonly expiresIn: number;
}

/** An issued token from a 200 answer; a RefhubTokenError when the answer is not one. */
async function issuedOf(response: Response): Promise<Issued> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  const {
    access_token: token,
    token_type: type,
    expires_in: expiresIn,
  } = (body ?? {}) as Record<string, unknown>;
  if (
    typeof token !== 'string' ||
    token === '' ||
    typeof type !== 'string' ||
    type.toLowerCase() !== 'bearer' ||
    typeof expiresIn !== 'number' ||
    !(expiresIn > 0)
  ) {
    throw new RefhubTokenError(
      response.status,
      'invalid_token_response',
      'The token endpoint answered without a Bearer access_token and its expires_in.',
    );
  }
  return { token, expiresIn };
}

/** Waits for `promise`, or rejects when `signal` aborts first (the promise goes on for others). */
function until<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = () => {
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

export interface TokenSourceDeps {
  readonly credentials: ClientCredentialsOptions;
  /** refhub's base URL, without a trailing slash. */
  readonly baseUrl: string;
  readonly fetch: Fetch;
  readonly settings: Settings;
  readonly report: (attempt: AttemptReport) => void;
}

export function tokenSource(deps: TokenSourceDeps): TokenSource {
  const { credentials, settings, report } = deps;
  const signing = signingKey(credentials);
  const tokenUrl = credentials.tokenUrl ?? `${deps.baseUrl}/oauth2/token`;
  const audience = credentials.audience ?? tokenUrl;
  const path = new URL(tokenUrl).pathname;
  let kept: { readonly token: string; readonly renewAt: number } | undefined;
  let pending: Promise<string> | undefined;

  /** One token request, retried as API calls are, with a new assertion each time. */
  async function obtain(): Promise<Issued> {
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= settings.attempts;
      const form = new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: credentials.clientId,
        client_assertion_type: JWT_BEARER,
        client_assertion: await assertion(credentials, signing, audience),
      });
      if (credentials.scope !== undefined) form.set('scope', credentials.scope);
      let response: Response;
      try {
        response = await deps.fetch(
          new Request(tokenUrl, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
            body: form.toString(),
            signal: AbortSignal.timeout(settings.attemptTimeoutMs),
          }),
        );
      } catch (error) {
        const reason = (error as { name?: unknown } | null)?.name === 'TimeoutError' ? 'timeout' : 'network';
        if (last) {
          report({ method: 'POST', path, attempt, replayed: false, error: reason });
          throw new RefhubNetworkError(reason, attempt, error);
        }
        const delay = backoff(settings, attempt);
        report({ method: 'POST', path, attempt, replayed: false, error: reason, retryInMs: delay });
        await sleep(delay, null);
        continue;
      }
      const retryable = RETRY_STATUSES.has(response.status);
      const asked = retryable ? retryAfterMs(response) : undefined;
      if (!retryable || last || (asked !== undefined && asked > settings.maxDelayMs)) {
        report({ method: 'POST', path, attempt, status: response.status, replayed: false });
        if (response.ok) return issuedOf(response);
        throw await tokenError(response);
      }
      const delay = asked ?? backoff(settings, attempt);
      report({ method: 'POST', path, attempt, status: response.status, replayed: false, retryInMs: delay });
      await response.body?.cancel();
      await sleep(delay, null);
    }
  }

  /** The token request under way, or a new one: callers waiting at the same time share it. */
  function requested(): Promise<string> {
    pending ??= (async () => {
      try {
        const { token, expiresIn } = await obtain();
        const margin = Math.min(REFRESH_MARGIN_SECONDS, expiresIn / 2);
        kept = { token, renewAt: performance.now() + (expiresIn - margin) * 1000 };
        return token;
      } finally {
        pending = undefined;
      }
    })();
    return pending;
  }

  const source: TokenSource = {
    token(signal) {
      if (kept !== undefined && performance.now() < kept.renewAt) return Promise.resolve(kept.token);
      return until(requested(), signal);
    },
    renew(rejected, signal) {
      // Another call may have replaced it already; then that token is the one to use.
      if (kept?.token === rejected) kept = undefined;
      return source.token(signal);
    },
  };
  return source;
}

/**
 * A fetch that sends each call with a token as `Authorization: Bearer …`, and a call refused 401 once
 * more with a new token. `inner` retries as ever; the request is cloned for each send, so its body is
 * there for the second.
 */
export function bearerFetch(inner: Fetch, tokens: TokenSource): Fetch {
  const withToken = (request: Request, token: string) => {
    const copy = request.clone();
    copy.headers.set('authorization', `Bearer ${token}`);
    return copy;
  };
  return async (request) => {
    const token = await tokens.token(request.signal);
    const response = await inner(withToken(request, token));
    if (response.status !== 401) return response;
    await response.body?.cancel();
    const fresh = await tokens.renew(token, request.signal);
    return inner(withToken(request, fresh));
  };
}
