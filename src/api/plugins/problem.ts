// The one error handler: every error becomes application/problem+json (RFC 9457, contract §9).
// A 5xx never carries a stack trace, SQL or patient data; the log gets a sanitized record instead.
// Denied attempts on referral routes are audited on their own, since the work's transaction rolled back.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, UnavailableError, ValidationError, type FieldError } from '../../errors.ts';
import { isDatabaseOutage } from '../../db/database.ts';
import { QUEUE_UNAVAILABLE } from '../../queue/connections.ts';
import { createOutageLog, errorKind } from '../../logger.ts';
import { isApiRoute, sizeLimitWords } from '../http.ts';
import type { ApiDeps } from '../api-deps.ts';
import { actionOf, auditRequest, type RequestAuditDeps } from '../request-audit.ts';
import { IdempotencyKeyTaken } from './idempotency.ts';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  requestId: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

const LOCATIONS: Readonly<Record<string, string>> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

/** Turns Ajv's errors into `errors[]` entries that name the field, never its value. */
export function fieldErrors(validation: readonly AjvError[], context: string | undefined): FieldError[] {
  const location = LOCATIONS[context ?? 'body'] ?? 'body';
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of validation) {
    const base = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
    let field = base;
    let message = error.message ?? 'is invalid';
    if (error.keyword === 'required') {
      field = [base, String(error.params.missingProperty)].filter(Boolean).join('.');
      message = 'is required';
    } else if (error.keyword === 'additionalProperties') {
      field = [base, String(error.params.additionalProperty)].filter(Boolean).join('.');
      message = 'is not a known field';
    } else if (error.keyword === 'enum') {
      const allowed = (error.params.allowedValues as unknown[] | undefined) ?? [];
      message = allowed.length <= 12 ? `must be one of: ${allowed.join(', ')}` : 'is not an allowed value';
    } else if (error.keyword === 'anyOf' || (error.keyword === 'type' && seen.has(`${location}.${base}`))) {
      continue;
    }
    // Headers arrive with lowercase names; a problem names one as HTTP writes it (Content-Disposition).
    const named =
      location === 'header'
        ? field.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase())
        : field;
    const path = named === '' ? location : `${location}.${named}`;
    if (seen.has(path)) continue;
    seen.add(path);
    out.push({ path, message });
  }
  return out;
}

const DATABASE_UNAVAILABLE = () =>
  new UnavailableError('The database cannot be reached at the moment. Retry in a few seconds.');
const QUEUES_UNAVAILABLE = () =>
  new UnavailableError('The queues cannot be reached at the moment. Retry in a few seconds.');

const CLIENT_CLOSED = () =>
  new AppError(
    'bad_request',
    400,
    'Bad request',
    'The connection closed before the request body arrived in full.',
  );

/**
 * The request's own stream failed: the client's connection closed while its body was read (it gave
 * up, or the request timeout cut it off, see http-edge.ts). Node reports that as ECONNRESET, the code
 * a lost database connection has too, so it is told apart by where it came from, not by its code.
 */
const isClientAbort = (error: FastifyError, request: FastifyRequest): boolean =>
  error === request.raw.errored;

