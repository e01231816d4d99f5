// Liveness and readiness for load balancers and orchestrators. Neither needs a key. /healthz touches
// no dependency: it says only that the process answers. /readyz names each check with its status.
import type { FastifyInstance } from 'fastify';
import { isMigrated, ping } from '../../db/database.ts';
import type { AppContext } from '../../context.ts';

type Check = 'ok' | 'failing';

const CHECK_TIMEOUT_MS = 3_000;

function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error('timed out'));
    }, ms);
  });
  return Promise.race([work, timeout]).finally(() => {
    clearTimeout(timer);
  });
}

export function healthRoutes(ctx: AppContext) {
  return (app: FastifyInstance) => {
    app.get('/healthz', { schema: { hide: true } }, () => ({ status: 'ok' }));

    app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      const database = async (): Promise<Check> => {
        await ping(ctx.db);
        return 'ok';
      };
      const migrations = async (): Promise<Check> => ((await isMigrated(ctx.db)) ? 'ok' : 'failing');
      // Redis must be reachable and must never evict keys, or queued work could vanish.
      const redis = async (): Promise<Check> =>
        (await ctx.queues.health()).problem === undefined ? 'ok' : 'failing';
      const run = (check: () => Promise<Check>) =>
        within(check(), CHECK_TIMEOUT_MS).catch((): Check => 'failing');
      const [db, migrated, queues] = await Promise.all([run(database), run(migrations), run(redis)]);
      const checks: Record<string, Check> = { database: db, migrations: migrated, redis: queues };
      const healthy = Object.values(checks).every((c) => c === 'ok');
      // A stopping process is not ready, however healthy its dependencies: no new work for it.
      const status = ctx.lifecycle.draining ? 'draining' : healthy ? 'ready' : 'not-ready';
      return reply.code(status === 'ready' ? 200 : 503).send({ status, checks });
    });
  };
}
