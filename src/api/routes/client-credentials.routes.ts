// The token endpoint of signed client credentials (RFC 6749 §4.4, client authenticated by a JWT it
// signed, RFC 7523 §2.2): `POST /oauth2/token`, a form in, a token or an RFC 6749 error out (not
// problem+json: OAuth clients read `error`), whatever the client sends: a body that is not a form,
// not UTF-8 or too long is an `invalid_request` too. Every token issued is audited under its client.
// Every request refused counts towards its address's failed authentications, as unknown API keys do;
// under the limit, a refusal of a client refhub knows (the one its assertion names) is audited under
// that client, and past it the address is answered 429 and no longer audited, so that a script cannot
// flood the audit trail.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiDeps } from '../api-deps.ts';
import { auditEventOf } from '../../domain/audit.ts';
import { type AuditActor } from '../../db/audit/audit.repository.ts';
import type { Stores } from '../../db/stores.ts';
import { TOKEN_PATH } from '../../domain/client-credentials.ts';
import { OAuthError, ValidationError, type RefusedClient } from '../../errors.ts';
import { sizeLimitWords } from '../http.ts';
import { registerStrictFormParser } from '../request-encoding.ts';
import type { FailureLimiter } from '../failure-limiter.ts';

export interface ClientCredentialsRoutesDeps extends Pick<
  ApiDeps,
  'clientCredentials' | 'clock' | 'metrics'
> {
  /** Where a token request's audit row goes: the one door every audit row goes through. */
  readonly stores: Pick<Stores, 'audit'>;
}

/** The audit action of a token request, issued (`success`) or refused (`denied`). */
export const TOKEN_ACTION = 'oauth.token';
/** The largest token request: an assertion signed with an RSA key of 8192 bits is under 3 KiB. */
export const TOKEN_BODY_LIMIT = 16 * 1024;

const FORM = 'application/x-www-form-urlencoded';

/** An RFC 6749 §5.2 error, never cached. */
function oauthError(reply: FastifyReply, status: number, error: string, description: string) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .type('application/json')
    .send({ error, error_description: description });
}

/** The client, acting for its institution: who an audit row of its token requests names. */
function actorOf(client: RefusedClient, requestId: string): AuditActor {
  return {
    requestId,
    apiKeyId: client.id,
    system: client.system,
    institution: client.institutions[0] ?? null,
    requesterIdentifier: null,
  };
}

/**
 * What was wrong with a request refused before the handler ran (its body's type, encoding or size),
 * in words for the client's developer; undefined for an error that is refhub's, not the request's.
 */
function malformedRequest(error: FastifyError): string | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `The request body is larger than ${sizeLimitWords(TOKEN_BODY_LIMIT)}.`;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return `Send the request as ${FORM}.`;
  }
  if (error instanceof ValidationError) {
    const [first] = error.errors ?? [];
    return first === undefined
      ? 'The request is malformed.'
      : `The request’s ${first.path} ${first.message}.`;
  }
  if (error instanceof SyntaxError) return `Send the request as ${FORM}.`;
  const status = error.statusCode ?? 500;
  return status >= 400 && status < 500 ? 'The request is malformed.' : undefined;
}

export function clientCredentialsRoutes(deps: ClientCredentialsRoutesDeps, failures: FailureLimiter) {
  /**
   * Answers a refused request: counted against its address, answered 429 past the limit, else audited
   * under the refusal's client (the one its assertion names, when refhub knows it) and answered.
   */
  async function refuse(request: FastifyRequest, reply: FastifyReply, refusal: OAuthError) {
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
    if (refusal.client !== undefined) {
      await deps.stores.audit.record(
        auditEventOf(actorOf(refusal.client, request.id), TOKEN_ACTION, [], deps.clock.now(), 'denied'),
      );
    }
    if (refusal.error === 'invalid_client') reply.header('www-authenticate', 'Bearer error="invalid_client"');
    return oauthError(reply, refusal.status, refusal.error, refusal.message);
  }

  return (app: FastifyInstance) => {
    registerStrictFormParser(app);

    // A body refused before the handler runs is answered in RFC 6749's shape too, and counted; what
    // is not the request's fault goes on to the API's handler (a 503 while the database is away).
    // A client that closed its connection before its body arrived is not answered (nobody is left).
    app.setErrorHandler(async (error: FastifyError, request, reply) => {
      const description = error === request.raw.errored ? undefined : malformedRequest(error);
      if (description === undefined) throw error;
      return refuse(request, reply, new OAuthError('invalid_request', description));
    });

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
      { schema: { hide: true }, bodyLimit: TOKEN_BODY_LIMIT, config: { action: TOKEN_ACTION } },
      async (request, reply) => {
        if (!request.headers['content-type']?.startsWith(FORM)) {
          return refuse(request, reply, new OAuthError('invalid_request', `Send the request as ${FORM}.`));
        }
        // Fields refhub does not know are ignored (RFC 6749 §3.2); a field sent twice is refused (§3.1).
        const form: Record<string, string | undefined> = {};
        for (const [name, value] of Object.entries((request.body ?? {}) as Record<string, unknown>)) {
          if (Array.isArray(value)) {
            // Named when it could be a field's name: the answer quotes nothing else the client sent.
            const field = /^[a-z_]{1,32}$/.test(name) ? name : 'A field';
            const refusal = new OAuthError('invalid_request', `${field} is sent more than once.`);
            return refuse(request, reply, refusal);
          }
          form[name] = typeof value === 'string' ? value : undefined;
        }
        try {
          const { token, client } = await deps.clientCredentials.issueToken(form);
          await deps.stores.audit.record(
            auditEventOf(actorOf(client, request.id), TOKEN_ACTION, [], deps.clock.now()),
          );
          return await reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(token);
        } catch (error) {
          if (!(error instanceof OAuthError)) throw error;
          return refuse(request, reply, error);
        }
      },
    );
  };
}
