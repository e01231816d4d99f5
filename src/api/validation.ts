// Request validation. Query strings, path parameters and headers arrive as text, so their Ajv
// coerces ("10" → 10, a single `status` → [status]). JSON bodies have real types, so their Ajv does
// not: `"isUrgent": "true"` or a number where text belongs is a 400, not a silent conversion.
// Unknown properties are rejected rather than removed, and every problem is reported at once.
// Every string of every part is held to the input rules (services/input-rules.ts): no NUL, no
// unpaired surrogate, no control or text-direction character (line breaks and tabs only in text of
// several lines), no whitespace alone where something must be said. That the bytes are text at all
// is checked before, as they are read (request-encoding.ts).
import type { FastifySchemaCompiler } from 'fastify';
import { createRequestSchemaCompiler } from '../services/referrals/fields.ts';

export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const body = createRequestSchemaCompiler(false);
  const text = createRequestSchemaCompiler('array');
  return ({ schema, httpPart }) => (httpPart === 'body' ? body : text)(schema as object);
}
