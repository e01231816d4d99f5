// The entry point: `createRefhubClient` gives the generated openapi-fetch client for every operation
// (`api`), authenticated and retried, and `actingFor` for the common work of a clinic system.
import createClient, { type Client } from 'openapi-fetch';
import { InstitutionClient } from './institution-client.ts';
import type { ActingFor } from './models.ts';
import type { paths } from './openapi.generated.ts';
import { retryingFetch, type AttemptReport, type Fetch, type RetryPolicy } from './retrying-fetch.ts';

export interface RefhubClientOptions {
  /** Where refhub answers, such as `https://refhub.example.org` (the operations' paths carry `/api/v1`). */
  readonly baseUrl: string;
  /** The API key, sent as `Authorization: ApiKey <key>`. */
  readonly apiKey: string;
  readonly retry?: RetryPolicy;
  /** Called after every attempt, with its outcome and whether another follows. */
  readonly onAttempt?: (attempt: AttemptReport) => void;
  /** Makes Idempotency-Keys; a random UUID by default. */
  readonly newIdempotencyKey?: () => string;
  /** The fetch to send requests with; the global fetch by default. */
  readonly fetch?: Fetch;
}

export interface RefhubClient {
  /** Every operation of the OpenAPI document, typed; answers are `{ data }` or `{ error }`. */
  readonly api: Client<paths>;
  /** Calls for one institution, on behalf of one person. */
  actingFor(who: ActingFor): InstitutionClient;
}

export function createRefhubClient(options: RefhubClientOptions): RefhubClient {
  const base: Fetch = options.fetch ?? ((request) => fetch(request));
  const api = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { Authorization: `ApiKey ${options.apiKey}` },
    fetch: retryingFetch(base, options.retry, options.onAttempt ?? (() => undefined)),
  });
  const newKey = options.newIdempotencyKey ?? (() => crypto.randomUUID());
  return { api, actingFor: (who) => new InstitutionClient(api, who, newKey) };
}
