// The bytes of answers this process holds for clients that have not read them yet
// (RESPONSES_IN_FLIGHT_MIB). An answer is built whole and handed to Node at once; the network takes
// it as fast as the client reads, and what the client has not read stays in the process. A thousand
// slow clients each reading a large referral would hold gigabytes, so every answer is counted from
// the moment it is sent until the network has taken its last byte (or the connection is gone):
// - a read (GET) whose answer does not fit is answered 503 with `Retry-After` instead, and its answer
//   is dropped; the first answer always goes, however large (the budget's rule);
// - an answer to anything else goes and is counted whether it fits or not: its change has committed,
//   and a client that retried a 503 without an Idempotency-Key would make the change twice.
// A read answered 503 has written its audit row (the audit comes before data leaves): the row records
// a read whose data did not leave. docs/performance.md, "Bytes in flight", has the arithmetic.
import type { FastifyInstance } from 'fastify';
import { createByteBudget } from '../domain/byte-budget.ts';
import { UnavailableError } from '../errors.ts';
import type { Metrics } from '../observability/metrics.ts';
import { problemOf } from './plugins/problem.ts';

/** How long a client that was refused waits before it asks again, in seconds. */
const RETRY_AFTER_SECONDS = 1;

export interface ResponseBudgetDeps {
  readonly config: { readonly responsesInFlightMib: number };
  readonly metrics: Pick<Metrics, 'responseBytesInFlight' | 'responseShed'>;
}

export function registerResponseBudget(app: FastifyInstance, deps: ResponseBudgetDeps): void {
  const budget = createByteBudget(deps.config.responsesInFlightMib * 1024 * 1024);
  app.addHook('onSend', async (request, reply, payload) => {
    // A stream (a static asset) is read as the network takes it: it holds no answer whole.
    const bytes =
      typeof payload === 'string'
        ? Buffer.byteLength(payload)
        : Buffer.isBuffer(payload)
          ? payload.length
          : 0;
    if (bytes === 0 || request.method === 'HEAD') return payload;
    let release = budget.tryTake(bytes);
    if (release === undefined) {
      if (request.method === 'GET') {
        deps.metrics.responseShed();
        reply.removeHeader('etag');
        reply.removeHeader('last-modified');
        void reply
          .code(503)
          .header('Retry-After', String(RETRY_AFTER_SECONDS))
          .type('application/problem+json; charset=utf-8');
        return JSON.stringify(
          problemOf(
            new UnavailableError(
              'This server holds as many answers for slow clients as it may; retry in a moment.',
              RETRY_AFTER_SECONDS,
            ),
            request.id,
          ),
        );
      }
      release = budget.takeAnyway(bytes);
    }
    deps.metrics.responseBytesInFlight(budget.held);
    const done = release;
    const giveBack = () => {
      done();
      deps.metrics.responseBytesInFlight(budget.held);
    };
    // `finish`: the network has the last byte; `close`: the connection went first. Either gives the
    // bytes back, once.
    reply.raw.once('finish', giveBack);
    reply.raw.once('close', giveBack);
    return payload;
  });
}
