// The audit trail's rules as pure code (services/audit/audit-chain-check.ts), on trails built here by the
// published rules, as a sealer or someone who can write to the database would build them: a trail of
// the first forms, then of the second, holds; each rule about forms, times, heads, links and signatures
// breaks where it should, and only there.
import { CompactSign, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../../src/db/audit/audit-chain.repository.ts';
import { chainOf, GENESIS_HASH, rowHashOf, type HashForm } from '../../../src/domain/audit-chain.ts';
import {
  checkChain,
  checkCheckpoints,
  checkpointBytes,
  checkpointHashOf,
  type ChainRow,
  type CheckpointRules,
} from '../../../src/services/audit/audit-chain-check.ts';

const INSTITUTION = { idType: 'hci', id: 'S1234A' };
const T0 = Date.parse('2026-11-26T02:00:00.000Z');
const CHAIN = chainOf({ institution: INSTITUTION, occurredAt: new Date(T0) });

interface SigningKey {
  readonly private: JWK;
  readonly public: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  return {
    private: { ...(await exportJWK(privateKey)), kid },
    public: { ...(await exportJWK(publicKey)), kid },
  };
}

async function signed(
  checkpoint: Omit<Checkpoint, 'signature' | 'keyId'>,
  key: SigningKey,
  headerKid?: string,
) {
  const signature = await new CompactSign(checkpointBytes(checkpoint))
    .setProtectedHeader({ alg: 'EdDSA', kid: headerKid ?? key.private.kid ?? '' })
    .sign(await importJWK(key.private, 'EdDSA'));
  return { ...checkpoint, signature, keyId: key.private.kid ?? null };
}

/** A chain's rows and the checkpoints of its heads, made by the rules; each call seals rows and records. */
class Trail {
  readonly rows: ChainRow[] = [];
  readonly checkpoints: Checkpoint[] = [];
  private recorded = 0;

  /** A row of `form` that occurred `at` ms after T0 and was sealed `sealedAfter` ms later. */
  add(at: number, options: { form?: HashForm; sealedAfter?: number; claim?: boolean } = {}): ChainRow {
    const index = this.rows.length + 1;
    const prevHash = this.rows.at(-1)?.rowHash ?? GENESIS_HASH;
    const form = options.form ?? 2;
    const content = {
      id: `0193a1c4-5e2f-7c3d-9a1b-${String(index).padStart(12, '0')}`,
      occurredAt: new Date(T0 + at),
      requestId: `req-${index}`,
      apiKeyId: null,
      system: 'HAS',
      institution: INSTITUTION,
      claimedInstitution: options.claim === true ? { idType: 'hci', id: 'S9001Z' } : null,
      requesterIdentifier: null,
      action: 'referral.read',
      outcome: 'success',
      referralIds: [],
    };
    const sealedAt = new Date(T0 + at + (options.sealedAfter ?? 3_000));
    const row: ChainRow = {
      ...content,
      chainIndex: index,
      prevHash,
      sealedAt,
      hashForm: form,
      rowHash: rowHashOf(prevHash, { ...content, chain: CHAIN, chainIndex: index, sealedAt }, form),
    };
    this.rows.push(row);
    return row;
  }

  /** A checkpoint of the rows added since the last, at `at` ms after T0. */
  async record(at: number, options: { form?: 1 | 2; key?: SigningKey | null } = {}): Promise<Checkpoint> {
    const form = options.form ?? 2;
    const last = this.rows.at(-1);
    const heads =
      this.rows.length > this.recorded && last !== undefined
        ? { [CHAIN]: { index: this.rows.length, hash: last.rowHash ?? '' } }
        : {};
    this.recorded = this.rows.length;
    const previous = this.checkpoints.at(-1);
    const content = {
      seq: String(this.checkpoints.length + 1),
      createdAt: new Date(T0 + at),
      heads,
      form,
      prevHash: form === 1 ? null : previous === undefined ? GENESIS_HASH : checkpointHashOf(previous),
    };
    const checkpoint =
      options.key === undefined || options.key === null
        ? { ...content, signature: null, keyId: null }
        : await signed(content, options.key);
    this.checkpoints.push(checkpoint);
    return checkpoint;
  }
}

describe('the audit trail’s rules', () => {
  let key: SigningKey;
  let rotated: SigningKey;
  const rules = (keys: readonly JWK[] | undefined, whole = true): CheckpointRules => ({
    keys,
    whole,
    unsignedHint: '',
  });

  /** The first break of `trail`, checked with `keys` (null: no key known, signatures unchecked). */
  async function verify(trail: Trail, keys: readonly JWK[] | null = [key.public]) {
    const checked = await checkCheckpoints(trail.checkpoints, rules(keys ?? undefined));
    if (checked.broken !== undefined) return checked.broken;
    return checkChain(CHAIN, trail.rows, checked.heads.get(CHAIN) ?? []).broken;
  }

  /** Rows and checkpoints of the first forms, as a refhub before the second sealed them, then of the second. */
  async function upgradedTrail(): Promise<Trail> {
    const trail = new Trail();
    trail.add(0, { form: 1 });
    trail.add(10, { form: 1 });
    await trail.record(3_100, { form: 1, key });
    trail.add(5_000, { form: 1 });
    await trail.record(8_100, { form: 1, key });
    trail.add(10_000);
    trail.add(10_001);
    await trail.record(13_100, { key });
    return trail;
  }

  beforeAll(async () => {
    key = await signingKey('audit-2026-11');
    rotated = await signingKey('audit-2027-05');
  });

  it('holds for rows and checkpoints of the first forms followed by the second', async () => {
    expect(await verify(await upgradedTrail())).toBeUndefined();
  });

  it('lets rows of form 1 be sealed a little out of order, as sealers with different clocks did', async () => {
    const trail = new Trail();
    trail.add(0, { form: 1, sealedAfter: 3_000 });
    trail.add(1, { form: 1, sealedAfter: 2_500 });
    await trail.record(3_100, { form: 1, key });
    expect(await verify(trail)).toBeUndefined();
  });

  it('breaks where a row of form 2 was sealed before the row before it', async () => {
    const trail = new Trail();
    trail.add(0, { sealedAfter: 3_000 });
    const second = trail.add(1, { sealedAfter: 2_500 });
    await trail.record(3_100, { key });
    expect(await verify(trail)).toEqual({
      chain: CHAIN,
      index: 2,
      rowId: second.id,
      problem: 'it was sealed before the row before it: its times were changed',
    });
  });

  it('breaks where a row says it was sealed before it occurred', async () => {
    const trail = new Trail();
    trail.add(0, { sealedAfter: 0 });
    await trail.record(3_100, { key });
    expect(await verify(trail)).toMatchObject({
      index: 1,
      problem: expect.stringMatching(/sealed before the time it gives/) as unknown,
    });
  });

  it('breaks where a row of form 1 follows one of form 2, or holds a claim form 1 does not cover', async () => {
    const downgraded = new Trail();
    downgraded.add(0);
    downgraded.add(1, { form: 1 });
    await downgraded.record(3_100, { key });
    expect(await verify(downgraded)).toMatchObject({
      index: 2,
      problem: 'it is of hash form 1 after a row of form 2: it was rewritten in the older form',
    });

    const claimed = new Trail();
    claimed.add(0, { form: 1, claim: true });
    await claimed.record(3_100, { form: 1, key });
    expect(await verify(claimed)).toMatchObject({
      index: 1,
      problem: expect.stringMatching(/claimed institution/) as unknown,
    });
  });

  it('breaks where a row was sealed after the checkpoint that recorded it', async () => {
    const trail = new Trail();
    trail.add(0, { sealedAfter: 4_000 });
    await trail.record(3_100, { key });
    expect(await verify(trail)).toMatchObject({
      index: 1,
      problem: expect.stringMatching(/^it was sealed after checkpoint 1 of .*, which recorded it/) as unknown,
    });
  });

  it('holds a row of form 1, whose sealed_at its hash does not cover, to the time of the checkpoint that recorded it', async () => {
    // A row that occurred an hour before it was sealed, its sealed_at moved to look timely: form 1
    // does not cover sealed_at, so only the signed checkpoint tells.
    const trail = new Trail();
    trail.add(0, { form: 1, sealedAfter: 2_000 });
    await trail.record(3_600_000, { form: 1, key });
    expect(await verify(trail)).toMatchObject({
      index: 1,
      problem: expect.stringMatching(
        /the first to record it, was made long after the time it gives: it was back-dated/,
      ) as unknown,
    });
  });

  it('breaks where a later checkpoint records an earlier head, or one with another hash', async () => {
    const trail = await upgradedTrail();
    const [first] = trail.checkpoints;
    trail.checkpoints.push(
      await signed(
        {
          seq: '4',
          createdAt: new Date(T0 + 20_000),
          heads: first!.heads,
          form: 2,
          prevHash: checkpointHashOf(trail.checkpoints.at(-1)!),
        },
        key,
      ),
    );
    expect(await verify(trail)).toMatchObject({
      problem: expect.stringMatching(
        /records row 2 as the chain's head, not after row 5.*the chain went back/,
      ) as unknown,
    });

    const other = await upgradedTrail();
    const last = other.checkpoints.pop()!;
    other.checkpoints.push(
      await signed({ ...last, heads: { [CHAIN]: { index: 5, hash: 'f'.repeat(64) } } }, key),
    );
    expect(await verify(other)).toMatchObject({
      index: 5,
      problem: expect.stringMatching(/^checkpoint 3 of .* recorded row 5 with another hash$/) as unknown,
    });
  });

  it('breaks on an unsigned checkpoint after a signed one when a key is known, and only then', async () => {
    const trail = await upgradedTrail();
    trail.add(20_000);
    await trail.record(23_100, { key: null });
    expect(await verify(trail)).toMatchObject({
      problem: expect.stringMatching(/^checkpoint 4 of .* is not signed, and an earlier one is/) as unknown,
    });
    expect(await verify(trail, null)).toBeUndefined();
  });

  it('breaks when a key is known and no checkpoint is signed', async () => {
    const trail = new Trail();
    trail.add(0);
    await trail.record(3_100, { key: null });
    expect(await verify(trail)).toMatchObject({
      chain: '-',
      problem: expect.stringMatching(/^no checkpoint is signed/) as unknown,
    });
    expect(await verify(trail, null)).toBeUndefined();
  });

  it('takes in unsigned checkpoints before the first signed one only when an adoption signs for them', async () => {
    // A trail kept without a key, then signed by the sealer: as a trail whose signatures were all
    // removed looks, with the sealer's next round after it.
    const trail = new Trail();
    trail.add(0);
    await trail.record(3_100, { key: null });
    trail.add(5_000);
    await trail.record(8_100, { key: null });
    trail.add(10_000);
    await trail.record(13_100, { key });
    expect(await verify(trail)).toMatchObject({
      chain: CHAIN,
      problem: expect.stringMatching(
        /^checkpoint 1 of .* is not signed, and no adoption signed for it: its signature was removed$/,
      ) as unknown,
    });
    expect(await verify(trail, null)).toBeUndefined();
    // An adoption after them, a signed checkpoint with no heads, signs for them.
    await trail.record(14_000, { key });
    expect(await verify(trail)).toBeUndefined();
    // Not for one unsigned after it.
    trail.add(20_000);
    await trail.record(23_100, { key: null });
    expect(await verify(trail)).toMatchObject({
      problem: expect.stringMatching(/^checkpoint 5 of .* is not signed, and an earlier one is/) as unknown,
    });
  });

  it('checks each checkpoint with the key of its kid, across a rotation', async () => {
    const trail = await upgradedTrail();
    trail.add(20_000);
    await trail.record(23_100, { key: rotated });
    expect(await verify(trail, [key.public, rotated.public])).toBeUndefined();
    expect(await verify(trail, [rotated.public])).toMatchObject({
      problem: expect.stringMatching(
        /^checkpoint 1 of .* is signed with key "audit-2026-11", and no public key with that kid was given$/,
      ) as unknown,
    });
    // A key under another's kid does not verify what the other signed.
    expect(await verify(trail, [key.public, { ...rotated.public, x: key.public.x }])).toMatchObject({
      problem: expect.stringMatching(/^checkpoint 4 of .* does not match its signature$/) as unknown,
    });
  });

  it('breaks where a signature names another kid than the checkpoint does', async () => {
    const trail = new Trail();
    trail.add(0);
    const checkpoint = await trail.record(3_100);
    trail.checkpoints[0] = {
      ...(await signed(checkpoint, key, 'another-kid')),
      keyId: key.private.kid ?? null,
    };
    expect(await verify(trail)).toMatchObject({
      problem: expect.stringMatching(/does not match its signature/) as unknown,
    });
  });

  it('breaks where a checkpoint between two was removed, and not at the first of a run', async () => {
    const trail = await upgradedTrail();
    trail.add(20_000);
    await trail.record(23_100, { key });
    trail.add(30_000);
    await trail.record(33_100, { key });
    const [, , , fourth, fifth] = trail.checkpoints;
    // The whole trail without its fourth checkpoint.
    trail.checkpoints.splice(3, 1);
    expect(await verify(trail)).toMatchObject({
      problem: expect.stringMatching(
        /^checkpoint 5 of .* does not follow the checkpoint before it/,
      ) as unknown,
    });
    // A run that starts at the fourth (an export): its link to the third is not there to check.
    const run = await checkCheckpoints([fourth!, fifth!], rules([key.public], false));
    expect(run.broken).toBeUndefined();
    const whole = await checkCheckpoints([fourth!, fifth!], rules([key.public], true));
    expect(whole.broken?.problem).toMatch(/^checkpoint 4 of .* does not follow the checkpoint before it/);
  });

  it('breaks where a checkpoint of form 2 is older than the one before it, or one of form 1 follows it', async () => {
    const older = await upgradedTrail();
    older.add(20_000);
    await older.record(12_000, { key });
    expect(await verify(older)).toMatchObject({
      problem: expect.stringMatching(/is older than the checkpoint before it/) as unknown,
    });

    const downgraded = await upgradedTrail();
    downgraded.add(20_000, { form: 2 });
    await downgraded.record(23_100, { form: 1, key });
    expect(await verify(downgraded)).toMatchObject({
      problem: expect.stringMatching(/is of form 1 after one of form 2/) as unknown,
    });
  });
});
