// Liveness and readiness for load balancers and orchestrators. Neither needs a key. /healthz touches
// no dependency: it says only that the process answers. /readyz names each check with its status,
// and says why a failing one fails, in its body and in one log line each time a check changes (a
// probe every few seconds would otherwise repeat the same line forever, or say nothing).
import type { FastifyInstance } from 'fastify';
import { isMigrated, ping } from '../../db/database.ts';
import type { ApiDeps } from '../api-deps.ts';

type Check = { readonly state: 'ok' } | { readonly state: 'failing'; readonly problem: string };
const OK: Check = { state: 'ok' };
const failing = (problem: string): Check => ({ state: 'failing', problem });

/** How long a check of a dependency may take before it counts as unanswered. */
export const CHECK_TIMEOUT_MS = 3_000;

export function within<T>(work: Promise<T>, ms: number): Promise<T> {
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

export type HealthDeps = Pick<ApiDeps, 'db' | 'queues' | 'logger' | 'lifecycle'>;

const CHECKS = {
  database: async (deps: HealthDeps): Promise<Check> => {
    await ping(deps.db);
    return OK;
  },
  migrations: async (deps: HealthDeps): Promise<Check> =>
    (await isMigrated(deps.db)) ? OK : failing('database migrations are pending: run `refhub migrate`'),
  // Redis must be reachable, must never evict keys and must take writes, or queued work could vanish.
  redis: async (deps: HealthDeps): Promise<Check> => {
    const { problem } = await deps.queues.health();
    return problem === undefined ? OK : failing(problem);
  },
} as const;

const UNANSWERED: Readonly<Record<keyof typeof CHECKS, string>> = {
  database: 'the database cannot be reached',
  migrations: 'the migrations could not be read',
  redis: 'Redis did not answer in time',
};

export function healthRoutes(deps: HealthDeps) {
  // The last problem logged per check, so that each change is logged once.
  const logged = new Map<string, string | undefined>();
  const logChange = (name: string, check: Check) => {
    const problem = check.state === 'failing' ? check.problem : undefined;
    if (logged.get(name) === problem) return;
    const before = logged.get(name);
    logged.set(name, problem);
    if (problem !== undefined) deps.logger.warn({ check: name, problem }, 'readiness check failing');
    else if (before !== undefined) deps.logger.info({ check: name }, 'readiness check ok again');
  };

  return (app: FastifyInstance) => {
    app.get('/healthz', { schema: { hide: true } }, () => ({ status: 'ok' }));

    app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      const names = Object.keys(CHECKS) as (keyof typeof CHECKS)[];
      const results = await Promise.all(
        names.map((name) =>
          within(CHECKS[name](deps), CHECK_TIMEOUT_MS).catch(() => failing(UNANSWERED[name])),
        ),
      );
      const checks: Record<string, 'ok' | 'failing'> = {};
      const problems: Record<string, string> = {};
      names.forEach((name, i) => {
        const result = results[i] ?? failing(UNANSWERED[name]);
        logChange(name, result);
        checks[name] = result.state;
        if (result.state === 'failing') problems[name] = result.problem;
      });
      const healthy = Object.keys(problems).length === 0;
      // A stopping process is not ready, however healthy its dependencies: no new work for it.
      const status = deps.lifecycle.draining ? 'draining' : healthy ? 'ready' : 'not-ready';
      return reply
        .code(status === 'ready' ? 200 : 503)
        .send(healthy ? { status, checks } : { status, checks, problems });
    });
  };
}
