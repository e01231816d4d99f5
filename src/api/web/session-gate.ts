// Every web page after the link checks the session first: the cookie of this referral and scope, a
// valid MAC, not expired, and a key that is still active for the institution. It then acts as a
// Caller of system `Manual`, with the link's institution, requester and key, so the services apply
// the same tenancy, lifecycle and audit as for the API.
//
// A POST must also come from our own page in this session: the CSRF token, and, when the browser
// sends them, an Origin equal to PUBLIC_URL's and a Sec-Fetch-Site of same-origin. The session
// cookie is SameSite=Lax besides, so a cross-site POST arrives without it.
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../../domain/clock.ts';
import type { Caller } from '../../services/caller.ts';
import { WEB_FORM_SYSTEM } from '../../domain/links.ts';
import type { LinkGrant, LinkRedemption } from '../../services/links/redemption.service.ts';
import {
  SCOPE_OF,
  SESSION_TTL_SECONDS,
  sessionCookieName,
  sessionCookiePrefix,
  type SessionCodec,
  type SessionScope,
  type WebSession,
} from './session.ts';
import { FORM_EXPIRED, SESSION_MISSING } from './web-pages.ts';

export interface SessionGateDeps {
  readonly codec: SessionCodec;
  readonly redemption: Pick<LinkRedemption, 'activeRole'>;
  readonly clock: Clock;
  /** PUBLIC_URL is https: cookies are Secure and take the __Host- prefix. */
  readonly secure: boolean;
  /** The origin of PUBLIC_URL, which every form POST must come from. */
  readonly publicOrigin: string;
}

export interface OpenSession {
  readonly session: WebSession;
  readonly caller: Caller;
}

export interface SessionCookie {
  readonly name: string;
  readonly value: string;
  readonly options: {
    readonly path: '/';
    readonly httpOnly: true;
    readonly sameSite: 'lax';
    readonly secure: boolean;
    readonly maxAge: number;
  };
}

export function createSessionGate(deps: SessionGateDeps) {
  /**
   * Refuses a POST whose headers say it came from another site, before its body is read (an upload
   * is not read at all then). `checkPost` checks this too, and then the token.
   */
  function checkOrigin(request: FastifyRequest): void {
    // Under `Referrer-Policy: no-referrer` browsers send `Origin: null` even for our own forms, so
    // only a real origin is compared; Sec-Fetch-Site and the token still decide.
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== 'null' && origin !== deps.publicOrigin) throw FORM_EXPIRED();
    const site = request.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') throw FORM_EXPIRED();
  }

  return {
    /** The cookie that starts a session for what a redeemed link grants. */
    cookieFor(grant: LinkGrant): SessionCookie {
      const session: WebSession = {
        linkId: grant.linkId,
        referralId: grant.referralId,
        action: grant.action,
        institution: grant.institution,
        requesterIdentifier: grant.requesterIdentifier,
        apiKeyId: grant.apiKeyId,
        expiresAt: new Date(deps.clock.now().getTime() + SESSION_TTL_SECONDS * 1000),
      };
      return {
        name: sessionCookieName(SCOPE_OF[grant.action], grant.referralId, deps.secure),
        value: deps.codec.seal(session),
        options: {
          path: '/',
          httpOnly: true,
          sameSite: 'lax',
          secure: deps.secure,
          maxAge: SESSION_TTL_SECONDS,
        },
      };
    },

    /** The session for `referralId` in `scope`, and who it acts as; a 403 page when there is none. */
    async open(request: FastifyRequest, referralId: string, scope: SessionScope): Promise<OpenSession> {
      const value = request.cookies[sessionCookieName(scope, referralId, deps.secure)];
      const session = deps.codec.open(value, deps.clock.now());
      if (session?.referralId !== referralId || SCOPE_OF[session.action] !== scope) throw SESSION_MISSING();
      const role = await deps.redemption.activeRole(session.apiKeyId, session.institution);
      if (role === undefined) throw SESSION_MISSING();
      return {
        session,
        caller: {
          apiKeyId: session.apiKeyId,
          system: WEB_FORM_SYSTEM,
          role,
          institution: session.institution,
          requesterIdentifier: session.requesterIdentifier,
          requestId: request.id,
          inWebForm: true,
        },
      };
    },

    /**
     * The links whose sessions this browser holds, live and each in its own cookie: a used link
     * among them may reopen its session (`LinkRedemption.redeem`).
     */
    heldLinkIds(request: FastifyRequest): ReadonlySet<string> {
      const now = deps.clock.now();
      const prefix = sessionCookiePrefix(deps.secure);
      const held = new Set<string>();
      for (const [name, value] of Object.entries(request.cookies)) {
        if (!name.startsWith(prefix)) continue;
        const session = deps.codec.open(value, now);
        if (session === undefined) continue;
        if (name === sessionCookieName(SCOPE_OF[session.action], session.referralId, deps.secure)) {
          held.add(session.linkId);
        }
      }
      return held;
    },

    /** The token every form of this session carries. */
    csrfToken: (session: WebSession): string => deps.codec.csrfToken(session),

    checkOrigin,

    /** Refuses a POST that did not come from this session's own page. */
    checkPost(request: FastifyRequest, session: WebSession, csrfToken: unknown): void {
      checkOrigin(request);
      if (!deps.codec.checkCsrf(session, csrfToken)) throw FORM_EXPIRED();
    },
  };
}

export type SessionGate = ReturnType<typeof createSessionGate>;
