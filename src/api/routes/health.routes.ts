// Liveness and readiness for load balancers and orchestrators. Neither needs a key.
import type { FastifyInstance } from 'fastify';
import { isMigrated, ping } from '../../db/database.ts';
import type { AppContext } from '../../context.ts';

export function healthRoutes(ctx: AppContext) {
  return (app: FastifyInstance) => {
    app.get('/healthz', { schema: { hide: true } }, () => ({ status: 'ok' }));

    app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      const checks: Record<string, 'ok' | 'failing'> = {};
      try {
        await ping(ctx.db);
        checks.database = (await isMigrated(ctx.db)) ? 'ok' : 'failing';
      } catch {
        checks.database = 'failing';
      }
      const ready = Object.values(checks).every((c) => c === 'ok');
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not-ready', checks });
    });
  };
}
