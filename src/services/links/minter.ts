// Mints one-time link URLs (contract §8): `{PUBLIC_URL}/l/{token}` with a 256-bit random token, of
// which only the SHA-256 is stored. Each link is bound to one referral, one action, one institution
// and the requester, and expires after LINK_TTL_SECONDS.
import { createHash, randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { InstitutionRef } from '../../domain/access.ts';
import type { Clock } from '../../domain/clock.ts';
import { LINK_LABELS } from '../../domain/links.ts';
import type { LinkAction, LinkView } from '../../domain/referral-view.ts';
import type { NewLinkToken } from '../../db/links.repository.ts';
import type { Stores } from '../../db/stores.ts';

/** Where minted links are stored. */
export type LinkRows = Pick<Stores['links'], 'insert'>;

export interface LinkGrant {
  readonly referralId: string;
  readonly institution: InstitutionRef;
  readonly requesterIdentifier: string;
  readonly apiKeyId: string | null;
}

export interface MintedLink extends LinkView {
  readonly expiresAt: Date;
}

export function hashLinkToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function createLinkMinter(deps: { publicUrl: string; ttlSeconds: number; clock: Clock }) {
  return {
    async mintOne(rows: LinkRows, grant: LinkGrant, action: LinkAction): Promise<MintedLink> {
      const [link] = await this.mint(rows, grant, [action]);
      if (!link) throw new Error('minting a link returned nothing');
      return link;
    },

    async mint(store: LinkRows, grant: LinkGrant, actions: readonly LinkAction[]): Promise<MintedLink[]> {
      const { rows, links } = this.prepare(grant, actions);
      await store.insert(rows);
      return links;
    },

    /**
     * New links and the rows that make them valid, not yet stored: the caller stores `rows` (in the
     * same transaction or statement as the work that hands the links out) before it shows `links`.
     */
    prepare(grant: LinkGrant, actions: readonly LinkAction[]): { rows: NewLinkToken[]; links: MintedLink[] } {
      const now = deps.clock.now();
      const expiresAt = new Date(now.getTime() + deps.ttlSeconds * 1000);
      const minted = actions.map((action) => ({ action, token: randomBytes(32).toString('base64url') }));
      return {
        rows: minted.map(({ action, token }) => ({
          id: uuidv7(),
          tokenHash: hashLinkToken(token),
          referralId: grant.referralId,
          action,
          institution: grant.institution,
          requesterIdentifier: grant.requesterIdentifier,
          apiKeyId: grant.apiKeyId,
          createdAt: now,
          expiresAt,
        })),
        links: minted.map(({ action, token }) => ({
          type: action,
          label: LINK_LABELS[action],
          url: `${deps.publicUrl}/l/${token}`,
          expiresAt,
        })),
      };
    },
  };
}

export type LinkMinter = ReturnType<typeof createLinkMinter>;
