// The audit trail's checks as pure code: whether a chain's rows link, each from the one before, give
// their hashes and keep their times in order; whether every head a checkpoint recorded is still the
// row it names; and whether the checkpoints link, each to the one before, and their signatures hold.
// `refhub audit verify` runs them on the rows in the database (audit-chain.service.ts) and
// `refhub audit verify --file` on an export, without a database, so both judge a trail by the same
// rules. docs/security.md ("What `verify` catches, and what it cannot") states them for auditors.
import { createHash } from 'node:crypto';
import { compactVerify, importJWK, type JWK } from 'jose';
import { chainOf, GENESIS_HASH, isHashForm, rowHashOf, type AuditContent } from '../../domain/audit-chain.ts';
import type { ChainHead, Checkpoint } from '../../db/audit/audit-chain.repository.ts';

/** A row sealed more than this after it occurred was not written when it says: it is flagged. */
export const SEAL_LATE_MS = 10 * 60_000;

/**
 * A row first recorded by a checkpoint made more than this after it occurred is flagged too: the
 * allowance of SEAL_LATE_MS, and up to five minutes for the rest of the sealer's round.
 */
export const RECORD_LATE_MS = SEAL_LATE_MS + 5 * 60_000;

/** The form of checkpoint the sealer writes: it signs the hash of the checkpoint before it. */
export const CHECKPOINT_FORM = 2;

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
  readonly hashForm: number | null;
}

type CheckpointContent = Pick<Checkpoint, 'createdAt' | 'heads' | 'form' | 'prevHash'>;

/**
 * The bytes a checkpoint's signature covers, with its heads as `[chain, index, hash]` in byte order of
 * the chains' names: canonical, so the database's own order of a JSON object's keys (jsonb keeps its
 * own) never changes what is verified.
 * - form 1: `[createdAt, heads]`;
 * - form 2: `[2, prevHash, createdAt, heads]`, `prevHash` being the hash of the checkpoint before it.
 */
export function checkpointBytes(checkpoint: CheckpointContent): Uint8Array {
  const heads = Object.entries(checkpoint.heads)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([chain, head]) => [chain, head.index, head.hash]);
  const createdAt = checkpoint.createdAt.toISOString();
  const content =
    checkpoint.form === 1 ? [createdAt, heads] : [checkpoint.form, checkpoint.prevHash, createdAt, heads];
  return new TextEncoder().encode(JSON.stringify(content));
}

/** The hash of a checkpoint, which the next one signs: SHA-256, in hex, of its bytes. */
export function checkpointHashOf(checkpoint: CheckpointContent): string {
  return createHash('sha256').update(checkpointBytes(checkpoint)).digest('hex');
}

/** The public half of a private Ed25519 JWK, with its `kid`: what an auditor checks signatures with. */
export function publicJwkOf(key: JWK): JWK {
  return { kty: key.kty, crv: key.crv, x: key.x, ...(key.kid === undefined ? {} : { kid: key.kid }) };
}

/**
 * The public key a checkpoint signed with key `keyId` is checked with: the one with that `kid`, or a
 * lone key given without one.
 */
export function keyFor(keys: readonly JWK[], keyId: string | null): JWK | undefined {
  return (
    keys.find((k) => k.kid !== undefined && k.kid === keyId) ??
    (keys.length === 1 && keys[0]?.kid === undefined ? keys[0] : undefined)
  );
}

/** A head a checkpoint recorded for a chain, with the checkpoint that recorded it. */
export interface RecordedHead extends ChainHead {
  /** The checkpoint, as messages name it: `checkpoint 12 of 2026-11-26T02:15:14.020Z`. */
  readonly checkpoint: string;
  readonly createdAt: Date;
}

export interface CheckpointsChecked {
  /** Every head the checkpoints recorded, by chain, oldest first (up to the first break). */
  readonly heads: Map<string, RecordedHead[]>;
  readonly signed: number;
  readonly unsigned: number;
  /** The first checkpoint that breaks a rule. */
  readonly broken?: Break;
}

export interface CheckpointRules {
  /**
   * The public keys signatures are checked with (by `kid`). Undefined when none is known here: then the
   * signatures are not checked, and the heads are taken as recorded.
   */
  readonly keys: readonly JWK[] | undefined;
  /**
   * Whether the checkpoints are all there are, the oldest the first ever written (the database), or a
   * run of them (an export), whose first links to one that is not there.
   */
  readonly whole: boolean;
  /** What to add when a key is known and checkpoints are unsigned that no adoption signed for. */
  readonly unsignedHint: string;
}

function nameOf(checkpoint: Pick<Checkpoint, 'seq' | 'createdAt'>): string {
  return `checkpoint ${checkpoint.seq} of ${checkpoint.createdAt.toISOString()}`;
}