function toAppError(error: FastifyError, request: FastifyRequest): AppError {
  if (error instanceof AppError) return error;
  if (isClientAbort(error, request)) return CLIENT_CLOSED();
  if (isDatabaseOutage(error)) return DATABASE_UNAVAILABLE();
  if (error.code === QUEUE_UNAVAILABLE) return QUEUES_UNAVAILABLE();
  if (error.validation) {
    return new ValidationError(fieldErrors(error.validation, error.validationContext));
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(
        'payload_too_large',
        413,
        'Payload too large',
        `The request body is larger than ${sizeLimitWords(request.routeOptions.bodyLimit)}.`,
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(
        'unsupported_media_type',
        415,
        'Unsupported media type',
        'Send the body as application/json.',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError(
        'bad_request',
        400,
        'Bad request',
        'The request body is not as long as its Content-Length says.',
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ValidationError([{ path: 'body', message: 'is empty; send a JSON object' }]);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ValidationError([{ path: 'body', message: 'is not valid JSON' }]);
  }
  // Fastify marks 400 what the body's stream reported: the client's failure, also when it did not
  // come from the request's own stream. Nobody is left to answer; nothing failed.
  if (error.code === 'ECONNRESET' && error.statusCode === 400) return CLIENT_CLOSED();
  if (error instanceof SyntaxError && error.statusCode === 400) {
    return new ValidationError([{ path: 'body', message: 'is not valid JSON' }]);
  }
  return new AppError(
    'internal_error',
    500,
    'Internal error',
    'Something went wrong on our side. Retry later.',
  );
}

export function problemOf(error: AppError, requestId: string): Problem {
  return {
    ...error.extra,
    type: `urn:refhub:problem:${error.code}`,
    title: error.title,
    status: error.status,
    detail: error.message,
    code: error.code,
    requestId,
    ...(error.errors === undefined ? {} : { errors: [...error.errors] }),
  };
}

export function sendProblem(reply: FastifyReply, error: AppError): FastifyReply {
  if (error.retryAfterSeconds !== undefined)
    void reply.header('Retry-After', String(error.retryAfterSeconds));
  return reply
    .code(error.status)
    .type('application/problem+json; charset=utf-8')
    .send(problemOf(error, reply.request.id));
}

const DENIED: ReadonlySet<string> = new Set([
  'referral_not_found',
  'forbidden_role',
  'insufficient_scope',
  'institution_not_permitted',
]);

export type ProblemDeps = Pick<ApiDeps, 'logger'> & RequestAuditDeps;

async function auditDenied(deps: RequestAuditDeps, request: FastifyRequest, error: AppError): Promise<void> {
  if (!DENIED.has(error.code)) return;
  try {
    await auditRequest(deps, request, 'denied', actionOf(request));
  } catch (auditError) {
    request.log.error({ err: { type: (auditError as Error).name } }, 'could not audit a denied request');
  }
}

export function registerProblemHandlers(app: FastifyInstance, deps: ProblemDeps): void {
  const databaseOutage = createOutageLog(deps.logger, {
    dependency: 'database',
    down: 'the database cannot be reached; answering 503',
    up: 'the database is reachable again',
  });
  // An API answer below 500 went through the database (authentication reads the key there).
  app.addHook('onResponse', async (request, reply) => {
    if (databaseOutage.ongoing && reply.statusCode < 500 && isApiRoute(request)) databaseOutage.recovered();
  });

  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (error instanceof IdempotencyKeyTaken && request.idempotency !== null) {
      try {
        return await request.idempotency.replayTaken(reply);
      } catch (replayError) {
        return sendProblem(reply, toAppError(replayError as FastifyError, request));
      }
    }
    const appError = toAppError(error, request);
    const errorCode = (error as { code?: unknown }).code;
    if (appError.code === 'internal_error') {
      request.log.error(
        { err: errorKind(error, { withStack: true }) },
        'request failed: a defect in refhub (500)',
      );
    } else if (appError.code === 'unavailable' && !(error instanceof AppError)) {
      if (isDatabaseOutage(error)) {
        databaseOutage.failed({ code: typeof errorCode === 'string' ? errorCode : error.name });
      }
    } else if (isClientAbort(error, request)) {
      // No answer reaches the client and onResponse does not run: this line is the request's trace.
      request.log.info({ err: errorKind(error) }, 'the client closed the connection before its body arrived');
    }
    await auditDenied(deps, request, appError);
    if (appError.code === 'unauthorized') {
      // The challenge names the scheme the request tried; without one, both.
      const bearer = /^bearer\s/i.test(request.headers.authorization ?? '');
      reply.header('WWW-Authenticate', bearer ? 'Bearer error="invalid_token"' : 'ApiKey, Bearer');
    }
    if (appError.code === 'insufficient_scope')
      reply.header('WWW-Authenticate', 'Bearer error="insufficient_scope"');
    return sendProblem(reply, appError);
  });

  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      new AppError(
        'not_found',
        404,
        'Not found',
        `There is no ${request.method} ${request.url.split('?')[0] ?? ''}.`,
      ),
    ),
  );
}
