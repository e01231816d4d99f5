// Stored results of POST requests sent with an Idempotency-Key (contract §5), kept for 24 hours.
import type { Executor } from './executor.ts';

export interface IdempotencyRecord {
  readonly requestHash: string;
  readonly state: 'in-progress' | 'completed';
  readonly responseStatus: number | null;
  readonly responseHeaders: Record<string, string> | null;
  readonly responseBody: string | null;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export function idempotencyRepository(db: Executor) {
  return {
    /** Claims the key for a new request; false when a record for it already exists. */
    async claim(
      apiKeyId: string,
      key: string,
      requestHash: string,
      now: Date,
      expiresAt: Date,
    ): Promise<boolean> {
      const rows = await db
        .insertInto('idempotency_keys')
        .values({
          api_key_id: apiKeyId,
          key,
          request_hash: requestHash,
          state: 'in-progress',
          response_status: null,
          response_headers: null,
          response_body: null,
          created_at: now,
          expires_at: expiresAt,
        })
        .onConflict((oc) => oc.columns(['api_key_id', 'key']).doNothing())
        .returning('key')
        .execute();
      return rows.length === 1;
    },

    async find(apiKeyId: string, key: string): Promise<IdempotencyRecord | undefined> {
      const row = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('api_key_id', '=', apiKeyId)
        .where('key', '=', key)
        .executeTakeFirst();
      return (
        row && {
          requestHash: row.request_hash,
          state: row.state,
          responseStatus: row.response_status,
          responseHeaders: row.response_headers,
          responseBody: row.response_body,
          createdAt: row.created_at,
          expiresAt: row.expires_at,
        }
      );
    },

    async complete(
      apiKeyId: string,
      key: string,
      response: { status: number; headers: Record<string, string>; body: string },
    ): Promise<void> {
      await db
        .updateTable('idempotency_keys')
        .set({
          state: 'completed',
          response_status: response.status,
          response_headers: JSON.stringify(response.headers),
          response_body: response.body,
        })
        .where('api_key_id', '=', apiKeyId)
        .where('key', '=', key)
        .execute();
    },

    /** Forgets a key: its request failed on our side (5xx) and may be retried, or it expired. */
    async release(apiKeyId: string, key: string, createdAt?: Date): Promise<void> {
      let query = db.deleteFrom('idempotency_keys').where('api_key_id', '=', apiKeyId).where('key', '=', key);
      if (createdAt !== undefined) query = query.where('created_at', '=', createdAt);
      await query.execute();
    },
  };
}
