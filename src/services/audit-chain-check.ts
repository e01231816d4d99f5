// The audit trail's checks as pure code: whether a chain's rows link, each from the one before, and
// give their hashes, whether a chain ends where the latest checkpoint signed it, and whether each
// checkpoint's signature holds. `refhub audit verify` runs them on the rows in the database
// (audit-chain.service.ts) and `refhub audit verify --file` on an export, without a database, so both
// judge a trail by the same rules.
import { compactVerify, importJWK, type JWK } from 'jose';
import { chainOf, GENESIS_HASH, rowHashOf, type AuditContent } from '../domain/audit-chain.ts';
import type { ChainHead, Checkpoint } from '../db/audit-chain.repository.ts';

/** A row sealed more than this after it occurred was not written when it says: it is flagged. */
export const SEAL_LATE_MS = 10 * 60_000;

export interface Break {
  readonly chain: string;
  /** The chain index of the first broken row, when a row is at fault. */
  readonly index?: number;
  readonly rowId?: string;
  readonly problem: string;
}

/** A sealed row as the checks read it: its content and what the sealer set. */
export interface ChainRow extends AuditContent {
  readonly chainIndex: number | null;
  readonly prevHash: string | null;
  readonly rowHash: string | null;
  readonly sealedAt: Date | null;
}

/**
 * The bytes a checkpoint's signature covers: its time and its heads, chains in byte order, each head
 * as `[chain, index, hash]`. Canonical, so the database's own order of a JSON object's keys (jsonb
 * keeps its own) never changes what is verified.
 */
export function checkpointBytes(checkpoint: Pick<Checkpoint, 'createdAt' | 'heads'>): Uint8Array {
  const heads = Object.entries(checkpoint.heads)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([chain, head]) => [chain, head.index, head.hash]);
  return new TextEncoder().encode(JSON.stringify([checkpoint.createdAt.toISOString(), heads]));
}

/** The public half of a private Ed25519 JWK, with its `kid`: what an auditor checks signatures with. */
export function publicJwkOf(key: JWK): JWK {
  return { kty: key.kty, crv: key.crv, x: key.x, kid: key.kid };
}

export interface CheckpointsChecked {
  /** The latest head each checkpoint recorded, by chain, up to the first that does not verify. */
  readonly signed: Map<string, ChainHead>;
  /** The unsigned checkpoints, up to the first that does not verify. */
  readonly unsigned: number;
  /** The first checkpoint whose signature does not verify. */
  readonly broken?: Break;
}

/**
 * Checks each checkpoint's signature, oldest first, with the key `keyFor` gives it (none: the
 * signature is not checked, and the heads are taken as recorded), and collects the latest head of
 * every chain.
 */
export async function checkCheckpoints(
  checkpoints: readonly Checkpoint[],
  keyFor: (checkpoint: Checkpoint) => JWK | undefined,
): Promise<CheckpointsChecked> {
  let unsigned = 0;
  const signed = new Map<string, ChainHead>();
  for (const checkpoint of checkpoints) {
    const key = checkpoint.signature === null ? undefined : keyFor(checkpoint);
    if (checkpoint.signature === null) unsigned++;
    else if (key !== undefined) {
      try {
        const { payload } = await compactVerify(checkpoint.signature, await importJWK(key, 'EdDSA'));
        if (Buffer.compare(Buffer.from(payload), Buffer.from(checkpointBytes(checkpoint))) !== 0)
          throw new Error('the checkpoint differs from what was signed');
      } catch {
        const [chain = '-'] = Object.keys(checkpoint.heads);
        return {
          signed,
          unsigned,
          broken: {
            chain,
            problem: `checkpoint ${checkpoint.seq} of ${checkpoint.createdAt.toISOString()} does not match its signature`,
          },
        };
      }
    }
    for (const [chain, head] of Object.entries(checkpoint.heads)) signed.set(chain, head);
  }
  return { signed, unsigned };
}

export interface ChainChecked {
  /** The rows read, the broken one included. */
  readonly rows: number;
  /** The first broken link of the chain. */
  readonly broken?: Break;
}

/**
 * Checks one chain's rows, in chain order, from its first row (index 1, after GENESIS_HASH): the
 * indexes follow each other, each row links to the one before and gives its hash, belongs to this
 * chain and was sealed soon after it occurred; and the chain ends at the row `head` (the latest
 * checkpoint's for this chain) signed, with that row's hash.
 */
export function checkChain(
  chain: string,
  rows: readonly ChainRow[],
  head: ChainHead | undefined,
): ChainChecked {
  let prevHash = GENESIS_HASH;
  let index = 0;
  const result = (broken?: Break): ChainChecked => ({
    rows: index,
    ...(broken === undefined ? {} : { broken }),
  });
  for (const row of rows) {
    index++;
    const at = { chain, index: row.chainIndex ?? index, rowId: row.id };
    if (row.chainIndex !== index)
      return result({ ...at, problem: `row ${index} of the chain is missing, or a row was inserted` });
    if (row.prevHash !== prevHash)
      return result({ ...at, problem: 'its prev_hash is not the hash of the row before it' });
    if (chainOf(row) !== chain)
      return result({ ...at, problem: 'its institution or time does not belong to this chain' });
    if (row.rowHash !== rowHashOf(prevHash, row))
      return result({ ...at, problem: 'its content does not give its hash: it was changed' });
    if (row.sealedAt !== null && row.sealedAt.getTime() - row.occurredAt.getTime() > SEAL_LATE_MS)
      return result({
        ...at,
        problem: 'it was sealed long after the time it gives: it was back-dated',
      });
    prevHash = row.rowHash;
  }
  // Every round of the sealer records the heads it moved in the same transaction, so a chain ends
  // exactly at the head its latest checkpoint names.
  if (head === undefined) {
    return index === 0
      ? result()
      : result({
          chain,
          index: 1,
          problem: 'no checkpoint names this chain: it was sealed outside the sealer',
        });
  }
  if (head.index > index || (rows[head.index - 1]?.rowHash ?? null) !== head.hash) {
    return result({
      chain,
      index: head.index,
      problem: `the checkpoint signed row ${head.index} with another hash, or the row is gone`,
    });
  }
  if (index > head.index) {
    const [first] = rows.slice(head.index);
    return result({
      chain,
      index: head.index + 1,
      ...(first === undefined ? {} : { rowId: first.id }),
      problem: `rows follow the last one a checkpoint signed (${head.index}): they were added after it`,
    });
  }
  return result();
}
