// Opening a one-time link (contract §8): the token is consumed once, atomically, and what it grants
// becomes a web-form session for one referral, one action, one institution and one requester.
//
// Single use holds under concurrent clicks because consuming is one conditional UPDATE (`used_at IS
// NULL AND expires_at > now`): of any number of racing requests, exactly one changes the row. Every
// attempt on a known token is audited in the same transaction, the refused ones as `denied`, so that
// a link opened twice (forwarded, or replayed by a scanner) shows up in the audit trail.
//
// A link acts with the key that minted it: the session's writes are audited with that key, so a
// link whose key has since been revoked (or that names none) opens nothing.
//
// A used link opened again in the browser that opened it, while the session it started is live,
// reopens that session (`link.reopen`): the caller passes the links whose sessions the browser
// proves it holds (signed cookies), and nothing new is granted. Anywhere else a used link opens
// nothing.
import type { InstitutionRef } from '../../domain/access.ts';
import type { Clock } from '../../domain/clock.ts';
import { WEB_FORM_SYSTEM } from '../../domain/links.ts';
import type { LinkAction } from '../../domain/referral-view.ts';
import type { Role } from '../../domain/statuses.ts';
import { auditEventOf } from '../../domain/audit.ts';
import type { LinkTokenRecord } from '../../db/links.repository.ts';
import type { CapabilityStores, Stores } from '../../db/stores.ts';
import { hashLinkToken } from './minter.ts';

export const LINK_REDEEM_ACTION = 'link.redeem';
export const LINK_REOPEN_ACTION = 'link.reopen';

/** What an opened link grants: the scope of the session it starts. */
export interface LinkGrant {
  readonly linkId: string;
  readonly referralId: string;
  readonly action: LinkAction;
  readonly institution: InstitutionRef;
  readonly requesterIdentifier: string;
  readonly apiKeyId: string;
  readonly role: Exclude<Role, 'ops'>;
}

export type Redemption =
  | { readonly outcome: 'redeemed'; readonly grant: LinkGrant }
  /** Used before by this browser, whose session from it is still live: that session goes on. */
  | { readonly outcome: 'reopened'; readonly grant: LinkGrant }
  | { readonly outcome: 'unknown' }
  /** Known, but opens nothing: opened before, past its expiry, or its key is no longer active. */
  | { readonly outcome: 'used' | 'expired' | 'key-inactive' };

/** What opening a link reads and writes: the link, the key that minted it, the audit row. */
type RedemptionStores = Pick<CapabilityStores, 'links' | 'apiKeys' | 'audit'>;

/** The role of `apiKeyId` if it is active and may still act for `institution`; else undefined. */
async function activeRole(
  apiKeys: Pick<Stores['apiKeys'], 'findActiveByIdOrPrefix'>,
  apiKeyId: string | null,
  institution: InstitutionRef,
): Promise<Exclude<Role, 'ops'> | undefined> {
  if (apiKeyId === null) return undefined;
  const [key] = (await apiKeys.findActiveByIdOrPrefix(apiKeyId)).filter((k) => k.id === apiKeyId);
  if (key === undefined || key.role === 'ops') return undefined;
  const mayAct = key.institutions.some((i) => i.idType === institution.idType && i.id === institution.id);
  return mayAct ? key.role : undefined;
}

const NONE: ReadonlySet<string> = new Set();

function grantOf(link: LinkTokenRecord, apiKeyId: string, role: Exclude<Role, 'ops'>): LinkGrant {
  return {
    linkId: link.id,
    referralId: link.referralId,
    action: link.action,
    institution: link.institution,
    requesterIdentifier: link.requesterIdentifier,
    apiKeyId,
    role,
  };
}

export function createLinkRedemption(deps: {
  readonly stores: Pick<Stores, 'transaction' | 'apiKeys'>;
  readonly clock: Clock;
}) {
  async function auditAttempt(
    tx: RedemptionStores,
    link: LinkTokenRecord,
    outcome: 'success' | 'denied',
    requestId: string,
    now: Date,
    action: typeof LINK_REDEEM_ACTION | typeof LINK_REOPEN_ACTION = LINK_REDEEM_ACTION,
  ): Promise<void> {
    // The person who opened the link acts through the web form, for the key and institution it was made for.
    const actor = {
      requestId,
      apiKeyId: link.apiKeyId,
      system: WEB_FORM_SYSTEM,
      institution: link.institution,
      requesterIdentifier: link.requesterIdentifier,
    };
    await tx.audit.record(auditEventOf(actor, action, [link.referralId], now, outcome));
  }

  return {
    /**
     * Consumes `token` if it may still be used; the outcome says what the person should be told.
     * `heldLinkIds` are the links whose live sessions the browser holds: a used link among them
     * reopens its session.
     */
    redeem(token: string, requestId: string, heldLinkIds: ReadonlySet<string> = NONE): Promise<Redemption> {
      return deps.stores.transaction(async (tx): Promise<Redemption> => {
        const tokens = tx.links;
        const link = await tokens.findByHash(hashLinkToken(token));
        if (link === undefined) return { outcome: 'unknown' };
        const now = deps.clock.now();
        if (!(await tokens.consume(link.id, now))) {
          // Read again: a racing request may have consumed it after the first read.
          const current = (await tokens.findById(link.id)) ?? link;
          if (current.usedAt !== null && heldLinkIds.has(link.id)) {
            const role = await activeRole(tx.apiKeys, link.apiKeyId, link.institution);
            if (role !== undefined && link.apiKeyId !== null) {
              await auditAttempt(tx, link, 'success', requestId, now, LINK_REOPEN_ACTION);
              return { outcome: 'reopened', grant: grantOf(link, link.apiKeyId, role) };
            }
          }
          await auditAttempt(tx, link, 'denied', requestId, now);
          return { outcome: current.usedAt === null ? 'expired' : 'used' };
        }
        const role = await activeRole(tx.apiKeys, link.apiKeyId, link.institution);
        if (role === undefined || link.apiKeyId === null) {
          await auditAttempt(tx, link, 'denied', requestId, now);
          return { outcome: 'key-inactive' };
        }
        await auditAttempt(tx, link, 'success', requestId, now);
        return { outcome: 'redeemed', grant: grantOf(link, link.apiKeyId, role) };
      });
    },

    /**
     * The role a session may still act with: its key must be active and still hold the institution.
     * Checked on every request, so revoking a key ends the sessions its links opened.
     */
    activeRole: (apiKeyId: string, institution: InstitutionRef) =>
      activeRole(deps.stores.apiKeys, apiKeyId, institution),
  };
}

export type LinkRedemption = ReturnType<typeof createLinkRedemption>;
