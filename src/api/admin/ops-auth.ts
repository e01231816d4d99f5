// Who may use the ops pages: HTTP Basic, any user name, an ops API key as the password. Basic is what
// a browser can do on its own: it asks once and resends the credentials with every request, static
// files and the board's JSON calls included, so the key is never put in a cookie or a URL.
//
// The hooks answer directly rather than throwing: bull-board's routes have an error handler of their
// own, which would turn a thrown 401 into its own body and drop WWW-Authenticate.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyRecord } from '../../db/api-key.repository.ts';
import { AppError, ForbiddenRoleError, UnauthorizedError } from '../../errors.ts';
import { accessOf, referralIdsOf, type AdminAccess } from './admin-access.ts';
import { userNameForAudit, type AdminAudit } from './admin-audit.ts';
import type { FailureLimiter } from '../failure-limiter.ts';

export const BASIC_CHALLENGE = 'Basic realm="refhub ops", charset="UTF-8"';

const BASIC = /^Basic[ ]+([A-Za-z0-9+/]+={0,2})[ ]*$/i;

export interface BasicCredentials {
  readonly user: string;
  readonly password: string;
}

/** The credentials of an `Authorization: Basic …` header (RFC 7617, UTF-8); undefined for anything else. */
export function parseBasic(header: string | undefined): BasicCredentials | undefined {
  const encoded = header === undefined ? undefined : BASIC.exec(header)?.[1];
  if (encoded === undefined || encoded.length % 4 !== 0) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

const API_KEY = /^ApiKey\s+(\S+)\s*$/i;

/**
 * The key a request presents where ops keys are taken outside the ops pages (the API docs,
 * `/doctor`): `Authorization: ApiKey <key>` from a script, or the password of HTTP Basic from a
 * browser that answered the Basic challenge.
 */
export function presentedKey(header: string | undefined): string | undefined {
  return parseBasic(header)?.password ?? (header === undefined ? undefined : API_KEY.exec(header)?.[1]);
}

/** The ops session of a granted request. */
export interface OpsSession {
  readonly key: ApiKeyRecord;
  readonly user: string | null;
  readonly access: AdminAccess;
}

export interface OpsAuthDeps {
  readonly authenticate: (presented: string) => Promise<ApiKeyRecord | undefined>;
  readonly audit: AdminAudit;
  readonly limiter: FailureLimiter;
  readonly writable: boolean;
  /** Called once a request is granted (the board connects its queues on first use). */
  readonly onGranted: () => void;
}

const SIGN_IN = 'Sign in with any user name and an ops API key as the password (HTTP Basic).';

/** problem+json (contract §9), built here because these replies never reach the API's error handler. */
function sendProblem(
  reply: FastifyReply,
  error: AppError,
  headers: Readonly<Record<string, string>> = {},
): FastifyReply {
  for (const [name, value] of Object.entries(headers)) void reply.header(name, value);
  return reply
    .code(error.status)
    .type('application/problem+json; charset=utf-8')
    .send({
      type: `urn:refhub:problem:${error.code}`,
      title: error.title,
      status: error.status,
      detail: error.message,
      code: error.code,
      requestId: reply.request.id,
    });
}

/** A browser sends these with a cross-site request; a same-site script or a typed URL does not. */
function crossSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    const from = new URL(origin);
    // Read the Host header as a URL of the same scheme, so that a default port compares equal.
    return from.host !== new URL(`${from.protocol}//${request.headers.host ?? ''}`).host;
  } catch {
    return true;
  }
}

export function createOpsAuth(deps: OpsAuthDeps) {
  const sessions = new WeakMap<FastifyRequest, OpsSession>();

  const params = (request: FastifyRequest) => (request.params ?? {}) as Record<string, unknown>;

  /** onRequest: authenticates, then lets through only the changes write mode allows. */
  async function guard(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const access = accessOf(request.method, request.routeOptions.url ?? request.url, params(request));
    const credentials = parseBasic(request.headers.authorization);
    // No credentials is how every browser visit starts: it is answered with the challenge and is
    // neither counted nor audited.
    if (credentials === undefined) {
      return sendProblem(reply, new UnauthorizedError(SIGN_IN), { 'WWW-Authenticate': BASIC_CHALLENGE });
    }
    const user = userNameForAudit(credentials.user);
    const key = await deps.authenticate(credentials.password);
    if (key === undefined) {
      const retryAfter = deps.limiter.fail(request.ip);
      if (retryAfter !== undefined) {
        return sendProblem(
          reply,
          new AppError(
            'rate_limited',
            429,
            'Too many failed sign-ins',
            `Too many failed sign-ins from this address. Retry after ${retryAfter} seconds.`,
          ),
          { 'Retry-After': String(retryAfter) },
        );
      }
      await deps.audit.record(request, { action: access.action, outcome: 'denied', key: null, user });
      return sendProblem(reply, new UnauthorizedError(`The password is not an active API key. ${SIGN_IN}`), {
        'WWW-Authenticate': BASIC_CHALLENGE,
      });
    }
    const referralIds = referralIdsOf(params(request));
    if (key.role !== 'ops') {
      await deps.audit.record(request, { action: access.action, outcome: 'denied', key, user, referralIds });
      return sendProblem(
        reply,
        new ForbiddenRoleError(`Only an ops key may open the ops pages; this is a ${key.role} key.`),
      );
    }
    request.apiKey = key;
    if (access.write) {
      const refusal = !deps.writable
        ? 'The queue dashboard is read-only. Set OPS_DASHBOARD_WRITE=true to retry, promote or remove jobs.'
        : !access.writeAllowed
          ? 'The queue dashboard may retry, promote and remove jobs, and do nothing else.'
          : crossSite(request)
            ? 'Changes to the queues must come from the dashboard itself, not from another site.'
            : undefined;
      if (refusal !== undefined) {
        await deps.audit.record(request, {
          action: access.action,
          outcome: 'denied',
          key,
          user,
          referralIds,
        });
        return sendProblem(
          reply,
          new AppError('forbidden_role', 403, 'Not allowed on the dashboard', refusal),
        );
      }
    }
    sessions.set(request, { key, user, access });
    deps.onGranted();
    return undefined;
  }

  /** preHandler: the audit row of a granted request, written before anything is served or changed. */
  async function auditGranted(request: FastifyRequest): Promise<void> {
    const session = sessions.get(request);
    if (session === undefined || !session.access.auditGranted) return;
    await deps.audit.record(request, {
      action: session.access.action,
      outcome: 'success',
      key: session.key,
      user: session.user,
      referralIds: referralIdsOf(params(request)),
    });
  }

  return { guard, auditGranted, sessionOf: (request: FastifyRequest) => sessions.get(request) };
}

export type OpsAuth = ReturnType<typeof createOpsAuth>;
