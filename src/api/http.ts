// Small HTTP conventions shared by the routes: ETag/If-Match (contract §4) and the institution a
// request acts for.
import type { FastifyRequest } from 'fastify';
import { ValidationError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The headers a successful answer carries, from its body: applied to the live response and
     * stored with it for Idempotency-Key replays, so both carry the same ones.
     */
    responseHeaders?: ResponseHeaders;
  }
}

export type ResponseHeaders = (body: never) => Readonly<Record<string, string>>;

export const API_PREFIX = '/api/v1';

/** The largest request body, but where a route says otherwise (an attachment's upload). */
export const BODY_LIMIT = 256 * 1024;

/** A body limit as a sentence says it: "256 KiB", "10 MiB". */
export function sizeLimitWords(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${Math.round(bytes / 1024)} KiB`;
}

/** Authentication, rate limits and audit apply to these routes; health checks and docs are open. */
export function isApiRoute(request: FastifyRequest): boolean {
  return request.routeOptions.url?.startsWith(`${API_PREFIX}/`) === true;
}

/**
 * The version If-Match asks for; undefined when absent or `*`. Exactly one ETag, as refhub sends it
 * (`W/"3"`), or its strong form (`"3"`): the version names the referral's state, which is all a
 * compare-and-set needs (see referralHeaders).
 */
export function ifMatchOf(request: FastifyRequest): number | undefined {
  const header = request.headers['if-match'];
  if (header === undefined || header.trim() === '*') return undefined;
  const match = /^\s*(?:W\/)?"([0-9]{1,9})"\s*$/.exec(header);
  if (!match) {
    throw new ValidationError([
      { path: 'header.If-Match', message: 'must be one ETag as sent in the ETag header, such as "3"' },
    ]);
  }
  return Number(match[1]);
}

/** The headers the route declares for `body` (see FastifyContextConfig.responseHeaders). */
export function responseHeadersOf(request: FastifyRequest, body: unknown): Readonly<Record<string, string>> {
  return request.routeOptions.config.responseHeaders?.(body as never) ?? {};
}

/**
 * A response that carries a referral carries its version as ETag (contract §4). The ETag is weak, as
 * FHIR's and the NHS e-Referral Service's are: the version changes with every change to the
 * referral, but the bridge's bookkeeping (a delivery, a reminder) adds to the timeline without a new
 * version, so two answers with the same ETag mean the same referral, not the same bytes.
 */
export const referralHeaders = (referral: { readonly version: number }) => ({
  etag: `W/"${referral.version}"`,
});

/** A created referral also says where it lives. */
export const createdReferralHeaders = (referral: { readonly id: string; readonly version: number }) => ({
  ...referralHeaders(referral),
  location: `${API_PREFIX}/referrals/${referral.id}`,
});

export function institutionOf(source: { institutionIdType: string; institutionId: string }) {
  return { idType: source.institutionIdType, id: source.institutionId };
}
