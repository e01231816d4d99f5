// The sandbox EHR's control API under `/_sandbox/`: tests and developers stage failures and read
// what was delivered. Every input is validated like a real API's (unknown fields and out-of-range
// values are a 400), because a typo in a failure plan that silently did nothing would make a test
// pass for the wrong reason.
import type { IncomingMessage } from 'node:http';
import { Ajv } from 'ajv';
import { Type, type Static } from 'typebox';
import { fieldProblemsOf, type FieldProblem } from '../domain/forwarding/forward-request.ts';
import { MAX_ATTACHMENT_MESSAGE_ID_LENGTH } from '../domain/ids.ts';
import type { SandboxEhrState } from './sandbox-ehr-state.ts';
import {
  isJsonMediaType,
  malformedJson,
  parseJson,
  payloadTooLarge,
  problem,
  readBody,
  type Answer,
} from './sandbox-ehr-http.ts';

export const CONTROL_PREFIX = '/_sandbox';
const MAX_CONTROL_BODY_BYTES = 64 * 1024;

export const SandboxBehaviourBody = Type.Object(
  {
    statuses: Type.Optional(
      Type.Array(Type.Integer({ minimum: 300, maximum: 599 }), {
        maxItems: 1000,
        description: 'Answered in order to the next EHR requests; 3xx, 4xx and 5xx only',
      }),
    ),
    retryAfterSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400 })),
    latencyMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 120_000 })),
    resets: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
    fileStatuses: Type.Optional(
      Type.Array(Type.Integer({ minimum: 300, maximum: 599 }), {
        maxItems: 1000,
        description: 'Answered in order to the next requests carrying a file, before statuses',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SandboxBehaviourInput = Static<typeof SandboxBehaviourBody>;

const DELIVERY_FILTERS = { messageId: MAX_ATTACHMENT_MESSAGE_ID_LENGTH, referralId: 36 } as const;

type Method = 'GET' | 'PUT' | 'DELETE';
type ControlHandler = (req: IncomingMessage, url: URL) => Promise<Answer> | Answer;

function invalid(detail: string, errors: readonly FieldProblem[]): Answer {
  return problem(400, 'validation_failed', 'Invalid input', detail, { errors });
}

/** The control routes, by path and method, bound to one sandbox's state. */
export function createControlRoutes(
  state: SandboxEhrState,
): ReadonlyMap<string, Readonly<Partial<Record<Method, ControlHandler>>>> {
  const ajv = new Ajv({ allErrors: true, coerceTypes: false, useDefaults: false });
  const validateBehaviour = ajv.compile<SandboxBehaviourInput>(SandboxBehaviourBody);

  const putBehaviour: ControlHandler = async (req) => {
    if (!isJsonMediaType(req.headers['content-type'])) {
      return problem(415, 'unsupported_media_type', 'Unsupported media type', 'Send application/json.');
    }
    const body = await readBody(req, MAX_CONTROL_BODY_BYTES);
    if (body.kind === 'too-large') return payloadTooLarge(MAX_CONTROL_BODY_BYTES, body.drained);
    if (body.kind === 'aborted') return problem(400, 'aborted', 'Aborted', 'The request body was cut short.');
    const parsed = parseJson(body.bytes);
    if (parsed === undefined) return malformedJson();
    if (!validateBehaviour(parsed.value)) {
      return invalid('The behaviour is not valid.', fieldProblemsOf(validateBehaviour.errors));
    }
    return { status: 200, body: state.setBehaviour(parsed.value) };
  };

  const getDeliveries: ControlHandler = (_req, url) => {
    const errors: FieldProblem[] = [];
    const filter: Record<string, string> = {};
    for (const name of new Set(url.searchParams.keys())) {
      const values = url.searchParams.getAll(name);
      const maxLength = (DELIVERY_FILTERS as Readonly<Record<string, number>>)[name];
      if (maxLength === undefined) errors.push({ path: `/${name}`, message: 'is not a known filter' });
      else if (values.length > 1) errors.push({ path: `/${name}`, message: 'may be given once' });
      else if (values[0] === undefined || values[0] === '' || values[0].length > maxLength)
        errors.push({ path: `/${name}`, message: `must be 1 to ${maxLength} characters` });
      else filter[name] = values[0];
    }
    if (errors.length > 0) return invalid('The query is not valid.', errors);
    return { status: 200, body: { deliveries: state.deliveries(filter) } };
  };

  return new Map<string, Partial<Record<Method, ControlHandler>>>([
    [
      CONTROL_PREFIX,
      {
        DELETE: () => {
          state.reset();
          return { status: 204 };
        },
      },
    ],
    [`${CONTROL_PREFIX}/health`, { GET: () => ({ status: 200, body: { status: 'ok' } }) }],
    [
      `${CONTROL_PREFIX}/behaviour`,
      { GET: () => ({ status: 200, body: state.behaviour() }), PUT: putBehaviour },
    ],
    [`${CONTROL_PREFIX}/deliveries`, { GET: getDeliveries }],
    [`${CONTROL_PREFIX}/requests`, { GET: () => ({ status: 200, body: state.requests() }) }],
  ]);
}
