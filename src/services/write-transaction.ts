// The one way a caller's write opens its transaction. A keyed write (Idempotency-Key) is exactly-once
// because its idempotency record is part of that same transaction: the key is claimed first thing,
// and the response is stored last thing, so a crash at any point leaves either the change and its
// stored response, or neither. No claim outlives a transaction, so no retry ever waits for a process
// that died.
//
// The record itself belongs to the API (it holds an HTTP response); services see only this port.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.ts';

export interface IdempotentWrite {
  /**
   * Claims the key inside `trx`. It waits while another request holds the key (up to a bound), and
   * throws when the key turns out to be taken, so that the transaction rolls back untouched.
   */
  claim(trx: Transaction<Database>): Promise<void>;
  /** Stores the response that `result` becomes, inside `trx`. */
  complete(trx: Transaction<Database>, result: unknown): Promise<void>;
}

/** Runs `work` in one transaction, with the caller's idempotency record when the request has a key. */
export function writeTransaction<T>(
  db: Kysely<Database>,
  caller: { readonly idempotency?: IdempotentWrite | undefined },
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  const keyed = caller.idempotency;
  return db.transaction().execute(async (trx) => {
    await keyed?.claim(trx);
    const result = await work(trx);
    await keyed?.complete(trx, result);
    return result;
  });
}
