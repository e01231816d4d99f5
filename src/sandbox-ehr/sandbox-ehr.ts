// The sandbox EHR: a real HTTP server that stands in for the national EHR (contract §7) in
// development and tests. `POST /ehr/referrals` checks a forward request the way a strict receiver
// would (bearer token, media type, Content-Digest over the exact bytes, Idempotency-Key, schema) and
// records each accepted delivery without any patient data. A file sent with a form comes to the same
// endpoint as a document of its own (`EhrAttachmentRequest`), checked against its size and SHA-256. The control API (`/_sandbox/…`) stages
// failures — statuses, latency, dropped connections — so the forwarder's retry rules can be tested
// against a real socket. `refhub sandbox-ehr` runs it on its own; `refhub all` can run it in-process.
//
// Order of work for an EHR request: count it, read the body, wait the staged latency, then either
// use up a staged failure (whatever the request holds) or check and record it. Staged failures come
// first so that a test can make "the next request" fail without crafting a particular one.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import type { Clock } from '../domain/clock.ts';
import { systemClock } from '../domain/clock.ts';
import type { Logger } from '../logger.ts';
import { sha256Hex, verifyContentDigest } from '../domain/forwarding/content-digest.ts';
import {
  createAttachmentRequestChecker,
  createForwardRequestChecker,
  MAX_FORWARD_BODY_BYTES,
} from '../domain/forwarding/forward-request.ts';
import { MAX_ATTACHMENT_MESSAGE_ID_LENGTH } from '../domain/ids.ts';
import { CONTROL_PREFIX, createControlRoutes } from './sandbox-ehr-control.ts';
import {
  bearerMatches,
  clientGone,
  headerText,
  isJsonMediaType,
  malformedJson,
  parseJson,
  pause,
  payloadTooLarge,
  problem,
  readBody,
  send,
  unauthorized,
  type Answer,
  type BodyRead,
} from './sandbox-ehr-http.ts';
import { createSandboxEhrState, type SandboxEhrState, type StagedFailure } from './sandbox-ehr-state.ts';

export type {
  SandboxBehaviour,
  SandboxDelivery,
  SandboxRequestCounts,
  DeliveryFilter,
} from './sandbox-ehr-state.ts';
export type { SandboxBehaviourInput } from './sandbox-ehr-control.ts';

/** The path of the EHR endpoint; `EHR_URL` is the base URL plus this. */
export const EHR_PATH = '/ehr/referrals';

export interface SandboxEhrOptions {
  /** When set, every request (EHR and control) must carry `Authorization: Bearer <token>`. */
  readonly token?: string | undefined;
  readonly logger?: Logger | undefined;
  readonly clock?: Clock | undefined;
}

/** A certificate and its private key (PEM) for serving https, as a staging stand-in for the EHR's TLS. */
export interface SandboxTls {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
}

export interface SandboxListenOptions {
  readonly port: number;
  readonly host?: string;
  /** Serves https with this certificate instead of plain http. */
  readonly tls?: SandboxTls | undefined;
}

export interface RunningSandboxEhr {
  /** The EHR endpoint URL, with the port actually bound. */
  readonly url: string;
  /** The server's origin, for the control API. */
  readonly baseUrl: string;
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

/** What in-process callers may do with the sandbox's memory (the control API does the same over HTTP). */
export type SandboxEhrControl = Pick<
  SandboxEhrState,
  'deliveries' | 'requests' | 'behaviour' | 'setBehaviour' | 'reset'
>;

export interface SandboxEhr {
  /** A `node:http` request handler, for mounting on a server of one's own. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  readonly state: SandboxEhrControl;
  listen(options: SandboxListenOptions): Promise<RunningSandboxEhr>;
}

function stagedAnswer(failure: Extract<StagedFailure, { kind: 'status' }>): Answer {
  const headers: Record<string, string> = {};
  if (failure.retryAfterSeconds !== null) headers['retry-after'] = String(failure.retryAfterSeconds);
  // A staged redirect points back at the endpoint: a client that follows it would deliver, visibly.
  if (failure.status < 400) headers.location = EHR_PATH;
  return problem(
    failure.status,
    'staged_failure',
    'Staged failure',
    `The sandbox was told to answer ${failure.status}.`,
    {
      headers,
    },
  );
}

export function createSandboxEhr(options: SandboxEhrOptions = {}): SandboxEhr {
  const token = options.token === '' ? undefined : options.token;
  const logger = options.logger ?? pino({ enabled: false });
  const state = createSandboxEhrState({ clock: options.clock ?? systemClock });
  const checkForm = createForwardRequestChecker();
  const checkAttachment = createAttachmentRequestChecker();
  /** A form's request, or a file's (it carries `document`): each checked by its own schema. */
  const checkRequest = (value: unknown) =>
    value !== null && typeof value === 'object' && 'document' in value
      ? checkAttachment(value)
      : checkForm(value);
  const controlRoutes = createControlRoutes(state);

