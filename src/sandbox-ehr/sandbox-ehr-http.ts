// The plain-`node:http` plumbing the sandbox EHR needs: reading a bounded body, checking a bearer
// token and a JSON media type, and writing JSON and problem answers. The sandbox is a bare Node
// server rather than a Fastify app on purpose: it must be able to misbehave (answer late, drop a
// connection mid-request) in ways a framework works hard to prevent.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FieldProblem } from '../domain/forwarding/forward-request.ts';

/** One answer, decided before anything is written, so every path logs and counts it the same way. */
export interface Answer {
  readonly status: number;
  /** JSON to send; `undefined` sends no body (204). */
  readonly body?: unknown;
  readonly headers?: OutgoingHttpHeaders;
  /** What happened, in a word, for the log line (a problem's code). */
  readonly outcome?: string;
}

/** An RFC 9457 problem. Details name fields and IDs the caller sent, never a value from a body. */
export function problem(
  status: number,
  code: string,
  title: string,
  detail: string,
  extra: { readonly errors?: readonly FieldProblem[]; readonly headers?: OutgoingHttpHeaders } = {},
): Answer {
  return {
    status,
    body: {
      type: `urn:refhub:sandbox-ehr:${code}`,
      title,
      status,
      detail,
      code,
      ...(extra.errors === undefined ? {} : { errors: extra.errors }),
    },
    headers: { 'content-type': 'application/problem+json', ...extra.headers },
    outcome: code,
  };
}

/** Writes `answer` unless the client has already gone. */
export function send(res: ServerResponse, answer: Answer): void {
  if (res.headersSent || clientGone(res)) return;
  const headers: OutgoingHttpHeaders = { 'cache-control': 'no-store', ...answer.headers };
  if (answer.body === undefined) {
    res.writeHead(answer.status, headers);
    res.end();
    return;
  }
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function clientGone(res: ServerResponse): boolean {
  return res.destroyed || res.socket === null || res.socket.destroyed;
}

/** Waits `ms`, returning early when the client disconnects; the timer never holds the process open. */
export function pause(ms: number, res: ServerResponse): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    res.once('close', done);
  });
}

export type BodyRead =
  | { readonly kind: 'complete'; readonly bytes: Buffer }
  /** `drained`: the whole body was read (and dropped), so the connection can be reused. */
  | { readonly kind: 'too-large'; readonly drained: boolean }
  | { readonly kind: 'aborted' };

/**
 * Reads the request body, keeping at most `limit` bytes. A body over the limit is still read to its
 * end (up to four times the limit) and dropped, so that the client, still sending, gets to read the
 * 413 instead of a broken pipe. Past that the sandbox stops reading and closes the connection.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  const drainLimit = limit * 4;
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > drainLimit) {
    return Promise.resolve({ kind: 'too-large', drained: false });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (result: BodyRead) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > drainLimit) {
        req.pause();
        finish({ kind: 'too-large', drained: false });
      }
    };
    req.on('data', onData);
    req.once('end', () => {
      finish(
        size > limit
          ? { kind: 'too-large', drained: true }
          : { kind: 'complete', bytes: Buffer.concat(chunks, size) },
      );
    });
    req.once('error', () => {
      finish({ kind: 'aborted' });
    });
    req.once('close', () => {
      finish({ kind: 'aborted' });
    });
  });
}

/** The answer to a body over the limit; an undrained one closes the connection. */
export function payloadTooLarge(limit: number, drained: boolean): Answer {
  return problem(413, 'payload_too_large', 'Payload too large', `The body may be at most ${limit} bytes.`, {
    headers: drained ? {} : { connection: 'close' },
  });
}

/** A single header's text; Node joins repeated headers it does not know with ", ". */
export function headerText(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** `application/json`, with at most a `charset=utf-8` parameter. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const [type = '', ...parameters] = contentType.split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return parameters.every((p) => p === '' || /^charset="?utf-8"?$/.test(p));
}

/** Whether `authorization` is `Bearer <token>`; compared as hashes, so in constant time at any length. */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  const hash = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(hash(match?.[1] ?? ''), hash(token)) && match !== null;
}

export function unauthorized(): Answer {
  return problem(401, 'unauthorized', 'Unauthorized', 'Send Authorization: Bearer <token>.', {
    headers: { 'www-authenticate': 'Bearer realm="sandbox-ehr"' },
  });
}

/** Parses a UTF-8 JSON body; `undefined` when it is not valid UTF-8 or not JSON. */
export function parseJson(bytes: Uint8Array): { readonly value: unknown } | undefined {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return { value: JSON.parse(text) as unknown };
  } catch {
    // The parser's message quotes the input, which may hold patient data: it is dropped.
    return undefined;
  }
}

export function malformedJson(): Answer {
  return problem(400, 'malformed_json', 'Malformed JSON', 'The body is not valid UTF-8 JSON.');
}
