// A request schema that the route validates loosely, because the handler (or a plugin) checks the
// value itself with an error message of its own, can carry the exact form the value must take for
// the OpenAPI document. `additionalField`, for example, is validated as text because it may be
// comma-separated and the handler names the allowed values; the document lists them as an enum.
//
// The documented form travels under a symbol: Ajv never sees it (validation is unchanged), and
// `documentedRouteSchema` swaps it in when @fastify/swagger reads the route.
import type { TSchema } from 'typebox';

const DOCUMENTED = Symbol('documented form');

type Documented = TSchema & { readonly [DOCUMENTED]?: TSchema };

/** `validated` for the validator, `documented` (description included from `validated`) for the document. */
export function documentedAs<T extends TSchema>(validated: T, documented: TSchema): T {
  const description: unknown = (validated as { description?: unknown }).description;
  const form: TSchema = typeof description === 'string' ? { ...documented, description } : documented;
  return Object.assign(validated, { [DOCUMENTED]: form });
}

function swapped(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(swapped);
  if (node === null || typeof node !== 'object') return node;
  const documented = (node as Documented)[DOCUMENTED];
  if (documented !== undefined) return documented;
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, swapped(value)]));
}

/** The route schema as the document shows it: every `documentedAs` value replaced by its documented form. */
export function documentedRouteSchema<S>(schema: S): S {
  return swapped(schema) as S;
}
