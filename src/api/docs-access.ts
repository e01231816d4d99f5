// Who may read the API's documentation (`/docs` and `/openapi.json`, API_DOCS). Outside production
// anyone may; in production, by default, only ops keys: the document describes every route an
// attacker could try, and an installation may not want it public. An ops key is accepted as
// `Authorization: ApiKey <key>` (scripts, client generators) or as the password of HTTP Basic, which
// a browser asks for on its own when the docs page answers 401 with a Basic challenge.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyRecord } from '../db/api-key.repository.ts';
import { ForbiddenRoleError, UnauthorizedError } from '../errors.ts';
import { BASIC_CHALLENGE, presentedKey } from './admin/ops-auth.ts';
import { sendProblem } from './plugins/problem.ts';

export function isDocsRoute(url: string | undefined): boolean {
  return url === '/openapi.json' || url === '/docs' || url?.startsWith('/docs/') === true;
}

/** An onRequest hook that lets only ops keys read the docs. */
export function opsOnlyDocs(authenticate: (presented: string) => Promise<ApiKeyRecord | undefined>) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    if (!isDocsRoute(request.routeOptions.url)) return undefined;
    const presented = presentedKey(request.headers.authorization);
    const key = presented === undefined ? undefined : await authenticate(presented);
    if (key === undefined) {
      void reply.header('WWW-Authenticate', BASIC_CHALLENGE);
      return sendProblem(
        reply,
        new UnauthorizedError('The API documentation is for ops keys: sign in with one as the password.'),
      );
    }
    if (key.role !== 'ops') {
      return sendProblem(reply, new ForbiddenRoleError('The API documentation is for ops keys only.'));
    }
    return undefined;
  };
}
