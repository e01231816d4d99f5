// Stored results of POST requests sent with an Idempotency-Key (contract §5), kept for 24 hours.
//
// A write claims its key and stores its response in the statement that makes its change
// (db/referrals/change.ts), so a committed row always holds a response. A second request with the
// same key waits on the claim's unique index until the first statement ends: then its claim fails on
// the key (and it replays the first one's response), or succeeds (the first rolled back).
//
// A stored response holds the referral it answered with, so its body is sealed as the referral's own
// fields are (db/data-keys/data-keys.repository.ts), its place the API key's ID and the key.
import { sql, type RawBuilder } from 'kysely';
import type { FieldCipher } from '../domain/data-keys.ts';
import { openColumns, sealColumns, type DataKeys } from './data-keys/data-keys.repository.ts';
import type { Executor } from './executor.ts';
import type { NewLinkToken } from './links.repository.ts';

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

/** A claim of a key with the response it stores, as one row of a write's statement. */
export interface StoredKey {
  readonly claim: KeyClaim;
  readonly response: StoredResponse;
  /** How long the write may wait for a lock another request holds (see writeReferralChange). */
  readonly waitMs: number;
}

/**
 * A keyed write's key, as the HTTP layer hands it to the write: the store claims it, with the response
 * it stores, in the write's own statement (db/referrals/change.ts).
 */
export interface IdempotentWrite {
  /** The key's row, holding the response `result` becomes; `links` are the one-time links it hands out. */
  storedKey(result: unknown, links: readonly NewLinkToken[]): StoredKey;
  /** The statement that stored the key committed. */
  committed(): void;
  /**
   * The error to answer with when the statement failed on the key (another request stored it first,
   * or held it past the wait's bound); undefined for any other failure.
   */
  refusal(error: unknown): Error | undefined;
  /** Throws the error that answers with another request's stored response, if one stored the key. */
  replayIfTaken(): Promise<void>;
}

/** The stored body of `response` for `claim`, sealed. */
function sealedBody(claim: KeyClaim, response: StoredResponse, cipher: FieldCipher): string {
  return sealColumns(
    'idempotency_keys',
    { api_key_id: claim.apiKeyId, key: claim.key },
    { response_body: response.body },
    cipher,
  ).response_body;
}

/** Raised by PostgreSQL when an INSERT meets a row with the same key (here: a key stored first). */
export const UNIQUE_VIOLATION = '23505';

/**
 * The INSERT of a stored key, for a common table expression of a write's statement, made only when
 * `guard` holds (it runs before the row is inserted, so a setting it reads is in force when the
 * insert waits). The values come as one JSON document, typed by the table's own row type.
 */
export function keyClaimInsert(
  { claim, response }: StoredKey,
  cipher: FieldCipher,
  guard: RawBuilder<boolean>,
): RawBuilder<unknown> {
  // Sealed before it goes into the JSON document: the statement's parameters hold no response.
  const row = JSON.stringify({
    api_key_id: claim.apiKeyId,
    key: claim.key,
    request_hash: claim.requestHash,
    state: 'completed',
    response_status: response.status,
    response_headers: response.headers,
    response_body: sealedBody(claim, response, cipher),
    created_at: claim.now,
    expires_at: claim.expiresAt,
  });
  return sql`insert into idempotency_keys (api_key_id, key, request_hash, state, response_status,
      response_headers, response_body, created_at, expires_at)
    select api_key_id, key, request_hash, state, response_status, response_headers, response_body,
      created_at, expires_at
    from json_populate_record(null::idempotency_keys, ${row}::json)
    where ${guard}`;
}

/** Raised by PostgreSQL when a wait for a lock (here: another request's claim) passes lock_timeout. */
export const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Why a write's statement failed on its key, if it did: `held`, another request held the key past the
 * wait's bound (`lock_timeout`); `taken`, another request stored it first (its primary key).
 */
export function keyClaimFailure(error: unknown): 'held' | 'taken' | undefined {
  const { code, constraint, message } = (error ?? {}) as {
    code?: unknown;
    constraint?: unknown;
    message?: unknown;
  };
  if (code === LOCK_NOT_AVAILABLE) return 'held';
  const onKey = constraint === 'idempotency_keys_pkey' || String(message).includes('idempotency_keys_pkey');
  return code === UNIQUE_VIOLATION && onKey ? 'taken' : undefined;
}

export function idempotencyRepository(db: Executor, keys: DataKeys) {
  return {
    /** Why a write's statement failed on its key, if it did (`keyClaimFailure`). */
    claimFailure: keyClaimFailure,

    /**
     * The keyed digest of a request's canonical text (an HMAC under the blind-index key), as a key's
     * record keeps it: equal requests give equal digests, and the digest says nothing of the request.
     */
    async requestHash(text: string): Promise<string> {
      return (await keys.cipher(db)).blindIndex('keyed-request', text);
    },

    async find(apiKeyId: string, key: string): Promise<IdempotencyRecord | undefined> {
      const stored = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('api_key_id', '=', apiKeyId)
        .where('key', '=', key)
        .executeTakeFirst();
      if (stored === undefined) return undefined;
      const row = await keys.reading(db, (cipher) => openColumns('idempotency_keys', stored, cipher));
      return {
        requestHash: row.request_hash,
        response:
          row.response_status === null || row.response_body === null
            ? null
            : { status: row.response_status, headers: row.response_headers ?? {}, body: row.response_body },
        createdAt: row.created_at,
        expiresAt: row.expires_at,
      };
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
          response_body: sealedBody(claim, response, await keys.cipher(db)),
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
