// Stored results of POST requests sent with an Idempotency-Key (contract §5), kept for 24 hours.
//
// A write claims its key inside its own transaction and stores its response before that transaction
// commits (services/write-transaction.ts), so a committed row always holds a response. A second
// request with the same key waits on the claim's unique index until the first transaction ends: then
// it finds the key taken (and replays it) or free (the first rolled back, and it runs).
import { sql } from 'kysely';
import type { Executor } from './executor.ts';

export interface StoredResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export interface IdempotencyRecord {
  readonly requestHash: string;
  /** Null only for a claim made by an earlier release of refhub, which stored responses later. */
  readonly response: StoredResponse | null;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export interface KeyClaim {
  readonly apiKeyId: string;
  readonly key: string;
  readonly requestHash: string;
  readonly now: Date;
  readonly expiresAt: Date;
}

/** Raised by PostgreSQL when a wait for a lock (here: another request's claim) passes lock_timeout. */
export const LOCK_NOT_AVAILABLE = '55P03';

export function idempotencyRepository(db: Executor) {
  return {
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
          response:
            row.response_status === null || row.response_body === null
              ? null
              : { status: row.response_status, headers: row.response_headers ?? {}, body: row.response_body },
          createdAt: row.created_at,
          expiresAt: row.expires_at,
        }
      );
    },

    /**
     * Claims the key in the current transaction; false when a committed record holds it. While
     * another transaction holds the same claim, this waits for it, at most `waitMs` (then PostgreSQL
     * raises LOCK_NOT_AVAILABLE). The bound holds for every lock wait in the rest of the transaction
     * too: a keyed write never waits long for anything.
     */
    async claim(claim: KeyClaim, waitMs: number): Promise<boolean> {
      await sql`select set_config('lock_timeout', ${`${waitMs}ms`}, true)`.execute(db);
      const rows = await db
        .insertInto('idempotency_keys')
        .values({
          api_key_id: claim.apiKeyId,
          key: claim.key,
          request_hash: claim.requestHash,
          state: 'completed',
          response_status: null,
          response_headers: null,
          response_body: null,
          created_at: claim.now,
          expires_at: claim.expiresAt,
        })
        .onConflict((oc) => oc.columns(['api_key_id', 'key']).doNothing())
        .returning('key')
        .execute();
      return rows.length === 1;
    },

    /** Stores the response of a claimed key (in the claim's transaction). */
    async complete(apiKeyId: string, key: string, response: StoredResponse): Promise<void> {
      await db
        .updateTable('idempotency_keys')
        .set({
          response_status: response.status,
          response_headers: JSON.stringify(response.headers),
          response_body: response.body,
        })
        .where('api_key_id', '=', apiKeyId)
        .where('key', '=', key)
        .execute();
    },

    /**
     * Records the response of a keyed request that wrote nothing (a read such as a search, or a
     * refusal such as 409 invalid_transition), unless a record exists already.
     */
    async record(claim: KeyClaim, response: StoredResponse): Promise<void> {
      await db
        .insertInto('idempotency_keys')
        .values({
          api_key_id: claim.apiKeyId,
          key: claim.key,
          request_hash: claim.requestHash,
          state: 'completed',
          response_status: response.status,
          response_headers: JSON.stringify(response.headers),
          response_body: response.body,
          created_at: claim.now,
          expires_at: claim.expiresAt,
        })
        .onConflict((oc) => oc.columns(['api_key_id', 'key']).doNothing())
        .execute();
    },

    /** Forgets an expired key (only the record seen, not one written since). */
    async release(apiKeyId: string, key: string, createdAt: Date): Promise<void> {
      await db
        .deleteFrom('idempotency_keys')
        .where('api_key_id', '=', apiKeyId)
        .where('key', '=', key)
        .where('created_at', '=', createdAt)
        .execute();
    },
  };
}
