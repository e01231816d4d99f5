// GET /metrics for Prometheus. Metrics hold no patient data, but they do describe the installation,
// so a scrape needs `Authorization: Bearer <METRICS_TOKEN>` or an ops API key (`ApiKey <key>`).
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiDeps } from '../api-deps.ts';
import { ForbiddenRoleError, UnauthorizedError } from '../../errors.ts';

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const API_KEY = /^ApiKey\s+(\S+)\s*$/i;

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export type MetricsRoutesDeps = Pick<ApiDeps, 'config' | 'apiKeys' | 'metrics'>;

async function authorize(deps: MetricsRoutesDeps, request: FastifyRequest): Promise<void> {
  const header = request.headers.authorization ?? '';
  const bearer = BEARER.exec(header)?.[1];
  if (
    bearer !== undefined &&
    deps.config.metricsToken !== undefined &&
    sameSecret(bearer, deps.config.metricsToken)
  ) {
    return;
  }
  const presented = API_KEY.exec(header)?.[1];
  const key = presented === undefined ? undefined : await deps.apiKeys.authenticate(presented);
  if (!key) {
    throw new UnauthorizedError(
      'Send "Authorization: Bearer <METRICS_TOKEN>" or an ops key as "ApiKey <key>".',
    );
  }
  if (key.role !== 'ops') throw new ForbiddenRoleError(`A ${key.role} key may not read metrics.`);
}

export function metricsRoutes(deps: MetricsRoutesDeps) {
  return (app: FastifyInstance) => {
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      await authorize(deps, request);
      const body = await deps.metrics.registry.metrics();
      return reply.type(deps.metrics.registry.contentType).send(body);
    });
  };
}