async function signatureHolds(checkpoint: Checkpoint, key: JWK): Promise<boolean> {
  try {
    const { payload, protectedHeader } = await compactVerify(
      checkpoint.signature ?? '',
      await importJWK(key, 'EdDSA'),
      { algorithms: ['EdDSA'] },
    );
    return (
      protectedHeader.kid === (checkpoint.keyId ?? undefined) &&
      Buffer.compare(Buffer.from(payload), Buffer.from(checkpointBytes(checkpoint))) === 0
    );
  } catch {
    return false;
  }
}

/** A signed checkpoint that records no heads: it signs for the checkpoints before it, as they are. */
export function isAdoption(checkpoint: Pick<Checkpoint, 'signature' | 'heads'>): boolean {
  return checkpoint.signature !== null && Object.keys(checkpoint.heads).length === 0;
}

/**
 * Checks the checkpoints, oldest first:
 * - with a key known, each signed one's signature holds with the key of its `keyId`; no unsigned one
 *   follows a signed one; and the unsigned ones before the first signed (a trail begun without a key)
 *   are signed for by an adoption after them (`refhub audit adopt`), never by the sealer's next round
 *   alone: the sealer cannot tell a trail kept without a key from one whose signatures were removed;
 * - each of form 2 links to the one before it (the first ever to 64 zeros), is not older than it, and
 *   no checkpoint of form 1 follows one of form 2;
 * - each head is an index and a hash, and a chain's heads move forward from checkpoint to checkpoint.
 * Every head is collected, by chain, for `checkChain`.
 */
export async function checkCheckpoints(
  checkpoints: readonly Checkpoint[],
  rules: CheckpointRules,
): Promise<CheckpointsChecked> {
  const heads = new Map<string, RecordedHead[]>();
  let signed = 0;
  let unsigned = 0;
  let previous: Checkpoint | undefined;
  // The first unsigned checkpoint no adoption has signed for yet.
  let unadopted: Checkpoint | undefined;
  const result = (broken?: Break): CheckpointsChecked => ({
    heads,
    signed,
    unsigned,
    ...(broken === undefined ? {} : { broken }),
  });
  for (const checkpoint of checkpoints) {
    const name = nameOf(checkpoint);
    const at = Object.keys(checkpoint.heads).sort()[0] ?? '-';
    const broken = (problem: string) => result({ chain: at, problem: `${name} ${problem}` });

    if (checkpoint.signature === null) {
      if (rules.keys !== undefined && signed > 0)
        return broken('is not signed, and an earlier one is: its signature was removed, or it was inserted');
      unsigned++;
      unadopted ??= checkpoint;
    } else {
      if (rules.keys !== undefined) {
        const key = keyFor(rules.keys, checkpoint.keyId);
        if (key === undefined)
          return broken(
            `is signed with key ${JSON.stringify(checkpoint.keyId)}, and no public key with that kid was given`,
          );
        if (!(await signatureHolds(checkpoint, key))) return broken('does not match its signature');
      }
      signed++;
      if (isAdoption(checkpoint)) unadopted = undefined;
    }

    if (checkpoint.form !== 1 && checkpoint.form !== CHECKPOINT_FORM)
      return broken(`is of form ${checkpoint.form}, which refhub does not write`);
    if (checkpoint.form === 1 && previous !== undefined && previous.form !== 1)
      return broken('is of form 1 after one of form 2: it was written outside the sealer');
    if (checkpoint.form !== 1) {
      const expected =
        previous !== undefined ? checkpointHashOf(previous) : rules.whole ? GENESIS_HASH : undefined;
      if (expected !== undefined && checkpoint.prevHash !== expected)
        return broken(
          'does not follow the checkpoint before it: a checkpoint between them was removed, or one was changed',
        );
      if (previous !== undefined && checkpoint.createdAt < previous.createdAt)
        return broken('is older than the checkpoint before it: its time was changed');
    }

    for (const [chain, head] of Object.entries(checkpoint.heads)) {
      if (!Number.isSafeInteger(head.index) || head.index < 1 || typeof head.hash !== 'string')
        return broken(`records a head of ${chain} that is not an index and a hash`);
      const list = heads.get(chain) ?? [];
      const last = list.at(-1);
      if (last !== undefined && head.index <= last.index)
        return result({
          chain,
          index: head.index,
          problem: `${name} records row ${head.index} as the chain's head, not after row ${last.index}, which ${last.checkpoint} recorded: the chain went back`,
        });
      list.push({ index: head.index, hash: head.hash, checkpoint: name, createdAt: checkpoint.createdAt });
      heads.set(chain, list);
    }
    previous = checkpoint;
  }
  if (rules.keys !== undefined && checkpoints.length > 0 && signed === 0)
    return result({
      chain: '-',
      problem: `no checkpoint is signed, though a key to check them with is known: their signatures were removed${rules.unsignedHint}`,
    });
  if (rules.keys !== undefined && unadopted !== undefined)
    return result({
      chain: Object.keys(unadopted.heads).sort()[0] ?? '-',
      problem: `${nameOf(unadopted)} is not signed, and no adoption signed for it: its signature was removed${rules.unsignedHint}`,
    });
  return result();
}

