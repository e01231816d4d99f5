// One-time link tokens (contract §8). Only the SHA-256 of a token is stored; the token itself exists
// only in the URL handed to the caller.
import type { LinkAction } from '../domain/referral-view.ts';
import type { Insertable } from 'kysely';
import type { Executor } from './executor.ts';
import type { LinkTokensTable } from './schema.ts';

export interface NewLinkToken {
  readonly id: string;
  readonly tokenHash: string;
  readonly referralId: string;
  readonly action: LinkAction;
  readonly institution: { readonly idType: string; readonly id: string };
  readonly requesterIdentifier: string;
  readonly apiKeyId: string | null;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export interface LinkTokenRecord {
  readonly id: string;
  readonly referralId: string;
  readonly action: LinkAction;
  readonly institution: { readonly idType: string; readonly id: string };
  readonly requesterIdentifier: string;
  readonly apiKeyId: string | null;
  readonly expiresAt: Date;
  readonly usedAt: Date | null;
}

/** The rows of `tokens`, for an INSERT here or in a statement that stores them with other rows. */
export function linkTokenRows(tokens: readonly NewLinkToken[]): Insertable<LinkTokensTable>[] {
  return tokens.map((t) => ({
    id: t.id,
    token_hash: t.tokenHash,
    referral_id: t.referralId,
    action: t.action,
    institution_id_type: t.institution.idType,
    institution_id: t.institution.id,
    requester_identifier: t.requesterIdentifier,
    api_key_id: t.apiKeyId,
    created_at: t.createdAt,
    expires_at: t.expiresAt,
    used_at: null,
  }));
}

export function linkTokenRepository(db: Executor) {
  return {
    async insert(tokens: readonly NewLinkToken[]): Promise<void> {
      if (tokens.length === 0) return;
      await db.insertInto('link_tokens').values(linkTokenRows(tokens)).execute();
    },

    async findByHash(tokenHash: string): Promise<LinkTokenRecord | undefined> {
      return this.findWhere('token_hash', tokenHash);
    },

    async findById(id: string): Promise<LinkTokenRecord | undefined> {
      return this.findWhere('id', id);
    },

    async findWhere(column: 'id' | 'token_hash', value: string): Promise<LinkTokenRecord | undefined> {
      const row = await db
        .selectFrom('link_tokens')
        .select([
          'id',
          'referral_id',
          'action',
          'institution_id_type',
          'institution_id',
          'requester_identifier',
          'api_key_id',
          'expires_at',
          'used_at',
        ])
        .where(column, '=', value)
        .executeTakeFirst();
      return (
        row && {
          id: row.id,
          referralId: row.referral_id,
          action: row.action as LinkAction,
          institution: { idType: row.institution_id_type, id: row.institution_id },
          requesterIdentifier: row.requester_identifier,
          apiKeyId: row.api_key_id,
          expiresAt: row.expires_at,
          usedAt: row.used_at,
        }
      );
    },

    /** Consumes the token once: true for the one caller that marked it used before it expired. */
    async consume(id: string, now: Date): Promise<boolean> {
      const result = await db
        .updateTable('link_tokens')
        .set({ used_at: now })
        .where('id', '=', id)
        .where('used_at', 'is', null)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },
  };
}
