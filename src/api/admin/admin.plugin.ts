// The ops pages as one Fastify plugin: the /admin overview, the ledger search under /admin/ledger
// (ledger-search.ts) and bull-board under /admin/queues, all
// behind HTTP Basic with an ops API key. `api/app.ts` registers it. It is encapsulated: its hooks
// (sign-in, the write guard, the audit, the security headers) apply to these routes only, and
// bull-board's own plugins (@fastify/static, @fastify/view) and error handler stay inside it.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AdminParts, ApiDeps } from '../api-deps.ts';
import { BROWSER_SECURITY_HEADERS } from '../browser-headers.ts';
import { UnauthorizedError } from '../../errors.ts';
import { ledgerPages } from './ledger-search.ts';
import { errorKind } from '../../logger.ts';
import { ADMIN_PATH, BOARD_PATH } from '../../render/pages/admin-overview.page.ts';
import { overviewPageCsp, renderOverviewPage } from '../../render/pages/admin-overview.page.ts';

/** Headers on every ops response: a browser's, and the ops pages are not for search engines either. */
export const ADMIN_HEADERS: Readonly<Record<string, string>> = {
  ...BROWSER_SECURITY_HEADERS,
  'X-Robots-Tag': 'noindex',
};

/**
 * bull-board's page runs its own bundled script and styles from /admin/queues/static. Nothing else
 * may load: its stylesheet link to a web font service is blocked, so no ops page talks to a third party.
 */
export const BOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

// bull-board's page links a web font stylesheet on a third-party host. The policy above blocks it;
// leaving the link out spares every page load a blocked request and a console error.
const THIRD_PARTY_LINK = /<link\b[^>]*\bhref="https?:\/\/[^"]*"[^>]*>\s*/gi;

export type AdminDeps = Pick<ApiDeps, 'config' | 'displayTime' | 'ledgerSearch'>;

/**
 * `parts` come from the composition root: the board, the overview, their audit, and the sign-in
 * (whose failure count limits the failed sign-ins one client address may make in a window).
 */
export function adminPlugin(deps: AdminDeps, parts: AdminParts) {
  return async (app: FastifyInstance) => {
    const writable = deps.config.opsDashboardWrite;
    const { board, overview, audit, auth } = parts;

    app.addHook('onRequest', auth.guard);
    app.addHook('preHandler', auth.auditGranted);
    // bull-board's routes have its own error handler, which answers with the error's message: log the
    // error's kind here instead, and replace the body below, since a driver's message may quote a
    // value. (Errors of /admin itself reach the API's error handler, which does both already.)
    const onBoard = (url: string | undefined) => url?.startsWith(BOARD_PATH) === true;
    app.addHook('onError', async (request, _reply, error) => {
      if (!onBoard(request.routeOptions.url)) return;
      request.log.warn({ err: errorKind(error) }, 'ops page request failed');
    });
    app.addHook('onSend', async (request, reply, payload) => {
      for (const [name, value] of Object.entries(ADMIN_HEADERS)) void reply.header(name, value);
      if (!reply.hasHeader('Content-Security-Policy'))
        void reply.header('Content-Security-Policy', BOARD_CSP);
      if (reply.statusCode >= 500 && onBoard(request.routeOptions.url)) {
        void reply.type('application/json; charset=utf-8');
        // bull-board's client shows errors by translation key.
        return JSON.stringify({ error: { key: 'ERRORS.INTERNAL_SERVER_ERROR' }, requestId: request.id });
      }
      if (typeof payload === 'string' && String(reply.getHeader('content-type')).startsWith('text/html')) {
        return payload.replace(THIRD_PARTY_LINK, '');
      }
      return payload;
    });

    app.get(ADMIN_PATH, { schema: { hide: true } }, async (request, reply) => {
      const session = auth.sessionOf(request);
      if (session === undefined) throw new UnauthorizedError();
      const loaded = await overview.load();
      await audit.record(request, {
        action: 'admin.overview.read',
        outcome: 'success',
        key: session.key,
        user: session.user,
        referralIds: loaded.failedForwards.rows.map((r) => r.referralId),
      });
      const nonce = randomBytes(16).toString('base64');
      return reply
        .header('Content-Security-Policy', overviewPageCsp(nonce))
        .type('text/html; charset=utf-8')
        .send(
          renderOverviewPage({
            nonce,
            overview: loaded,
            writable,
            keyPrefix: session.key.prefix,
            requestId: request.id,
            displayTime: deps.displayTime,
          }),
        );
    });

    await app.register(
      ledgerPages({ ledgerSearch: deps.ledgerSearch, displayTime: deps.displayTime, writable, audit, auth }),
    );
    await app.register(board.plugin, { prefix: BOARD_PATH });
  };
}
