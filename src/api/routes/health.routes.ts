// Liveness and readiness for load balancers and orchestrators. Neither needs a key. /healthz touches
// no dependency: it says only that the process answers. /readyz names each check with its status,
// and says why a failing one fails, in its body and in one log line each time a check changes (a
// probe every few seconds would otherwise repeat the same line forever, or say nothing). A database
// whose every connection is in use is `busy`, not failing: it answers, and the probe waits its turn
// like any request (on embedded PGlite, whose one connection a transaction holds while it runs).
import type { FastifyInstance } from 'fastify';
import type { DatabaseProbe } from '../../db/database.ts';
import type { ApiDeps } from '../api-deps.ts';

type Check = { readonly state: 'ok' } | { readonly state: 'busy' | 'failing'; readonly problem: string };
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

export type HealthDeps = Pick<ApiDeps, 'queues' | 'logger' | 'lifecycle'> & {
  readonly store: Pick<ApiDeps['store'], 'connections' | 'probe'>;
};

/**
 * `check` run on a connection of its own, within the check's time. When time runs out, whether the
 * database is busy (the check never got a connection, and every one is in use), silent (it got one,
 * and nothing came back) or out of reach (no connection could be opened).
 */
async function onStore(
  deps: HealthDeps,
  check: (probe: Omit<DatabaseProbe, 'onConnection'>) => Promise<Check>,
  unreachable: string,
): Promise<Check> {
  const probe = { connected: false };
  try {
    return await within(
      deps.store.probe.onConnection((connection) => {
        probe.connected = true;
        return check(connection);
      }),
      CHECK_TIMEOUT_MS,
    );
  } catch {
    if (probe.connected) return failing('the database did not answer in time');
    const { held, max } = deps.store.connections();
    if (held < max) return failing(unreachable);
    return {
      state: 'busy',
      problem:
        `${max === 1 ? 'the one connection' : `all ${max} connections`} to the database ` +
        `${max === 1 ? 'is' : 'are'} in use: statements wait their turn, and this check waited ` +
        `${CHECK_TIMEOUT_MS / 1000} s for one`,
    };
  }
}

const CHECKS = {
  database: (deps: HealthDeps) =>
    onStore(
      deps,
      async (database) => {
        await database.ping();
        return OK;
      },
      'the database cannot be reached',
    ),
  migrations: (deps: HealthDeps) =>
    onStore(
      deps,
      async (database) =>
        (await database.isMigrated()) ? OK : failing('database migrations are pending: run `refhub migrate`'),
      'the migrations could not be read',
    ),
  // The queues must be reachable; in Redis they must also never be evicted and must take writes, or
  // queued work could vanish. Named by where they are: `redis`, or `queues` in the database.
  queues: async (deps: HealthDeps): Promise<Check> => {
    const { problem } = await within(deps.queues.health(), CHECK_TIMEOUT_MS).catch(() => ({
      problem: UNANSWERED.queues,
    }));
    if (problem === undefined) return OK;
    // Queues in the database wait for a connection as every statement does: with all of them in
    // use, the database is busy, as its own check says, not out of reach.
    const { held, max } = deps.store.connections();
    if (deps.queues.backend.name === 'postgres' && held >= max) {
      return { state: 'busy', problem: 'the queues are in the database, whose connections are all in use' };
    }
    return failing(problem);
  },
} as const;

const UNANSWERED: Readonly<Record<keyof typeof CHECKS, string>> = {
  database: 'the database cannot be reached',
  migrations: 'the migrations could not be read',
  queues: 'the queues did not answer in time',
};

export function healthRoutes(deps: HealthDeps) {
  // The last problem logged per check, so that each change is logged once.
  const logged = new Map<string, string | undefined>();
  const logChange = (name: string, check: Check) => {
    const problem = check.state === 'ok' ? undefined : check.problem;
    if (logged.get(name) === problem) return;
    const before = logged.get(name);
    logged.set(name, problem);
    if (check.state === 'failing') deps.logger.warn({ check: name, problem }, 'readiness check failing');
    else if (check.state === 'busy') deps.logger.info({ check: name, problem }, 'readiness check busy');
    else if (before !== undefined) deps.logger.info({ check: name }, 'readiness check ok again');
  };

  return (app: FastifyInstance) => {
    app.get('/healthz', { schema: { hide: true } }, () => ({ status: 'ok' }));

    app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      const names = Object.keys(CHECKS) as (keyof typeof CHECKS)[];
      const results = await Promise.all(
        names.map((name) =>
          // Each check bounds its own wait (CHECK_TIMEOUT_MS).
          CHECKS[name](deps).catch(() => failing(UNANSWERED[name])),
        ),
      );
      const checks: Record<string, Check['state']> = {};
      const problems: Record<string, string> = {};
      const busy: Record<string, string> = {};
      names.forEach((name, i) => {
        const result = results[i] ?? failing(UNANSWERED[name]);
        const shown = name === 'queues' && deps.queues.backend.name === 'redis' ? 'redis' : name;
        logChange(shown, result);
        checks[shown] = result.state;
        if (result.state === 'failing') problems[shown] = result.problem;
        if (result.state === 'busy') busy[shown] = result.problem;
      });
      const healthy = Object.keys(problems).length === 0;
      // A stopping process is not ready, however healthy its dependencies: no new work for it.
      const status = deps.lifecycle.draining ? 'draining' : healthy ? 'ready' : 'not-ready';
      return reply.code(status === 'ready' ? 200 : 503).send({
        status,
        checks,
        ...(healthy ? {} : { problems }),
        ...(Object.keys(busy).length === 0 ? {} : { busy }),
      });
    });
  };
}
