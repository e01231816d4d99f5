// Removes rows whose purpose has passed: idempotency records after their 24 hours, one-time link
// tokens a week after they expired (kept that long so a disputed link can still be traced), a webhook
// secret rotated out once its overlap has ended, and access tokens and client assertions' jtis once
// they have expired. Webhook attempts are not deleted here: retention drops them a month at a time
// (retention.repository.ts, RETENTION_WEBHOOK_ATTEMPTS_MONTHS).
import { sql } from 'kysely';
import type { Executor } from './executor.ts';

export const LINK_TOKEN_RETENTION_MS = 7 * 24 * 3600_000;

export function housekeepingRepository(db: Executor) {
  return {
    /** Deletes up to `limit` expired idempotency records; returns how many. */
    async purgeIdempotencyKeys(now: Date, limit: number): Promise<number> {
      const result = await db
        .deleteFrom('idempotency_keys')
        .where((eb) =>
          eb(
            eb.refTuple('api_key_id', 'key'),
            'in',
            eb
              .selectFrom('idempotency_keys')
              .select(['api_key_id', 'key'])
              .where('expires_at', '<', now)
              .limit(limit)
              .$asTuple('api_key_id', 'key'),
          ),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** Deletes up to `limit` link tokens that expired before the retention window; returns how many. */
    async purgeLinkTokens(now: Date, limit: number): Promise<number> {
      const before = new Date(now.getTime() - LINK_TOKEN_RETENTION_MS);
      const result = await db
        .deleteFrom('link_tokens')
        .where(
          'id',
          'in',
          db.selectFrom('link_tokens').select('id').where('expires_at', '<', before).limit(limit),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /**
     * Deletes up to `limit` access tokens that expired before `now`, and the `jti`s of assertions that
     * did (an expired assertion is refused for its `exp`, so its `jti` need not be remembered).
     */
    async purgeClientCredentials(now: Date, limit: number): Promise<number> {
      const tokens = await db
        .deleteFrom('access_tokens')
        .where(
          'token_hash',
          'in',
          db.selectFrom('access_tokens').select('token_hash').where('expires_at', '<', now).limit(limit),
        )
        .executeTakeFirst();
      const assertions = await db
        .deleteFrom('client_assertions')
        .where(
          sql<boolean>`(api_key_id, jti) in (
            select api_key_id, jti from client_assertions where expires_at < ${now} limit ${limit})`,
        )
        .executeTakeFirst();
      return Number(tokens.numDeletedRows) + Number(assertions.numDeletedRows);
    },

    /**
     * Forgets the secrets rotated out whose overlap ended by `now`: they no longer sign (forSigning
     * leaves them out), and a secret that signs nothing is not kept. Returns how many were forgotten.
     */
    async forgetRetiredWebhookSecrets(now: Date): Promise<number> {
      const result = await db
        .updateTable('webhook_subscriptions')
        .set({ previous_secret: null, previous_secret_expires_at: null })
        .where('previous_secret_expires_at', '<=', now)
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },

    async count(table: 'idempotency_keys' | 'link_tokens' | 'referral_events'): Promise<number> {
      const row = await db
        .selectFrom(table)
        .select(sql<number>`count(*)::int`.as('n'))
        .executeTakeFirstOrThrow();
      return row.n;
    },
  };
}
