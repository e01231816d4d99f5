// The API's HTTP app, built from the context: `refhub all` and `refhub api` serve it, tests inject into
// it. Each app gets parts of its own that keep state in this process's memory (the failure counts of
// keys, link tokens and ops sign-ins, the web session gate, the queue board), so two apps on one
// context would not share them. (A worker's app, health and metrics only, needs no parts:
// serve.ts calls `buildOpsApp(ctx)` itself.)
import type { FastifyInstance } from 'fastify';
import type { AppContext } from './context.ts';
import type { ApiParts } from '../api/api-deps.ts';
import { buildApp } from '../api/app.ts';
import { createAdminAudit } from '../api/admin/admin-audit.ts';
import { createOpsAuth } from '../api/admin/ops-auth.ts';
import { createQueueBoard } from '../api/admin/queue-board.ts';
import { createFailureLimiter, FAILED_AUTHENTICATION } from '../api/failure-limiter.ts';
import { createUploadBudget } from '../api/upload-budget.ts';
import { createSessionCodec } from '../api/web/session.ts';
import { createSessionGate } from '../api/web/session-gate.ts';
import { resolveSessionSecret } from '../api/web/session-secret.ts';
import { createOpsOverview } from '../services/admin-overview.service.ts';

/** The per-app parts of the API. The session secret is read (or made, outside production) here. */
export async function createApiParts(ctx: AppContext): Promise<ApiParts> {
  const failureLimiter = () => createFailureLimiter({ clock: ctx.clock, ...FAILED_AUTHENTICATION });
  const publicUrl = new URL(ctx.config.publicUrl);
  const gate = createSessionGate({
    codec: createSessionCodec(await resolveSessionSecret(ctx.config, ctx.stores.installation)),
    redemption: ctx.linkRedemption,
    clock: ctx.clock,
    secure: publicUrl.protocol === 'https:',
    publicOrigin: publicUrl.origin,
  });
  // The producer is asked for only when the ops pages are used: it connects to Redis then.
  const producer = () => ctx.queues;
  const writable = ctx.config.opsDashboardWrite;
  const board = createQueueBoard({ producer, writable, timeZone: ctx.displayTime.timeZone });
  const audit = createAdminAudit({ stores: ctx.stores, clock: ctx.clock });
  const uploads = createUploadBudget({ config: ctx.config, metrics: ctx.metrics });
  return {
    apiKeyFailures: failureLimiter(),
    uploads,
    web: { gate, linkFailures: failureLimiter(), uploads },
    admin: {
      board,
      overview: createOpsOverview({ stores: ctx.stores, clock: ctx.clock, producer }),
      audit,
      auth: createOpsAuth({
        authenticate: (presented) => ctx.apiKeys.authenticate(presented),
        audit,
        limiter: failureLimiter(),
        writable,
        onGranted: () => {
          board.attach();
        },
      }),
    },
  };
}

/** The API process's app: the API, the web form, the ops pages, health and metrics. */
export async function createApiApp(ctx: AppContext): Promise<FastifyInstance> {
  return buildApp(ctx, await createApiParts(ctx));
}
