// A request's bytes must be the text they claim to be, or the request is refused: a JSON body is
// UTF-8, and a query is percent-encoded UTF-8 (docs/api.md, "Bad input"). Node and Fastify decode
// both leniently, turning a bad byte into U+FFFD or leaving a bad escape as it was sent, so what
// would be stored is not what the client sent. The router already refuses a path that is not valid
// percent-encoding (http-edge.ts); these checks do the same for the query and the body, before the
// schemas and the input rules (services/input-rules.ts) judge the text itself.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ValidationError } from '../errors.ts';

const INVALID_UTF8 = 'is not valid UTF-8';
const INVALID_PERCENT_ENCODING = 'is not valid percent-encoded UTF-8';

// `fatal` refuses what the default decoder would replace: bytes that start no character, characters
// cut short, overlong encodings and encoded surrogates. `ignoreBOM` keeps a byte order mark in the
// text, so that a body is judged as Fastify's own parser judged it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as text, or undefined when they are not UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Whether every `%` in `text` starts an escape of two hex digits, and the escaped bytes are UTF-8.
 * `+` and the delimiters are literal characters, so they cannot join the bytes of two escapes: the
 * whole text decodes exactly when each of its names and values does.
 */
export function isPercentEncodedUtf8(text: string): boolean {
  if (!text.includes('%')) return true;
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/** The request body, refused unless it is UTF-8; `field` names it in the problem's `errors[]`. */
export function bodyText(bytes: Buffer, field = 'body'): string {
  const text = decodeUtf8(bytes);
  if (text === undefined) throw new ValidationError([{ path: field, message: INVALID_UTF8 }]);
  return text;
}

/**
 * Replaces Fastify's JSON parser with one that refuses a body that is not UTF-8, and then parses
 * exactly as Fastify's does: the same handling of an empty body and of prototype poisoning. The
 * body limit and the 415 for other media types are Fastify's, as before.
 */
export function registerStrictJsonParser(app: FastifyInstance): void {
  const { onProtoPoisoning, onConstructorPoisoning } = app.initialConfig;
  const parseJson = app.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    let text: string;
    try {
      text = bodyText(body);
    } catch (error) {
      done(error as ValidationError, undefined);
      return;
    }
    void parseJson(request, text, done);
  });
}

/** An onRequest hook: a query that is not percent-encoded UTF-8 is a 400 naming `query`. */
export function refuseMalformedQuery(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  const url = request.raw.url ?? '';
  const start = url.indexOf('?');
  if (start === -1 || isPercentEncodedUtf8(url.slice(start + 1))) {
    done();
    return;
  }
  done(new ValidationError([{ path: 'query', message: INVALID_PERCENT_ENCODING }]));
}

/**
 * The form parser of the web form (in place of @fastify/formbody, which decodes leniently): a body
 * that is not UTF-8, or whose escapes are not percent-encoded UTF-8, is refused. A name sent more
 * than once reads as the list of its values, as before, so the form can tell it was not its own post.
 */
export function registerStrictFormParser(app: FastifyInstance): void {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'buffer' },
    (_request, body: Buffer, done) => {
      try {
        const text = bodyText(body);
        if (!isPercentEncodedUtf8(text)) {
          throw new ValidationError([{ path: 'body', message: INVALID_PERCENT_ENCODING }]);
        }
        // No prototype: a field named `__proto__` or `constructor` is a field like any other.
        const fields: Record<string, string | string[]> = Object.create(null) as Record<
          string,
          string | string[]
        >;
        for (const [name, value] of new URLSearchParams(text)) {
          const before = fields[name];
          fields[name] = before === undefined ? value : [...[before].flat(), value];
        }
        done(null, fields);
      } catch (error) {
        done(error as ValidationError, undefined);
      }
    },
  );
}
