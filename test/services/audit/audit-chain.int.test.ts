// The audit trail's chains on both engines: requests write their rows, the sealer chains them per
// institution and day and signs a checkpoint, and verify catches every way the test tampers with the
// rows straight in the database: a changed row, a deleted one, an inserted one, two swapped, a
// back-dated one, a removed chain end and a forged checkpoint.
import { exportJWK, generateKeyPair } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AuditSigningKey } from '../../../src/config.ts';
import {
  chainOf,
  GENESIS_HASH,
  HASH_FORM,
  rowHashOf,
  type AuditContent,
  type HashForm,
} from '../../../src/domain/audit-chain.ts';
import {
  auditChainRepository,
  type AuditChainRow,
  type Checkpoint,
} from '../../../src/db/audit/audit-chain.repository.ts';
import { auditEventOf } from '../../../src/domain/audit.ts';
import { auditRepository } from '../../../src/db/audit/audit.repository.ts';
import { CHECKPOINT_FORM, checkpointHashOf } from '../../../src/services/audit/audit-chain-check.ts';
import {
  createAuditChain,
  SEAL_AFTER_MS,
  type AuditChain,
} from '../../../src/services/audit/audit-chain.service.ts';
import { ENGINES } from '../../support/engines.ts';
import { referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

async function signingKey(kid: string): Promise<AuditSigningKey> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const jwk = await exportJWK(privateKey);
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x ?? '', d: jwk.d ?? '', kid };
}

