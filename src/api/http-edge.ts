// The HTTP edge: how long a client may take, and the answers written before any route runs.
//
// Timeouts (docs/operations.md, "Timeouts"): a client has HTTP_HEADERS_TIMEOUT_SECONDS to send its
// headers and HTTP_REQUEST_TIMEOUT_SECONDS to send the whole request, so one that trickles its bytes
// cannot hold a connection; an idle kept-alive connection closes after
// HTTP_KEEP_ALIVE_TIMEOUT_SECONDS; and a connection on which nothing moves for twice the request
// timeout (a client that stopped reading its answer) is dropped.
//
// Node's HTTP server and Fastify's router answer some requests themselves: a timeout (408), headers
// too large (431), bytes that are not HTTP (400), a path parameter too long (414) or a path that is
// not valid percent-encoding (400). Those answers are problem+json like every other error
// (plugins/problem.ts), and, like them, quote nothing the client sent: no URL, no header value.
import { STATUS_CODES, type ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type {
  FastifyBaseLogger,
  FastifyError,
  FastifyReply,
  FastifyRequest,
  FastifyServerOptions,
} from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { Config } from '../config.ts';
import { AppError, ValidationError } from '../errors.ts';
import { API_VERSION } from './openapi.ts';
import { problemOf, sendProblem } from './plugins/problem.ts';

/** The longest path parameter the router takes; a longer one is a 414. */
export const MAX_PARAM_LENGTH = 200;
/** Node's default request header limit, named here so the 431 can say it. */
const MAX_HEADER_KIB = 16;

type EdgeOptions = Pick<
  FastifyServerOptions,
  'requestTimeout' | 'connectionTimeout' | 'keepAliveTimeout' | 'clientErrorHandler' | 'frameworkErrors'
> & { readonly http: ServerOptions };

interface ConnectionError extends Error {
  code?: string;
}

function clientErrorOf(error: ConnectionError, config: Config): AppError {
  switch (error.code ?? '') {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError(
        'request_timeout',
        408,
        'Request timeout',
        `The request did not arrive in full within ${config.httpRequestTimeoutSeconds} seconds ` +
          `(its headers within ${config.httpHeadersTimeoutSeconds}). Send it again.`,
      );
    case 'HPE_HEADER_OVERFLOW':
      return new AppError(
        'header_fields_too_large',
        431,
        'Request header fields too large',
        `The request line and headers are larger than ${MAX_HEADER_KIB} KiB.`,
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new AppError(
        'payload_too_large',
        413,
        'Payload too large',
        'The chunk extensions are too large.',
      );
    default:
      return new AppError('bad_request', 400, 'Bad request', 'The request is not valid HTTP/1.1.');
  }
}

/** A problem document as raw HTTP/1.1, for a socket no Fastify reply exists for. */
function rawProblem(error: AppError, requestId: string): string {
  const body = JSON.stringify(problemOf(error, requestId));
  return [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}`,
    'Content-Type: application/problem+json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    `API-Version: ${API_VERSION}`,
    'Cache-Control: no-store',
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** Whether an answer to a request on this socket has begun, so that nothing more may be written. */
function answerBegun(socket: Socket): boolean {
  // Node's own clientError fallback makes the same check on the response it attaches to the socket.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  return inFlight?.headersSent === true;
}

function frameworkErrorOf(error: FastifyError): AppError {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return new ValidationError([{ path: 'path', message: 'is not valid percent-encoded UTF-8' }]);
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AppError(
        'uri_too_long',
        414,
        'URI too long',
        `A path segment is longer than ${MAX_PARAM_LENGTH} characters.`,
      );
    default:
      return new AppError(
        'internal_error',
        500,
        'Internal error',
        'Something went wrong on our side. Retry later.',
      );
  }
}

/** Timeouts and edge answers for a Fastify server, from the configuration. */
export function httpEdgeOptions(config: Config, logger: FastifyBaseLogger): EdgeOptions {
  const requestMs = config.httpRequestTimeoutSeconds * 1000;
  const headersMs = config.httpHeadersTimeoutSeconds * 1000;
  return {
    requestTimeout: requestMs,
    connectionTimeout: 2 * requestMs,
    keepAliveTimeout: config.httpKeepAliveTimeoutSeconds * 1000,
    http: {
      headersTimeout: headersMs,
      // Node enforces both timeouts on this tick (30 s by default), so it bounds how late a slow
      // client is cut off: a quarter of the headers timeout keeps that within 25 %.
      connectionsCheckingInterval: Math.max(250, Math.min(5_000, headersMs / 4)),
    },
    clientErrorHandler(error: ConnectionError, socket: Socket) {
      // A reset connection has no one to answer.
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      const problem = clientErrorOf(error, config);
      const requestId = uuidv7();
      // The code alone: parser errors carry the raw bytes received, which may hold anything.
      logger.info({ requestId, status: problem.status, clientError: error.code }, 'client error');
      if (socket.writable && !answerBegun(socket)) {
        socket.end(rawProblem(problem, requestId), () => socket.destroy());
      } else {
        socket.destroy();
      }
    },
    frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
      // No route ran, so none of the app's hooks did: the headers every answer carries are set here.
      void reply
        .header('X-Request-Id', request.id)
        .header('API-Version', API_VERSION)
        .header('Cache-Control', 'no-store');
      sendProblem(reply, frameworkErrorOf(error));
    },
  };
}
