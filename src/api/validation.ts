// Request validation. Query strings, path parameters and headers arrive as text, so their Ajv
// coerces ("10" → 10, a single `status` → [status]). JSON bodies have real types, so their Ajv does
// not: `"isUrgent": "true"` or a number where text belongs is a 400, not a silent conversion.
// Unknown properties are rejected rather than removed, and every problem is reported at once.
import { Ajv, type Options } from 'ajv';
import formats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

function createAjv(coerceTypes: Options['coerceTypes']): Ajv {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: true,
    addUsedSchema: false,
  });
  formats.default(ajv);
  return ajv;
}

export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const body = createAjv(false);
  const text = createAjv('array');
  return ({ schema, httpPart }) => (httpPart === 'body' ? body : text).compile(schema as object);
}
