// An OpenAPI schema with its `#/components/schemas/…` references replaced by what they name, so that
// a validator can take it on its own.

/** `node` with every `#/components/schemas/…` reference replaced by the schema it names. */
export function resolved(node: unknown, schemas: Readonly<Record<string, unknown>>): unknown {
  if (Array.isArray(node)) return node.map((item) => resolved(item, schemas));
  if (node === null || typeof node !== 'object') return node;
  const reference = (node as { $ref?: unknown }).$ref;
  if (typeof reference === 'string') {
    return resolved(schemas[reference.replace('#/components/schemas/', '')], schemas);
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, resolved(value, schemas)]));
}