  function checkDelivery(req: IncomingMessage, body: BodyRead): Answer {
    if (token !== undefined && !bearerMatches(headerText(req, 'authorization'), token)) return unauthorized();
    if (body.kind === 'too-large') return payloadTooLarge(MAX_FORWARD_BODY_BYTES, body.drained);
    if (body.kind === 'aborted') return problem(400, 'aborted', 'Aborted', 'The request body was cut short.');
    if (!isJsonMediaType(headerText(req, 'content-type'))) {
      return problem(415, 'unsupported_media_type', 'Unsupported media type', 'Send application/json.');
    }
    if (!verifyContentDigest(headerText(req, 'content-digest'), body.bytes)) {
      return problem(
        400,
        'invalid_content_digest',
        'Invalid Content-Digest',
        'Content-Digest must carry a sha-256 digest of the exact body bytes (RFC 9530).',
      );
    }
    const idempotencyKey = headerText(req, 'idempotency-key');
    if (idempotencyKey === undefined || idempotencyKey === '') {
      return problem(
        400,
        'missing_idempotency_key',
        'Missing Idempotency-Key',
        'Send Idempotency-Key: <messageId>.',
      );
    }
    const parsed = parseJson(body.bytes);
    if (parsed === undefined) return malformedJson();
    const checked = checkRequest(parsed.value);
    if (!checked.ok) {
      return problem(
        400,
        'validation_failed',
        'Invalid forward request',
        'The body is not a valid EHR forward request.',
        {
          errors: checked.problems,
        },
      );
    }
    const { request } = checked;
    if (idempotencyKey !== request.messageId) {
      return problem(
        400,
        'idempotency_key_mismatch',
        'Idempotency-Key mismatch',
        `Idempotency-Key must equal the body's messageId (${request.messageId}).`,
      );
    }
    const accepted = state.accept(request, sha256Hex(body.bytes));
    const reply = { reference: accepted.delivery.reference, messageId: request.messageId };
    switch (accepted.outcome) {
      case 'created':
        return { status: 201, body: reply, outcome: 'delivered' };
      case 'duplicate':
        return { status: 200, body: reply, outcome: 'duplicate' };
      case 'conflict':
        return problem(
          409,
          'message_id_conflict',
          'Message ID already used',
          `Message ${request.messageId} was delivered with a different body.`,
        );
    }
  }

  async function handleEhrRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const key = headerText(req, 'idempotency-key');
    // Only a key shaped like a message ID is tracked or logged: anything else is the caller's noise.
    const messageId =
      key !== undefined && key.length <= MAX_ATTACHMENT_MESSAGE_ID_LENGTH && /^[\w.-]+$/.test(key)
        ? key
        : undefined;
    state.noteArrival(messageId);
    const body = await readBody(req, MAX_FORWARD_BODY_BYTES);
    await pause(state.latencyMs(), res);
    if (clientGone(res)) {
      logger.info({ messageId }, 'sandbox EHR: the client went away before the answer');
      return;
    }
    const staged = state.takeStagedFailure(messageId !== undefined && /\.a[0-9]+$/.test(messageId));
    if (staged?.kind === 'reset') {
      state.noteAnswer('reset');
      logger.info({ messageId }, 'sandbox EHR: dropped the connection, as staged');
      res.socket?.destroy();
      return;
    }
    const answer = staged === undefined ? checkDelivery(req, body) : stagedAnswer(staged);
    send(res, answer);
    state.noteAnswer(answer.status);
    logger.info(
      {
        messageId,
        status: answer.status,
        outcome: answer.outcome,
        ms: Math.round(performance.now() - started),
      },
      'sandbox EHR answered',
    );
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = req.url ?? '/';
    if (!target.startsWith('/')) {
      send(res, problem(400, 'bad_request_target', 'Bad request target', 'Send an origin-form path.'));
      return;
    }
    // Prefixed rather than resolved against a base, so that `//host/path` stays a path.
    const url = new URL(`http://sandbox.invalid${target}`);
    const method = req.method ?? 'GET';
    if (url.pathname === EHR_PATH) {
      if (method !== 'POST') {
        send(
          res,
          problem(405, 'method_not_allowed', 'Method not allowed', `Use POST ${EHR_PATH}.`, {
            headers: { allow: 'POST' },
          }),
        );
        return;
      }
      await handleEhrRequest(req, res);
      return;
    }
    const routes = controlRoutes.get(url.pathname);
    if (routes === undefined) {
      const where = url.pathname.startsWith(CONTROL_PREFIX) ? 'control API' : 'sandbox EHR';
      send(res, problem(404, 'not_found', 'Not found', `The ${where} has no ${url.pathname}.`));
      return;
    }
    if (token !== undefined && !bearerMatches(headerText(req, 'authorization'), token)) {
      send(res, unauthorized());
      return;
    }
    const handle = Object.hasOwn(routes, method) ? routes[method as keyof typeof routes] : undefined;
    if (handle === undefined) {
      const allow = Object.keys(routes).join(', ');
      send(
        res,
        problem(405, 'method_not_allowed', 'Method not allowed', `Use ${allow}.`, { headers: { allow } }),
      );
      return;
    }
    send(res, await handle(req, url));
  }

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    route(req, res).catch((error: unknown) => {
      logger.error({ err: error }, 'sandbox EHR failed to answer');
      send(res, problem(500, 'internal_error', 'Internal error', 'The sandbox EHR failed; see its log.'));
    });
  };

  return {
    handler,
    state,
    async listen({ port, host = '127.0.0.1', tls }) {
      const server =
        tls === undefined
          ? http.createServer(handler)
          : https.createServer({ cert: tls.cert, key: tls.key }, handler);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const address = server.address() as AddressInfo;
      const origin = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      const baseUrl = `${tls === undefined ? 'http' : 'https'}://${origin}:${address.port}`;
      return {
        url: `${baseUrl}${EHR_PATH}`,
        baseUrl,
        close: () =>
          new Promise<void>((resolve, reject) => {
            server.close((error) => {
              if (error === undefined) resolve();
              else reject(error);
            });
            server.closeAllConnections();
          }),
      };
    },
  };
}
