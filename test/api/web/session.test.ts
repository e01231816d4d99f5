// The session cookie's codec: what it seals opens again only with the same secret, unchanged and
// before it expires; CSRF tokens are per session and never equal the cookie's MAC.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createSessionCodec, sessionCookieName, type WebSession } from '../../../src/api/web/session.ts';

const SECRET = 'a-test-secret-that-is-long-enough-0123456789';
const NOW = new Date('2026-06-04T03:15:00.000Z');

const session: WebSession = {
  linkId: '0197a2b0-0000-7000-8000-000000000001',
  referralId: '0197a2b0-0000-7000-8000-000000000002',
  action: 'edit',
  institution: { idType: 'hci', id: 'S1234A' },
  requesterIdentifier: 'dr.lim@bukittimah.example',
  apiKeyId: '0197a2b0-0000-7000-8000-000000000003',
  expiresAt: new Date('2026-06-04T05:15:00.000Z'),
};

describe('the session codec', () => {
  const codec = createSessionCodec(SECRET);

  it('opens what it sealed, until it expires', () => {
    const sealed = codec.seal(session);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(codec.open(sealed, NOW)).toEqual(session);
    expect(codec.open(sealed, new Date('2026-06-04T05:14:59.000Z'))).toEqual(session);
    expect(codec.open(sealed, session.expiresAt)).toBeUndefined();
  });

  it('refuses a cookie sealed with another secret, or any change to it', () => {
    const sealed = codec.seal(session);
    expect(createSessionCodec(`${SECRET}-rotated`).open(sealed, NOW)).toBeUndefined();
    fc.assert(
      fc.property(fc.nat({ max: sealed.length - 1 }), fc.string({ minLength: 1, maxLength: 1 }), (at, c) => {
        fc.pre(sealed.charAt(at) !== c);
        const changed = sealed.slice(0, at) + c + sealed.slice(at + 1);
        return codec.open(changed, NOW) === undefined;
      }),
    );
  });

  it('refuses values that are not a sealed session', () => {
    for (const value of [undefined, '', 'v1', 'v1..', 'v2.e30.x', `v1.${'A'.repeat(3000)}.x`]) {
      expect(codec.open(value, NOW)).toBeUndefined();
    }
    // A valid MAC over a payload of the wrong shape still opens nothing.
    const forge = (payload: unknown) => {
      const sealed = codec.seal(session);
      const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
      return sealed.replace(/^v1\.[^.]+/, `v1.${body}`);
    };
    expect(codec.open(forge({ ...session }), NOW)).toBeUndefined();
  });

  it('derives a CSRF token per session, distinct from the cookie MAC', () => {
    const token = codec.csrfToken(session);
    expect(codec.checkCsrf(session, token)).toBe(true);
    expect(codec.checkCsrf({ ...session, linkId: '0197a2b0-0000-7000-8000-000000000009' }, token)).toBe(
      false,
    );
    expect(codec.checkCsrf(session, token.slice(1))).toBe(false);
    expect(codec.checkCsrf(session, undefined)).toBe(false);
    expect(codec.checkCsrf(session, [token])).toBe(false);
    expect(codec.seal(session).endsWith(token)).toBe(false);
    expect(createSessionCodec(`${SECRET}-rotated`).checkCsrf(session, token)).toBe(false);
  });

  it('names one cookie per referral and scope, with the __Host- prefix behind TLS', () => {
    expect(sessionCookieName('form', session.referralId, false)).toBe(`refhub_form_${session.referralId}`);
    expect(sessionCookieName('print', session.referralId, true)).toBe(
      `__Host-refhub_print_${session.referralId}`,
    );
  });
});
