// Request validation. Query strings, path parameters and headers arrive as text, so their Ajv
// coerces ("10" → 10, a single `status` → [status]). JSON bodies have real types, so their Ajv does
// not: `"isUrgent": "true"` or a number where text belongs is a 400, not a silent conversion.
// Unknown properties are rejected rather than removed, and every problem is reported at once.
import type { FastifySchemaCompiler } from 'fastify';
import { createAjv } from '../services/referral-fields.ts';

export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const body = createAjv(false);
  const text = createAjv('array');
  return ({ schema, httpPart }) => (httpPart === 'body' ? body : text).compile(schema as object);
}
