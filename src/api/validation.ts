// Request validation. Query strings, path parameters and headers arrive as text, so their Ajv
// coerces ("10" → 10, a single `status` → [status]). JSON bodies have real types, so their Ajv does
// not: `"isUrgent": "true"` or a number where text belongs is a 400, not a silent conversion.
// Unknown properties are rejected rather than removed, and every problem is reported at once.
// Every string of every part is held to the input rules (services/input-rules.ts): no NUL, no
// unpaired surrogate, no whitespace alone where something must be said.
import type { FastifySchemaCompiler } from 'fastify';
import { createRequestSchemaCompiler } from '../services/referral-fields.ts';

export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const body = createRequestSchemaCompiler(false);
  const text = createRequestSchemaCompiler('array');
  return ({ schema, httpPart }) => (httpPart === 'body' ? body : text)(schema as object);
}
