// The token endpoint of signed client credentials (RFC 6749 §4.4, client authenticated by a JWT it
// signed, RFC 7523 §2.2): `POST /oauth2/token`, a form in, a token or an RFC 6749 error out (not
// problem+json: OAuth clients read `error`). Every token issued, and every request refused for its
// client's authentication, is audited under the client; refused requests also count towards the
// address's failures, as unknown API keys do.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ApiDeps } from '../api-deps.ts';
import { auditEventOf, auditRepository } from '../../db/audit.repository.ts';
import { TOKEN_PATH } from '../../domain/client-credentials.ts';
import { OAuthError } from '../../errors.ts';
import { registerStrictFormParser } from '../request-encoding.ts';
import type { FailureLimiter } from '../failure-limiter.ts';

export type ClientCredentialsRoutesDeps = Pick<ApiDeps, 'clientCredentials' | 'db' | 'clock' | 'metrics'>;

/** An RFC 6749 §5.2 error, never cached. */
function oauthError(reply: FastifyReply, status: number, error: string, description: string) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .type('application/json')
    .send({ error, error_description: description });
}

export function clientCredentialsRoutes(deps: ClientCredentialsRoutesDeps, failures: FailureLimiter) {
  return (app: FastifyInstance) => {
    registerStrictFormParser(app);

    // A token is asked for with POST only (RFC 6749 §3.2); any other method is told so.
    app.route({
      method: ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE'],
      url: TOKEN_PATH,
      schema: { hide: true },
      handler: (_request, reply) =>
        oauthError(reply.header('allow', 'POST'), 405, 'invalid_request', 'Ask for a token with POST.'),
    });

    app.post(
      TOKEN_PATH,
      { schema: { hide: true }, config: { action: 'oauth.token' } },
      async (request, reply) => {
        if (!request.headers['content-type']?.startsWith('application/x-www-form-urlencoded')) {
          return oauthError(
            reply,
            400,
            'invalid_request',
            'Send the request as application/x-www-form-urlencoded.',
          );
        }
        const form: Record<string, string | undefined> = {};
        for (const [name, value] of Object.entries((request.body ?? {}) as Record<string, unknown>)) {
          if (Array.isArray(value))
            return oauthError(reply, 400, 'invalid_request', `${name} is sent more than once.`);
          form[name] = typeof value === 'string' ? value : undefined;
        }
        try {
          const { token, client } = await deps.clientCredentials.issueToken(form);
          const actor = {
            requestId: request.id,
            apiKeyId: client.id,
            system: client.system,
            institution: client.institutions[0] ?? null,
            requesterIdentifier: null,
          };
          await auditRepository(deps.db).record(auditEventOf(actor, 'oauth.token', [], deps.clock.now()));
          return await reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(token);
        } catch (error) {
          if (!(error instanceof OAuthError)) throw error;
          if (error.error === 'invalid_client') {
            const retryAfter = failures.fail(request.ip);
            deps.metrics.authFailure('client-assertion', retryAfter === undefined ? 'refused' : 'throttled');
            if (retryAfter !== undefined) {
              reply.header('retry-after', String(retryAfter));
              return oauthError(
                reply,
                429,
                'invalid_client',
                `Too many failed authentications from this address. Retry after ${retryAfter} seconds.`,
              );
            }
            reply.header('www-authenticate', 'Bearer error="invalid_client"');
          }
          return oauthError(reply, error.status, error.error, error.message);
        }
      },
    );
  };
}
