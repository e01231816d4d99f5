// How a caller's write runs: as one statement (db/change-log.repository.ts), which is its own
// transaction. A keyed write (Idempotency-Key) is exactly-once because its key and the response it
// stores are rows of that same statement: a crash at any point leaves either the change and its stored
// response, or neither, and no claim outlives the statement, so no retry ever waits for a process that
// died.
//
// The record itself belongs to the API (it holds an HTTP response); services see only this port.
import type { Kysely } from 'kysely';
import type { FieldCipher } from '../domain/data-keys.ts';
import type { AuditEvent } from '../db/audit/audit.repository.ts';
import { writeReferralChange, type ReferralWrite } from '../db/referrals/change.ts';
import type { StoredKey } from '../db/idempotency.repository.ts';
import type { NewLinkToken } from '../db/links.repository.ts';
import type { Database } from '../db/schema.ts';

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

/** What a write answers, and what the answer hands out that the write's statement must store. */
export interface Answer<T> {
  readonly result: T;
  readonly links: readonly NewLinkToken[];
  /** The audit row of what the answer hands out besides the referral, if anything (a link upsert's link). */
  readonly audit?: AuditEvent;
}

/**
 * Runs `write` with the caller's key, storing `answer` under it, sealed with `cipher` (the answer
 * holds the referral), as the write's timeline sentences are. False, with nothing written, when the
 * referral's compare-and-set lost to another write (then the caller reads and decides again).
 */
export async function runWrite<T>(
  db: Kysely<Database>,
  caller: { readonly idempotency?: IdempotentWrite | undefined },
  write: Omit<ReferralWrite, 'links' | 'key' | 'cipher'>,
  answer: Answer<T>,
  cipher: FieldCipher,
): Promise<boolean> {
  const keyed = caller.idempotency;
  let won: boolean;
  try {
    won = await writeReferralChange(db, {
      ...write,
      cipher,
      links: answer.links,
      ...(answer.audit === undefined ? {} : { alsoAudit: answer.audit }),
      ...(keyed === undefined ? {} : { key: { stored: keyed.storedKey(answer.result, answer.links) } }),
    });
  } catch (error) {
    throw keyed?.refusal(error) ?? error;
  }
  if (won) keyed?.committed();
  return won;
}
