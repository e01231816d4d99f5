// How an operation declares its responses: one success response (`success`) and the problem+json
// errors every API route can answer (`problems`), each with the headers it carries. The response
// body schemas sit under `content`, which Fastify's serializer and @fastify/swagger both read.
import type { TSchema } from 'typebox';
import { ResponseHeader } from './headers.ts';
import { Problem } from './problem.schema.ts';
import { ref } from './named.ts';

export interface ResponseOptions {
  /** The response carries the referral's `ETag`. */
  readonly etag?: boolean;
  /** The response carries `Location` (a 201 that created a referral). */
  readonly location?: boolean;
  /** The operation is a POST, so it honours Idempotency-Key and may answer with a replay. */
  readonly idempotent?: boolean;
  /** The media type of the body, when it is not application/json (the FHIR view's). */
  readonly contentType?: string;
  /** Headers of this response alone (a file's `Content-Digest`). */
  readonly headers?: Readonly<Record<string, TSchema>>;
}

/** Sent with every API response; the rate-limit headers only once the client is known. */
const EVERY_RESPONSE = {
  'API-Version': ResponseHeader['API-Version'],
  'X-Request-Id': ResponseHeader['X-Request-Id'],
  'RateLimit-Policy': ResponseHeader['RateLimit-Policy'],
  RateLimit: ResponseHeader.RateLimit,
  'Webhook-Subscriptions-Disabled': ResponseHeader['Webhook-Subscriptions-Disabled'],
};

function headersFor(options: ResponseOptions) {
  return {
    ...(options.etag === true ? { ETag: ResponseHeader.ETag } : {}),
    ...(options.location === true ? { Location: ResponseHeader.Location } : {}),
    ...EVERY_RESPONSE,
    ...(options.idempotent === true ? { 'Idempotent-Replayed': ResponseHeader['Idempotent-Replayed'] } : {}),
    ...options.headers,
  };
}

/** The success response of an operation: `schema` as application/json (or `options.contentType`). */
export function success<S extends TSchema>(schema: S, description: string, options: ResponseOptions = {}) {
  return {
    description,
    headers: headersFor(options),
    content: { [options.contentType ?? 'application/json']: { schema } },
  };
}

function problem(description: string, headers: Record<string, TSchema>) {
  return {
    description,
    headers,
    content: { 'application/problem+json': { schema: ref(Problem) } },
  };
}

/**
 * The errors of an API operation. Every one may answer 4xx (the `code` says which) and 5xx; 429 is
 * declared on its own for its Retry-After. A POST may replay a stored 4xx, and its 409
 * `idempotency_key_in_use` says when to retry.
 */
export function problems(options: Pick<ResponseOptions, 'idempotent'> = {}) {
  const replay: Record<string, TSchema> =
    options.idempotent === true
      ? {
          'Retry-After': ResponseHeader['Retry-After'],
          'Idempotent-Replayed': ResponseHeader['Idempotent-Replayed'],
        }
      : {};
  return {
    '4xx': problem(
      'The request was refused; `code` says why (for example 400 `validation_failed` with `errors[]`, 401, ' +
        '403, 404 `referral_not_found`, 409 `invalid_transition`, 410 `referral_archived` with the ' +
        "archive's reference, 412 `version_mismatch`, 422).",
      { ...EVERY_RESPONSE, ...replay },
    ),
    429: problem(
      'Too many requests for this client, the API key or the client of the access token (`rate_limited`). ' +
        'Retry after `Retry-After` seconds.',
      {
        ...EVERY_RESPONSE,
        'Retry-After': ResponseHeader['Retry-After'],
      },
    ),
    '5xx': problem(
      'refhub could not answer (`internal_error`, or `unavailable` with 503). Retry later; retry a POST ' +
        'with the same Idempotency-Key.',
      EVERY_RESPONSE,
    ),
  };
}

/**
 * 503 `uploads_busy`: an upload that found no room within its wait (api/upload-budget.ts), with the
 * Retry-After to wait; nothing of it was stored.
 */
export function uploadsBusy() {
  return problem(
    'No room for this upload within a short wait (`uploads_busy`): `reason` says whose uploads hold it, ' +
      '`credential-share`, `institution-share` or `server-busy`. Nothing was stored; retry after ' +
      '`Retry-After` seconds, with the same Idempotency-Key. Other 5xx as for every operation.',
    { ...EVERY_RESPONSE, 'Retry-After': ResponseHeader['Retry-After'] },
  );
}
