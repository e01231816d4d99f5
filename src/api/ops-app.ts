// The HTTP surface of a worker process (`refhub worker`): liveness, readiness, metrics and the
// doctor's report, nothing else. Orchestrators probe it and Prometheus scrapes it like an API
// process; `refhub doctor --server` asks it for the settings a worker runs with (EHR_URL is used
// by workers).
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ApiDeps } from './api-deps.ts';
import { httpEdgeOptions } from './http-edge.ts';
import { registerProblemHandlers, type ProblemDeps } from './plugins/problem.ts';
import { doctorRoutes, type DoctorRoutesDeps } from './routes/doctor.routes.ts';
import { healthRoutes, type HealthDeps } from './routes/health.routes.ts';
import { metricsRoutes, type MetricsRoutesDeps } from './routes/metrics.routes.ts';
import { observeRequests, type RequestLogDeps } from './request-log.ts';

export type OpsAppDeps = Pick<ApiDeps, 'config'> &
  ProblemDeps &
  HealthDeps &
  MetricsRoutesDeps &
  DoctorRoutesDeps &
  RequestLogDeps;

export async function buildOpsApp(deps: OpsAppDeps): Promise<FastifyInstance> {
  const logger: FastifyBaseLogger = deps.logger;
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    ...httpEdgeOptions(deps.config, logger),
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    void reply.header('Cache-Control', 'no-store');
    return payload;
  });
  observeRequests(app, deps);
  registerProblemHandlers(app, deps);
  await app.register(healthRoutes(deps));
  await app.register(metricsRoutes(deps));
  await app.register(doctorRoutes(deps));
  return app;
}
