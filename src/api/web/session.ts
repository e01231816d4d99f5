// The web form's session: what an opened one-time link grants, carried in a signed cookie so that
// any API process on the same database (and the same SESSION_SECRET) can check it without shared
// memory. The cookie holds IDs and an expiry only, never patient data, and an HMAC-SHA-256 over them.
//
// One cookie per referral and scope (`form`, `view`, `print`), so a clinician can have several
// referrals open in several tabs, and opening a referral's print link does not end its edit session.
//
// CSRF: every POST carries a token derived from the session (HMAC of the link's ID under a key of its
// own), so a page from another site cannot forge one, and each session has its own.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { InstitutionRef } from '../../domain/access.ts';
import type { LinkAction } from '../../domain/referral-view.ts';

/** Sessions last 2 hours from the moment the link was opened (contract §8). */
export const SESSION_TTL_SECONDS = 2 * 3600;

export type SessionScope = 'form' | 'view' | 'print';

export const SCOPE_OF: Readonly<Record<LinkAction, SessionScope>> = {
  edit: 'form',
  respond: 'form',
  view: 'view',
  print: 'print',
};

export interface WebSession {
  /** The one-time link that opened the session. */
  readonly linkId: string;
  readonly referralId: string;
  readonly action: LinkAction;
  readonly institution: InstitutionRef;
  readonly requesterIdentifier: string;
  /** The API key that minted the link; the session acts, and is audited, with it. */
  readonly apiKeyId: string;
  readonly expiresAt: Date;
}

/**
 * The cookie of one referral's session in one scope. Behind TLS it takes the `__Host-` prefix, which
 * browsers accept only with Secure, Path=/ and no Domain: no subdomain can plant or shadow it.
 */
export function sessionCookieName(scope: SessionScope, referralId: string, secure: boolean): string {
  return `${sessionCookiePrefix(secure)}${scope}_${referralId}`;
}

/** How every session cookie's name starts. */
export function sessionCookiePrefix(secure: boolean): string {
  return `${secure ? '__Host-' : ''}refhub_`;
}

const VERSION = 'v1';
const LINK_ACTIONS: readonly string[] = Object.keys(SCOPE_OF);

function base64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

function sameBytes(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function text(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= max;
}

/** The session in `payload`, if every member has the shape a sealed session has. */
function sessionOf(payload: unknown): WebSession | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const p = payload as Record<string, unknown>;
  if (
    !text(p.l, 64) ||
    !text(p.r, 64) ||
    !text(p.a, 16) ||
    !LINK_ACTIONS.includes(p.a) ||
    !text(p.t, 16) ||
    !text(p.i, 64) ||
    !text(p.q, 254) ||
    !text(p.k, 64) ||
    typeof p.e !== 'number' ||
    !Number.isSafeInteger(p.e)
  ) {
    return undefined;
  }
  return {
    linkId: p.l,
    referralId: p.r,
    action: p.a as LinkAction,
    institution: { idType: p.t, id: p.i },
    requesterIdentifier: p.q,
    apiKeyId: p.k,
    expiresAt: new Date(p.e * 1000),
  };
}

export function createSessionCodec(secret: string) {
  // Separate keys for the two uses, so a CSRF token can never pass as a cookie MAC or the reverse.
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', secret, 'refhub', info, 32));
  const macKey = derive('web session cookie v1');
  const csrfKey = derive('web session csrf v1');
  const mac = (data: string) => createHmac('sha256', macKey).update(data).digest('base64url');
  const csrfToken = (session: WebSession) =>
    createHmac('sha256', csrfKey).update(session.linkId).digest('base64url');

  return {
    seal(session: WebSession): string {
      const payload = base64url(
        JSON.stringify({
          l: session.linkId,
          r: session.referralId,
          a: session.action,
          t: session.institution.idType,
          i: session.institution.id,
          q: session.requesterIdentifier,
          k: session.apiKeyId,
          e: Math.floor(session.expiresAt.getTime() / 1000),
        }),
      );
      return `${VERSION}.${payload}.${mac(`${VERSION}.${payload}`)}`;
    },

    /** The session a cookie value carries, if its MAC holds and it has not expired at `now`. */
    open(value: string | undefined, now: Date): WebSession | undefined {
      if (value === undefined || value.length > 2048) return undefined;
      const [version, payload, signature, ...rest] = value.split('.');
      if (version !== VERSION || payload === undefined || signature === undefined || rest.length > 0) {
        return undefined;
      }
      if (!sameBytes(signature, mac(`${version}.${payload}`))) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
      } catch {
        return undefined;
      }
      const session = sessionOf(parsed);
      return session !== undefined && session.expiresAt > now ? session : undefined;
    },

    csrfToken,

    checkCsrf(session: WebSession, token: unknown): boolean {
      return typeof token === 'string' && sameBytes(token, csrfToken(session));
    },
  };
}

export type SessionCodec = ReturnType<typeof createSessionCodec>;
