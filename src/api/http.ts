// Small HTTP conventions shared by the routes: ETag/If-Match (contract §4) and the institution a
// request acts for.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ValidationError } from '../errors.ts';

export const API_PREFIX = '/api/v1';

/** Authentication, rate limits and audit apply to these routes; health checks and docs are open. */
export function isApiRoute(request: FastifyRequest): boolean {
  return request.routeOptions.url?.startsWith(`${API_PREFIX}/`) === true;
}

/**
 * The version If-Match asks for; undefined when absent or `*`. Exactly one ETag, quoted as refhub
 * sends it (`"3"`; the weak form `W/"3"` is accepted too, since a version is the whole state).
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

export function withEtag<T extends { version: number }>(reply: FastifyReply, resource: T): T {
  void reply.header('ETag', `"${resource.version}"`);
  return resource;
}

export function institutionOf(source: { institutionIdType: string; institutionId: string }) {
  return { idType: source.institutionIdType, id: source.institutionId };
}
