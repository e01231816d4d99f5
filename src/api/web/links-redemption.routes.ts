// Opening a one-time link (contract §8): GET /l/{token} consumes the token, starts a session for
// what it grants, and redirects (303) to the page for its action. A used link opened again in the
// browser whose session it started, while that session is live, goes to the same page (the session
// is not extended). Otherwise a used or expired link gets 410, an unknown one 404, each as a page a
// person can read.
//
// The token never leaves this handler: the request log names the route pattern (`/l/:token`), not
// the URL, and nothing here logs or echoes it.
//
// Only a real visit opens a link. HEAD answers without looking the token up, and a browser's
// speculative prefetch (Sec-Purpose: prefetch) is declined, so neither can use the link up before
// the person clicks it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiDeps } from '../api-deps.ts';
import type { FailureLimiter } from '../failure-limiter.ts';
import type { LinkAction } from '../../domain/referral-view.ts';
import type { SessionGate } from './session-gate.ts';
import { LINK_GONE, LINK_UNKNOWN, LINKS_THROTTLED, WebPageError } from './web-pages.ts';

// Tokens are 256 random bits, base64url: 43 characters.
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

const PAGE_OF: Readonly<Record<LinkAction, (referralId: string) => string>> = {
  edit: (id) => `/form/${id}`,
  respond: (id) => `/form/${id}`,
  view: (id) => `/view/${id}`,
  print: (id) => `/print/${id}`,
};

function isPrefetch(request: FastifyRequest): boolean {
  const purpose = `${String(request.headers['sec-purpose'] ?? '')} ${String(request.headers.purpose ?? '')}`;
  return /\bprefetch\b/i.test(purpose);
}

export type LinkRedemptionRoutesDeps = Pick<ApiDeps, 'linkRedemption' | 'metrics'>;

/** `failures` counts unknown tokens per client address (built by the composition root). */
export function linkRoutes(deps: LinkRedemptionRoutesDeps, gate: SessionGate, failures: FailureLimiter) {
  /** An unknown token: 404, or 429 once this address has tried too many. */
  const unknownFrom = (request: FastifyRequest, reply: FastifyReply): WebPageError => {
    const retryAfter = failures.fail(request.ip);
    deps.metrics.authFailure('link-token', retryAfter === undefined ? 'refused' : 'throttled');
    if (retryAfter === undefined) return LINK_UNKNOWN();
    void reply.header('Retry-After', String(retryAfter));
    return LINKS_THROTTLED(retryAfter);
  };

  return (app: FastifyInstance) => {
    app.get('/l/:token', { schema: { hide: true }, exposeHeadRoute: false }, async (request, reply) => {
      if (isPrefetch(request)) {
        throw new WebPageError(503, 'This link opens only when you select it', [
          'Links into a referral work once, so they are not opened ahead of time.',
        ]);
      }
      const { token } = request.params as { token: string };
      if (!TOKEN.test(token)) throw unknownFrom(request, reply);
      const result = await deps.linkRedemption.redeem(token, request.id, gate.heldLinkIds(request));
      switch (result.outcome) {
        case 'unknown':
          throw unknownFrom(request, reply);
        case 'used':
        case 'expired':
        case 'key-inactive':
          throw LINK_GONE();
        case 'redeemed': {
          const cookie = gate.cookieFor(result.grant);
          return reply
            .setCookie(cookie.name, cookie.value, cookie.options)
            .redirect(PAGE_OF[result.grant.action](result.grant.referralId), 303);
        }
        case 'reopened':
          return reply.redirect(PAGE_OF[result.grant.action](result.grant.referralId), 303);
      }
    });

    // A link checker's HEAD learns nothing and uses nothing up.
    app.head('/l/:token', { schema: { hide: true } }, async (_request, reply) => reply.code(204).send());
  };
}
