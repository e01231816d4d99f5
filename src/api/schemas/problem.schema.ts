// The problem+json document every error returns (contract §9), for the OpenAPI document.
import { Type } from 'typebox';

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: 'Stable, machine-readable error code.' }),
    requestId: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { additionalProperties: true, description: 'application/problem+json (RFC 9457)' },
);

const problemResponse = {
  description: 'An error, as application/problem+json (RFC 9457).',
  content: { 'application/problem+json': { schema: Problem } },
};

/** The error responses every API route documents. */
export const problemResponses = {
  '4xx': problemResponse,
  '5xx': problemResponse,
};
