// The entry point: `createRefhubClient` gives the generated openapi-fetch client for every operation
// (`api`), authenticated and retried, and `actingFor` for the common work of a clinic system. It
// authenticates with an API key, or with signed client credentials (client-credentials.ts).
import createClient, { type Client } from 'openapi-fetch';
import { bearerFetch, tokenSource, type ClientCredentialsOptions } from './client-credentials.ts';
import { InstitutionClient } from './institution-client.ts';
import type { ActingFor } from './models.ts';
import type { paths } from './openapi.generated.ts';
import {
  retryingFetch,
  settingsOf,
  type AttemptReport,
  type Fetch,
  type RetryPolicy,
} from './retrying-fetch.ts';

interface CommonOptions {
  /** Where refhub answers, such as `https://refhub.example.org` (the operations' paths carry `/api/v1`). */
  readonly baseUrl: string;
  readonly retry?: RetryPolicy;
  /** Called after every attempt, with its outcome and whether another follows. */
  readonly onAttempt?: (attempt: AttemptReport) => void;
  /** Makes Idempotency-Keys; a random UUID by default. */
  readonly newIdempotencyKey?: () => string;
  /** The fetch to send requests with (token requests too); the global fetch by default. */
  readonly fetch?: Fetch;
}

/** Authenticated with an API key. */
export interface ApiKeyClientOptions extends CommonOptions {
  /** The API key, sent as `Authorization: ApiKey <key>`. */
  readonly apiKey: string;
  readonly clientCredentials?: never;
}

/** Authenticated with signed client credentials: access tokens got with a private key. */
export interface ClientCredentialsClientOptions extends CommonOptions {
  /** The client's ID and private key; its access tokens are sent as `Authorization: Bearer <token>`. */
  readonly clientCredentials: ClientCredentialsOptions;
  readonly apiKey?: never;
}

/** One way to authenticate: an API key, or signed client credentials. */
export type RefhubClientOptions = ApiKeyClientOptions | ClientCredentialsClientOptions;

export interface RefhubClient {
  /** Every operation of the OpenAPI document, typed; answers are `{ data }` or `{ error }`. */
  readonly api: Client<paths>;
  /** Calls for one institution, on behalf of one person. */
  actingFor(who: ActingFor): InstitutionClient;
}

export function createRefhubClient(options: RefhubClientOptions): RefhubClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const base: Fetch = options.fetch ?? ((request) => fetch(request));
  const report = options.onAttempt ?? (() => undefined);
  const retrying = retryingFetch(base, options.retry, report);
  // Checked here too, for callers whose compiler did not.
  const { apiKey, clientCredentials } = options as {
    readonly apiKey?: string;
    readonly clientCredentials?: ClientCredentialsOptions;
  };
  if ((apiKey === undefined) === (clientCredentials === undefined))
    throw new TypeError('Pass one of apiKey and clientCredentials');
  const api =
    clientCredentials === undefined
      ? createClient<paths>({ baseUrl, headers: { Authorization: `ApiKey ${apiKey}` }, fetch: retrying })
      : createClient<paths>({
          baseUrl,
          fetch: bearerFetch(
            retrying,
            tokenSource({
              credentials: clientCredentials,
              baseUrl,
              fetch: base,
              settings: settingsOf(options.retry),
              report,
            }),
          ),
        });
  const newKey = options.newIdempotencyKey ?? (() => crypto.randomUUID());
  return { api, actingFor: (who) => new InstitutionClient(api, who, newKey) };
}