export interface ChainChecked {
  /** The rows read, the broken one included. */
  readonly rows: number;
  /** The first broken link of the chain. */
  readonly broken?: Break;
}

/**
 * Checks one chain's rows, in chain order, from its first row (index 1, after GENESIS_HASH):
 * - the indexes follow each other, each row links to the one before, belongs to this chain, and gives
 *   its hash in the form it names; the form never goes back from 2 to 1, and a row of form 1 holds no
 *   claim (form 1 does not cover one);
 * - its times: sealed after it occurred and no more than SEAL_LATE_MS after; of form 2, not sealed
 *   before the row before it (the sealer keeps form 2's times in order; form 1's, from sealers on
 *   machines whose clocks differ a little, may not be); not sealed after the checkpoint that first
 *   recorded it, and that checkpoint made no more than RECORD_LATE_MS after the row occurred (so a
 *   row of form 1, whose `sealed_at` its hash does not cover, is held to a signed time too);
 * - every head `heads` holds (each checkpoint's for this chain, oldest first) is the row at its index,
 *   with its hash, and the chain ends at the last of them: a trail is read in one snapshot, and each
 *   round of the sealer records the heads it moved in the transaction that moved them.
 */
export function checkChain(
  chain: string,
  rows: readonly ChainRow[],
  heads: readonly RecordedHead[],
): ChainChecked {
  let prevHash = GENESIS_HASH;
  let prevForm = 1;
  let prevSealedAt: Date | undefined;
  let index = 0;
  let next = 0;
  const result = (broken?: Break): ChainChecked => ({
    rows: index,
    ...(broken === undefined ? {} : { broken }),
  });
  for (const row of rows) {
    index++;
    const at = { chain, index: row.chainIndex ?? index, rowId: row.id };
    const broken = (problem: string) => result({ ...at, problem });
    if (row.chainIndex !== index)
      return broken(`row ${index} of the chain is missing, or a row was inserted`);
    if (row.prevHash !== prevHash) return broken('its prev_hash is not the hash of the row before it');
    if (chainOf(row) !== chain) return broken('its institution or time does not belong to this chain');
    const form = row.hashForm;
    if (!isHashForm(form)) return broken(`its hash form (${String(form)}) is not one refhub writes`);
    if (form < prevForm)
      return broken('it is of hash form 1 after a row of form 2: it was rewritten in the older form');
    if (form === 1 && row.claimedInstitution !== null)
      return broken('it holds a claimed institution, which its hash form (1) does not cover: it was changed');
    const sealedAt = row.sealedAt;
    if (sealedAt === null) return broken('it is in the chain, but not sealed');
    if (row.rowHash !== rowHashOf(prevHash, { ...row, chain, chainIndex: index, sealedAt }, form))
      return broken('its content does not give its hash: it was changed');
    if (sealedAt <= row.occurredAt)
      return broken('it was sealed before the time it gives: its times were changed');
    if (sealedAt.getTime() - row.occurredAt.getTime() > SEAL_LATE_MS)
      return broken('it was sealed long after the time it gives: it was back-dated');
    if (form !== 1 && prevSealedAt !== undefined && sealedAt < prevSealedAt)
      return broken('it was sealed before the row before it: its times were changed');
    // The first checkpoint that recorded this row: the first head at its index or after.
    while (next < heads.length && (heads[next]?.index ?? 0) < index) next++;
    const first = heads[next];
    if (first !== undefined) {
      if (sealedAt > first.createdAt)
        return broken(`it was sealed after ${first.checkpoint}, which recorded it: its times were changed`);
      if (first.createdAt.getTime() - row.occurredAt.getTime() > RECORD_LATE_MS)
        return broken(
          `${first.checkpoint}, the first to record it, was made long after the time it gives: it was back-dated`,
        );
      if (first.index === index && first.hash !== row.rowHash)
        return broken(`${first.checkpoint} recorded row ${index} with another hash`);
    }
    prevHash = row.rowHash;
    prevForm = form;
    prevSealedAt = sealedAt;
  }
  const gone = heads.find((head) => head.index > index);
  if (gone !== undefined)
    return result({
      chain,
      index: gone.index,
      problem: `${gone.checkpoint} recorded row ${gone.index}, and the row is gone`,
    });
  const last = heads.at(-1);
  if (last === undefined)
    return index === 0
      ? result()
      : result({
          chain,
          index: 1,
          problem: 'no checkpoint names this chain: it was sealed outside the sealer',
        });
  if (index > last.index) {
    const following = rows[last.index];
    return result({
      chain,
      index: last.index + 1,
      ...(following === undefined ? {} : { rowId: following.id }),
      problem: `rows follow the last one a checkpoint recorded (${last.index}): they were added after it`,
    });
  }
  return result();
}
