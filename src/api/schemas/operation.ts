// What every API operation says about itself in the OpenAPI document. Generated clients name their
// methods after `operationId`, so it is a stable camelCase verb phrase (`cancelReferral`); `summary`
// is a short title, `description` the rules a caller needs; the tag groups it (openapi.ts `TAGS`).
import type { TagName } from '../openapi.ts';

export interface OperationDoc {
  /** camelCase, unique, never changed once published: clients are built on it. */
  readonly operationId: string;
  readonly tag: TagName;
  readonly summary: string;
  readonly description: string;
}

/** The documentation part of a route schema; spread it into `schema`. */
export function operation(doc: OperationDoc) {
  return {
    operationId: doc.operationId,
    tags: [doc.tag],
    summary: doc.summary,
    description: doc.description,
  };
}
