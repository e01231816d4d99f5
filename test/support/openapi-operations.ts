// The operations of the OpenAPI document refhub serves, and the request an integrator sends for one by
// pressing "Execute" on the docs page with the document's examples as they are: tests that hold every
// operation to a rule walk the document with these, so a new operation is covered without anyone
// listing it.

export const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: Record<string, unknown>;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
export interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: {
    content: Record<string, { schema: Record<string, unknown>; example?: unknown; examples?: unknown }>;
  };
  security?: Record<string, string[]>[];
}
export interface Document {
  paths: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>;
  components: { schemas: Record<string, unknown>; securitySchemes?: Record<string, unknown> };
  security?: Record<string, string[]>[];
}
export interface Found {
  method: string;
  path: string;
  operation: Operation;
}

export function operationsOf(doc: Document): Found[] {
  return Object.entries(doc.paths).flatMap(([route, item]) =>
    METHODS.flatMap((method) => {
      const operation = item[method];
      return operation === undefined ? [] : [{ method: method.toUpperCase(), path: route, operation }];
    }),
  );
}

/** The media type a body is sent as: JSON where the operation takes it, else its first (a file's). */
export const bodyType = (operation: Operation): string | undefined => {
  const types = Object.keys(operation.requestBody?.content ?? {});
  return types.includes('application/json') ? 'application/json' : types[0];
};
export const bodyMedia = (operation: Operation) => {
  const type = bodyType(operation);
  return type === undefined ? undefined : operation.requestBody?.content[type];
};

/** The examples a parameter or a body gives, however the document spells them. */
export function examplesOf(holder: { example?: unknown; examples?: unknown } | undefined): unknown[] {
  if (holder === undefined) return [];
  if (holder.example !== undefined) return [holder.example];
  if (holder.examples !== undefined && holder.examples !== null && typeof holder.examples === 'object') {
    return Object.values(holder.examples as Record<string, { value: unknown }>).map((e) => e.value);
  }
  return [];
}

export interface ExampleRequest {
  readonly method: 'GET';
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly payload?: object;
}

/**
 * The request an integrator sends by pressing "Execute" with the examples as they are, or with the
 * values of `instead` for the parameters it names (the IDs of what a test created, say).
 */
export function exampleRequest(
  { method, path: template, operation }: Found,
  instead: Readonly<Record<string, unknown>> = {},
): ExampleRequest {
  const parameters = operation.parameters ?? [];
  const exampleOf = (p: Parameter) => (p.name in instead ? instead[p.name] : examplesOf(p)[0]);
  let url = template;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const p of parameters) {
    const value = exampleOf(p);
    if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(String(value)));
    if (p.in === 'query') {
      for (const item of Array.isArray(value) ? value : [value]) query.append(p.name, String(item));
    }
    if (p.in === 'header') headers[p.name.toLowerCase()] = String(value);
  }
  const body = examplesOf(bodyMedia(operation))[0];
  const type = bodyType(operation);
  if (body !== undefined && type !== undefined && type !== 'application/json') headers['content-type'] = type;
  const search = query.toString();
  return {
    method: method as 'GET',
    url: search === '' ? url : `${url}?${search}`,
    headers,
    ...(body === undefined ? {} : { payload: body as object }),
  };
}

/** The institution an example request acts for, from its path, query or body. */
export function institutionOf(request: ExampleRequest): string | undefined {
  const fromPath = /\/institutions\/hci\/([^/?]+)/.exec(request.url)?.[1];
  const fromQuery = new URL(request.url, 'http://refhub.test').searchParams.get('institutionId');
  const fromBody = (request.payload as { institutionId?: string } | undefined)?.institutionId;
  return fromPath ?? fromQuery ?? fromBody ?? undefined;
}
