// One log line and one metric observation per request: the route pattern, never the URL (its query
// may carry identifiers, and a one-time link's path carries its token). The probes are logged at
// debug: a load balancer asks every few seconds, and their lines would bury everything else at info;
// a change of readiness has lines of its own (routes/health.routes.ts).
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from './api-deps.ts';

export type RequestLogDeps = Pick<ApiDeps, 'metrics'>;

const PROBES: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

export function observeRequests(app: FastifyInstance, deps: RequestLogDeps): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    deps.metrics.observeRequest(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
    const level = PROBES.has(route) ? 'debug' : 'info';
    request.log[level](
      {
        method: request.method,
        route,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        keyPrefix: request.apiKey?.prefix,
      },
      'request completed',
    );
  });
}