describe.each(ENGINES)('the audit trail’s chains on %s', (engine) => {
  let t: TestApp;
  let chain: AuditChain;
  let key: AuditSigningKey;
  // refhub's clock, moved on by the test past the moment a row may be sealed.
  let ahead = 0;
  const clock = { now: () => new Date(Date.now() + ahead) };

  beforeAll(async () => {
    t = await createTestApp(engine, { clock });
    key = await signingKey('audit-2026-11');
    chain = createAuditChain({ stores: t.ctx.stores, clock, signingKey: key });
  });
  afterAll(async () => {
    await t.close();
  });

  /** Writes a few audited reads and writes, seals them, and checks the trail holds. */
  async function sealedTrail() {
    await referralIn(t, 'accepted');
    await referralIn(t, 'pending-acceptance');
    ahead += SEAL_AFTER_MS;
    expect(await chain.seal()).toBeGreaterThan(0);
    const verified = await chain.verify();
    expect(verified.broken, JSON.stringify(verified.broken)).toBeUndefined();
    return verified;
  }

  /** The sealed rows of the sender's chain today, in chain order. */
  async function senderChain() {
    const name = chainOf({
      institution: { idType: 'hci', id: t.sender.institution.institutionId },
      occurredAt: clock.now(),
    });
    const rows = await auditChainRepository(t.ctx.db).chainRows(name);
    expect(rows.length).toBeGreaterThan(3);
    return { name, rows };
  }

  /** A read of the same institution and time as `row`, as someone writing into the table would forge it. */
  function rowLike(row: AuditContent, id: string, requestId: string): AuditContent {
    return {
      id,
      occurredAt: row.occurredAt,
      requestId,
      apiKeyId: row.apiKeyId,
      system: row.system,
      institution: row.institution,
      claimedInstitution: null,
      requesterIdentifier: null,
      action: 'referral.read',
      outcome: 'success',
      referralIds: [],
    };
  }

  /** A sealed row's content and seal, as its hash covers them. */
  function sealOf(row: AuditChainRow) {
    return { ...row, chain: row.chain!, chainIndex: row.chainIndex!, sealedAt: row.sealedAt! };
  }

  /** Writes `row` straight into the table, sealed as the sealer would have sealed it at `seal`. */
  async function insertSealed(
    row: AuditContent,
    seal: { chain: string; index: number; prevHash: string; sealedAt: Date },
  ) {
    await t.ctx.db
      .insertInto('audit_events')
      .values({
        id: row.id,
        occurred_at: row.occurredAt,
        request_id: row.requestId,
        api_key_id: row.apiKeyId,
        system: row.system,
        institution_id_type: row.institution?.idType ?? null,
        institution_id: row.institution?.id ?? null,
        requester_identifier: row.requesterIdentifier,
        action: row.action,
        outcome: row.outcome as 'success' | 'denied',
        referral_ids: [...row.referralIds],
        chain: seal.chain,
        chain_index: seal.index,
        prev_hash: seal.prevHash,
        row_hash: rowHashOf(
          seal.prevHash,
          { ...row, chain: seal.chain, chainIndex: seal.index, sealedAt: seal.sealedAt },
          HASH_FORM,
        ),
        sealed_at: seal.sealedAt,
        hash_form: HASH_FORM,
      })
      .execute();
  }

  /** Puts the trail back as sealed, so that each tampering starts from an intact trail. */
  let restore: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    await restore?.();
    restore = undefined;
  });

  it('chains every row per institution and day, each linked to the one before, and signs the heads', async () => {
    const verified = await sealedTrail();
    expect(verified.rows).toBeGreaterThan(0);
    expect(verified.unsignedCheckpoints).toBe(0);
    const { rows } = await senderChain();
    expect(rows[0]?.prevHash).toBe(GENESIS_HASH);
    rows.forEach((row, i) => {
      expect(row.chainIndex).toBe(i + 1);
      expect(row.hashForm).toBe(HASH_FORM);
      expect(row.rowHash).toBe(
        rowHashOf(i === 0 ? GENESIS_HASH : (rows[i - 1]?.rowHash ?? ''), sealOf(row), HASH_FORM),
      );
    });
    // Nothing is left to seal; a second round writes no checkpoint.
    expect(await chain.seal()).toBe(0);
  });

  it('seals each row once when two sealers run at the same time, as two processes would', async () => {
    await referralIn(t, 'scheduled');
    ahead += SEAL_AFTER_MS;
    const other = createAuditChain({ stores: t.ctx.stores, clock, signingKey: key });
    const [a, b] = await Promise.all([chain.seal(), other.seal()]);
    expect(a > 0 !== b > 0, `one of them sealed (${a}, ${b})`).toBe(true);
    expect((await chain.verify()).broken).toBeUndefined();
  });

  it('catches a changed row: its content no longer gives its hash', async () => {
    await sealedTrail();
    const { name, rows } = await senderChain();
    const victim = rows[1]!;
    await t.ctx.db
      .updateTable('audit_events')
      .set({ action: 'referral.read' })
      .where('id', '=', victim.id)
      .execute();
    restore = async () => {
      await t.ctx.db
        .updateTable('audit_events')
        .set({ action: victim.action })
        .where('id', '=', victim.id)
        .execute();
    };
    expect((await chain.verify()).broken).toMatchObject({
      chain: name,
      index: 2,
      rowId: victim.id,
      problem: expect.stringMatching(/changed/) as unknown,
    });
  });

  it('catches a deleted row in the middle of a chain, and one at its end', async () => {
    await sealedTrail();
    const { name, rows } = await senderChain();
    const middle = rows[2]!;
    const deleteRow = (id: string) => t.ctx.db.deleteFrom('audit_events').where('id', '=', id).execute();
    const copy = async (id: string) =>
      t.ctx.db.selectFrom('audit_events').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    // Puts a deleted row back exactly as it was, its seq included.
    const putBack = (row: object) =>
      sql`insert into audit_events overriding system value
        select * from json_populate_record(null::audit_events, ${JSON.stringify(row)}::json)`.execute(
        t.ctx.db,
      );
    const kept = [await copy(middle.id), await copy(rows.at(-1)!.id)];
    restore = async () => {
      await putBack(kept[0]!);
    };
    await deleteRow(middle.id);
    expect((await chain.verify()).broken).toMatchObject({ chain: name, index: 4 });
    await restore();
    restore = undefined;
    expect((await chain.verify()).broken).toBeUndefined();

    const last = rows.at(-1)!;
    await deleteRow(last.id);
    restore = async () => {
      await putBack(kept[1]!);
    };
    expect((await chain.verify()).broken).toMatchObject({
      chain: name,
      index: last.chainIndex,
      problem: expect.stringMatching(/recorded row \d+, and the row is gone/) as unknown,
    });
  });

  it('catches a row inserted into a chain, and two rows swapped', async () => {
    await sealedTrail();
    const { name, rows } = await senderChain();
    const [first, second] = [rows[0]!, rows[1]!];
    // A forged row placed second, with a hash that would follow the first.
    const forged = rowLike(second, '018f0000-0000-7000-8000-0000000000aa', 'forged');
    await insertSealed(forged, {
      chain: name,
      index: 2,
      prevHash: first.rowHash!,
      sealedAt: second.sealedAt!,
    });
    restore = async () => {
      await t.ctx.db.deleteFrom('audit_events').where('id', '=', forged.id).execute();
    };
    expect((await chain.verify()).broken).toMatchObject({ chain: name });
    await restore();
    restore = undefined;

    // Swap the content of the first two rows (a reordering).
    const swap = (row: typeof first, other: typeof first) =>
      t.ctx.db
        .updateTable('audit_events')
        .set({ action: other.action, request_id: other.requestId, referral_ids: [...other.referralIds] })
        .where('id', '=', row.id)
        .execute();
    await swap(first, second);
    await swap(second, first);
    restore = async () => {
      await swap(first, first);
      await swap(second, second);
    };
    expect((await chain.verify()).broken).toMatchObject({ chain: name, index: 1, rowId: first.id });
  });

  it('catches a row added at the end of a chain, past the head the latest checkpoint signed', async () => {
    await sealedTrail();
    const { name, rows } = await senderChain();
    const last = rows.at(-1)!;
    const added = rowLike(last, '018f0000-0000-7000-8000-0000000000cc', 'appended');
    await insertSealed(added, {
      chain: name,
      index: (last.chainIndex ?? 0) + 1,
      prevHash: last.rowHash!,
      sealedAt: last.sealedAt!,
    });
    restore = async () => {
      await t.ctx.db.deleteFrom('audit_events').where('id', '=', added.id).execute();
    };
    expect((await chain.verify()).broken).toMatchObject({
      chain: name,
      rowId: added.id,
      problem: expect.stringMatching(/added after it/) as unknown,
    });
  });

  it('catches rows written straight into a chain of their own, which no head or checkpoint names', async () => {
    await sealedTrail();
    const { rows } = await senderChain();
    const institution = { idType: 'hci', id: 'S0000GHOST' };
    const ghost = { ...rowLike(rows[0]!, '018f0000-0000-7000-8000-0000000000ff', 'ghost'), institution };
    const name = chainOf(ghost);
    await insertSealed(ghost, {
      chain: name,
      index: 1,
      prevHash: GENESIS_HASH,
      sealedAt: rows[0]!.sealedAt!,
    });
    restore = async () => {
      await t.ctx.db.deleteFrom('audit_events').where('id', '=', ghost.id).execute();
    };
    expect((await chain.verify()).broken).toMatchObject({
      chain: name,
      problem: expect.stringMatching(/no checkpoint names this chain/) as unknown,
    });
  });

  it('catches a row inserted unsealed and back-dated, once it is sealed or left waiting', async () => {
    await sealedTrail();
    const backDated = new Date(clock.now().getTime() - 3_600_000);
    const id = '018f0000-0000-7000-8000-0000000000bb';
    await t.ctx.db
      .insertInto('audit_events')
      .values({
        id,
        occurred_at: backDated,
        request_id: 'back-dated',
        api_key_id: null,
        system: 'HAS',
        institution_id_type: 'hci',
        institution_id: t.sender.institution.institutionId,
        requester_identifier: null,
        action: 'referral.read',
        outcome: 'success',
        referral_ids: [],
      })
      .execute();
    restore = async () => {
      await t.ctx.db.deleteFrom('audit_events').where('id', '=', id).execute();
      await t.ctx.db.deleteFrom('audit_chain_heads').execute();
      await t.ctx.db.deleteFrom('audit_checkpoints').execute();
      await t.ctx.db
        .updateTable('audit_events')
        .set({
          chain: null,
          chain_index: null,
          prev_hash: null,
          row_hash: null,
          sealed_at: null,
          hash_form: null,
        })
        .execute();
    };
    expect((await chain.verify()).broken).toMatchObject({
      rowId: id,
      problem: expect.stringMatching(/not sealed/) as unknown,
    });
    await chain.seal();
    expect((await chain.verify()).broken).toMatchObject({
      rowId: id,
      problem: expect.stringMatching(/back-dated/) as unknown,
    });
  });

  /**
   * Saves the whole trail (rows, heads, checkpoints) and has the next test start from it again: for a
   * tampering that touches more than a row or two.
   */
  async function saveTrail(): Promise<void> {
    const saved = await Promise.all(
      (['audit_events', 'audit_chain_heads', 'audit_checkpoints'] as const).map(async (table) => ({
        table,
        rows: (await sql<object>`select * from ${sql.table(table)}`.execute(t.ctx.db)).rows,
      })),
    );
    restore = async () => {
      for (const { table, rows } of saved) {
        await sql`delete from ${sql.table(table)}`.execute(t.ctx.db);
        if (rows.length > 0)
          await sql`insert into ${sql.table(table)} overriding system value
            select * from json_populate_recordset(null::${sql.table(table)}, ${JSON.stringify(rows)}::json)`.execute(
            t.ctx.db,
          );
      }
    };
  }

  /**
   * Rewrites `rows` of `name` from the row at `from` (0-based) on with `change`, each hash recomputed
   * by the published rules as whoever can write to the database can: the chain links again. Returns
   * the new head.
   */
  async function rewriteChain(
    rows: readonly AuditChainRow[],
    from: number,
    change: (row: AuditChainRow) => AuditChainRow,
  ): Promise<{ index: number; hash: string }> {
    let prevHash = from === 0 ? GENESIS_HASH : rows[from - 1]!.rowHash!;
    for (const row of rows.slice(from)) {
      const changed = row === rows[from] ? change(row) : row;
      const rowHash = rowHashOf(prevHash, sealOf(changed), changed.hashForm as HashForm);
      await t.ctx.db
        .updateTable('audit_events')
        .set({ action: changed.action, prev_hash: prevHash, row_hash: rowHash })
        .where('id', '=', row.id)
        .execute();
      prevHash = rowHash;
    }
    return { index: rows.at(-1)!.chainIndex!, hash: prevHash };
  }

  /** A checkpoint written straight into the table, naming `heads`, unsigned, linked to the newest. */
  async function insertUnsignedCheckpoint(heads: Record<string, { index: number; hash: string }>) {
    const newest = await auditChainRepository(t.ctx.db).lastCheckpoint();
    await t.ctx.db
      .insertInto('audit_checkpoints')
      .values({
        created_at: clock.now(),
        heads: JSON.stringify(heads),
        signature: null,
        key_id: null,
        form: CHECKPOINT_FORM,
        prev_hash: newest === undefined ? GENESIS_HASH : checkpointHashOf(newest),
      })
      .execute();
  }

  it('catches a chain rewritten with its hashes recomputed and an unsigned checkpoint of its new head', async () => {
    await sealedTrail();
    await saveTrail();
    const { name, rows } = await senderChain();
    const head = await rewriteChain(rows, 1, (row) => ({ ...row, action: 'referral.update' }));
    await insertUnsignedCheckpoint({ [name]: head });
    expect((await chain.verify()).broken).toMatchObject({
      chain: name,
      problem: expect.stringMatching(/is not signed, and an earlier one is/) as unknown,
    });
  });

  it('catches the newest checkpoint’s signature removed', async () => {
    await sealedTrail();
    await saveTrail();
    const newest = await t.ctx.db
      .selectFrom('audit_checkpoints')
      .select('seq')
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow();
    await t.ctx.db
      .updateTable('audit_checkpoints')
      .set({ signature: null, key_id: null })
      .where('seq', '=', newest.seq)
      .execute();
    expect((await chain.verify()).broken).toMatchObject({
      problem: expect.stringMatching(new RegExp(`checkpoint ${newest.seq} .*is not signed`)) as unknown,
    });
  });

  it('catches every signature removed and the trail rewritten, though the sealer signs again after it', async () => {
    await sealedTrail();
    await saveTrail();
    const { name, rows } = await senderChain();
    const head = await rewriteChain(rows, 0, (row) => ({ ...row, action: 'referral.update' }));
    // Every checkpoint unsigned, the sender's heads rewritten to match, each linked to the one before
    // again: a trail that looks as if it was kept without a key until now.
    const checkpoints = await auditChainRepository(t.ctx.db).checkpoints();
    const newHashes = new Map(
      (await auditChainRepository(t.ctx.db).chainRows(name)).map((r) => [r.chainIndex, r.rowHash]),
    );
    let previous: Checkpoint | undefined;
    for (const checkpoint of checkpoints) {
      const heads = Object.fromEntries(
        Object.entries(checkpoint.heads).map(([chain, h]) => [
          chain,
          chain === name ? { index: h.index, hash: newHashes.get(h.index) ?? h.hash } : h,
        ]),
      );
      const prevHash =
        checkpoint.form === 1 ? null : previous === undefined ? GENESIS_HASH : checkpointHashOf(previous);
      await t.ctx.db
        .updateTable('audit_checkpoints')
        .set({ heads: JSON.stringify(heads), signature: null, key_id: null, prev_hash: prevHash })
        .where('seq', '=', checkpoint.seq)
        .execute();
      previous = { ...checkpoint, heads, prevHash, signature: null, keyId: null };
    }
    await t.ctx.db
      .updateTable('audit_chain_heads')
      .set({ chain_index: head.index, row_hash: head.hash })
      .where('chain', '=', name)
      .execute();
    // The sealer, with its key, goes on: its next checkpoint is signed and links to the forged ones.
    await referralIn(t, 'draft');
    ahead += SEAL_AFTER_MS + 1;
    expect(await chain.seal()).toBeGreaterThan(0);
    expect((await chain.verify()).broken).toMatchObject({
      problem: expect.stringMatching(/is not signed, and no adoption/) as unknown,
    });
  });

  it('verifies a trail begun without a key once an operator adopts its unsigned checkpoints', async () => {
    await sealedTrail();
    await saveTrail();
    // The trail as a refhub without AUDIT_SIGNING_KEY would have sealed it, then the key set.
    await t.ctx.db.deleteFrom('audit_checkpoints').execute();
    await t.ctx.db.deleteFrom('audit_chain_heads').execute();
    await t.ctx.db
      .updateTable('audit_events')
      .set({
        chain: null,
        chain_index: null,
        prev_hash: null,
        row_hash: null,
        sealed_at: null,
        hash_form: null,
      })
      .execute();
    expect(await createAuditChain({ stores: t.ctx.stores, clock }).seal()).toBeGreaterThan(0);
    const withKey = createAuditChain({ stores: t.ctx.stores, clock, signingKey: key });
    expect((await withKey.verify()).broken).toMatchObject({
      problem: expect.stringMatching(/^no checkpoint is signed.*`refhub audit adopt`/) as unknown,
    });
    await referralIn(t, 'draft');
    ahead += SEAL_AFTER_MS + 1;
    expect(await withKey.seal()).toBeGreaterThan(0);
    expect((await withKey.verify()).broken).toMatchObject({
      problem: expect.stringMatching(/is not signed, and no adoption signed for it/) as unknown,
    });

    const adopted = await withKey.adopt();
    expect(adopted).toMatchObject({ kind: 'adopted', count: 1 });
    const verified = await withKey.verify();
    expect(verified.broken).toBeUndefined();
    expect(verified).toMatchObject({ checkpoints: 3, unsignedCheckpoints: 1 });
    expect(await withKey.adopt()).toEqual({ kind: 'nothing' });

    // A signature removed after that is a break, and no adoption signs for it.
    const newest = (await auditChainRepository(t.ctx.db).lastCheckpoint())!;
    await t.ctx.db
      .updateTable('audit_checkpoints')
      .set({ signature: null, key_id: null })
      .where('seq', '=', newest.seq)
      .execute();
    expect(await withKey.adopt()).toMatchObject({
      kind: 'refused',
      unsignedAfterSigned: { seq: newest.seq },
    });
    expect((await withKey.verify()).broken).toMatchObject({
      problem: expect.stringMatching(/is not signed, and an earlier one is/) as unknown,
    });
  });

  it('checks every head a checkpoint recorded against the rows, not only the newest', async () => {
    await sealedTrail();
    await saveTrail();
    const { name, rows } = await senderChain();
    const head = await rewriteChain(rows, 0, (row) => ({ ...row, action: 'referral.update' }));
    // A row added after them, and a checkpoint of the new head: the chain moved forward as it would.
    const last = rows.at(-1)!;
    const added = rowLike(last, '018f0000-0000-7000-8000-0000000000ee', 'appended');
    const sealedAt = new Date(last.sealedAt!.getTime() + 1);
    await insertSealed(added, { chain: name, index: head.index + 1, prevHash: head.hash, sealedAt });
    const addedHash = rowHashOf(
      head.hash,
      { ...added, chain: name, chainIndex: head.index + 1, sealedAt },
      HASH_FORM,
    );
    await insertUnsignedCheckpoint({ [name]: { index: head.index + 1, hash: addedHash } });
    // Without the key, the signatures cannot be checked; the heads recorded earlier still hold the rows
    // to what they were.
    const keyless = createAuditChain({ stores: t.ctx.stores, clock });
    expect((await keyless.verify()).broken).toMatchObject({
      chain: name,
      problem: expect.stringMatching(/recorded row \d+ with another hash/) as unknown,
    });
  });

  it('catches a back-dated row whose sealed_at was moved to hide it', async () => {
    await sealedTrail();
    await saveTrail();
    const backDated = new Date(clock.now().getTime() - 3_600_000);
    const id = '018f0000-0000-7000-8000-0000000000dd';
    await t.ctx.db
      .insertInto('audit_events')
      .values({
        id,
        occurred_at: backDated,
        request_id: 'back-dated',
        api_key_id: null,
        system: 'HAS',
        institution_id_type: 'hci',
        institution_id: t.sender.institution.institutionId,
        requester_identifier: null,
        action: 'referral.read',
        outcome: 'success',
        referral_ids: [],
      })
      .execute();
    await chain.seal();
    expect((await chain.verify()).broken).toMatchObject({
      rowId: id,
      problem: expect.stringMatching(/back-dated/) as unknown,
    });
    await sql`update audit_events set sealed_at = occurred_at + interval '2 seconds' where id = ${id}`.execute(
      t.ctx.db,
    );
    expect((await chain.verify()).broken).toMatchObject({ rowId: id });
  });

  it('catches the end of a chain deleted with the checkpoint that signed it, newer checkpoints kept', async () => {
    await sealedTrail();
    await saveTrail();
    // Three rounds: the first seals a row of chains X and Y, the second one more of each, the third
    // one more of Y only. X's newest checkpoint is then the second round's.
    const actor = (id: string) => ({
      requestId: `end-${id}`,
      apiKeyId: null,
      system: 'HAS',
      institution: { idType: 'hci', id },
      requesterIdentifier: null,
    });
    const round = async (ids: readonly string[]) => {
      for (const id of ids)
        await auditRepository(t.ctx.db).record(auditEventOf(actor(id), 'referral.read', [], clock.now()));
      ahead += SEAL_AFTER_MS + 1;
      expect(await chain.seal()).toBe(ids.length);
    };
    await round(['TAIL-X', 'TAIL-Y']);
    await round(['TAIL-X', 'TAIL-Y']);
    await round(['TAIL-Y']);
    expect((await chain.verify()).broken).toBeUndefined();
    const chainX = chainOf({ institution: { idType: 'hci', id: 'TAIL-X' }, occurredAt: clock.now() });
    const checkpoints = await auditChainRepository(t.ctx.db).checkpoints();
    const second = checkpoints.at(-2)!;
    expect(Object.keys(second.heads)).toContain(chainX);
    await t.ctx.db.deleteFrom('audit_checkpoints').where('seq', '=', second.seq).execute();
    await t.ctx.db
      .deleteFrom('audit_events')
      .where('chain', '=', chainX)
      .where('chain_index', '=', 2)
      .execute();
    await t.ctx.db
      .updateTable('audit_chain_heads')
      .set({ chain_index: 1, row_hash: checkpoints.at(-3)!.heads[chainX]!.hash })
      .where('chain', '=', chainX)
      .execute();
    expect((await chain.verify()).broken).toMatchObject({
      problem: expect.stringMatching(/does not follow the checkpoint before it/) as unknown,
    });
  });

  it('catches a checkpoint whose heads were rewritten to match tampered rows', async () => {
    await sealedTrail();
    const [latest] = await t.ctx.db
      .selectFrom('audit_checkpoints')
      .select(['seq', 'heads'])
      .orderBy('seq', 'desc')
      .limit(1)
      .execute();
    const heads = latest!.heads;
    const [name] = Object.keys(heads);
    const forged = { ...heads, [name!]: { index: heads[name!]!.index, hash: 'f'.repeat(64) } };
    await t.ctx.db
      .updateTable('audit_checkpoints')
      .set({ heads: JSON.stringify(forged) })
      .where('seq', '=', latest!.seq)
      .execute();
    restore = async () => {
      await t.ctx.db
        .updateTable('audit_checkpoints')
        .set({ heads: JSON.stringify(heads) })
        .where('seq', '=', latest!.seq)
        .execute();
    };
    expect((await chain.verify()).broken).toMatchObject({
      problem: expect.stringMatching(/does not match its signature/) as unknown,
    });
  });
});
