// The HTTP surface of a worker process (`refhub worker`): liveness, readiness and metrics, nothing
// else. Orchestrators probe it and Prometheus scrapes it like an API process.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { AppContext } from '../composition/context.ts';
import { httpEdgeOptions } from './http-edge.ts';
import { registerProblemHandlers } from './plugins/problem.ts';
import { healthRoutes } from './routes/health.routes.ts';
import { metricsRoutes } from './routes/metrics.routes.ts';
import { observeRequests } from './request-log.ts';

export async function buildOpsApp(ctx: AppContext): Promise<FastifyInstance> {
  const logger: FastifyBaseLogger = ctx.logger;
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    ...httpEdgeOptions(ctx.config, logger),
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    void reply.header('Cache-Control', 'no-store');
    return payload;
  });
  observeRequests(app, ctx);
  registerProblemHandlers(app, ctx);
  await app.register(healthRoutes(ctx));
  await app.register(metricsRoutes(ctx));
  return app;
}
