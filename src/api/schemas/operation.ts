// What every API operation says about itself in the OpenAPI document. Generated clients name their
// methods after `operationId`, so it is a stable camelCase verb phrase (`cancelReferral`); `summary`
// is a short title, `description` the rules a caller needs; the tag groups it (openapi.ts `TAGS`).
//
// It also says which scope an access token needs for it, as the operation's `security`: an API key, or
// a token with that one scope. The auth plugin reads the scope back from there (`declaredScope`), so
// the document shows exactly what is enforced, and an API route that declares none is refused when it
// is registered: nothing guesses a scope from the HTTP method.
import { SCOPES, type Scope } from '../../domain/client-credentials.ts';
import { ACCESS_TOKEN_SCHEME, API_KEY_SCHEME, type TagName } from '../openapi.ts';

export interface OperationDoc {
  /** camelCase, unique, never changed once published: clients are built on it. */
  readonly operationId: string;
  readonly tag: TagName;
  /**
   * The scope an access token needs: `system/Referral.read` for an operation that changes nothing (a
   * search or a report sent as POST included), `system/Referral.write` for one that changes something.
   */
  readonly scope: Scope;
  readonly summary: string;
  readonly description: string;
}

/** The documentation part of a route schema; spread it into `schema`. */
export function operation(doc: OperationDoc) {
  // Either requirement will do: an API key, or an access token holding the scope.
  const security: Readonly<Record<string, readonly string[]>>[] = [
    { [API_KEY_SCHEME]: [] },
    { [ACCESS_TOKEN_SCHEME]: [doc.scope] },
  ];
  return {
    operationId: doc.operationId,
    tags: [doc.tag],
    summary: doc.summary,
    description: doc.description,
    security,
  };
}

/**
 * The scope a route schema declares through `operation()`, or undefined when it declares none, more
 * than one, or one refhub does not grant.
 */
export function declaredScope(schema: unknown): Scope | undefined {
  const security: unknown = (schema as { security?: unknown } | null | undefined)?.security;
  if (!Array.isArray(security)) return undefined;
  const scopes: unknown[] = security.flatMap((requirement: unknown) => {
    const listed = (requirement as Record<string, unknown> | null)?.[ACCESS_TOKEN_SCHEME];
    return Array.isArray(listed) ? (listed as unknown[]) : [];
  });
  const [scope] = scopes;
  return scopes.length === 1 && (SCOPES as readonly unknown[]).includes(scope) ? (scope as Scope) : undefined;
}
