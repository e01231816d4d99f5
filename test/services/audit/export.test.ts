// The audit export as `refhub audit verify --file` reads it (src/cli/audit.command.ts), with no
// database: an export written before the second forms (no `hashForm`, `claimedInstitution`, `form` or
// `prevHash`) still verifies by the first forms; lines of the second form that do not hold together
// are refused with their number; and two different keys under one kid are refused.
import { CompactSign, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkExport, mergeKeys, parseExport } from '../../../src/services/audit/export.ts';
import { chainOf, GENESIS_HASH, rowHashOf } from '../../../src/domain/audit-chain.ts';
import { checkpointBytes } from '../../../src/services/audit/audit-chain-check.ts';

const INSTITUTION = { idType: 'hci', id: 'S1234A' };
const OCCURRED = new Date('2026-11-26T02:15:09.412Z');
const SEALED = new Date('2026-11-26T02:15:14.020Z');
const CHAIN = chainOf({ institution: INSTITUTION, occurredAt: OCCURRED });

let privateKey: JWK;
let publicKey: JWK;

beforeAll(async () => {
  const pair = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  privateKey = { ...(await exportJWK(pair.privateKey)), kid: 'audit-2026-11' };
  publicKey = { ...(await exportJWK(pair.publicKey)), kid: 'audit-2026-11' };
});

/** The lines of an export as a refhub before the second forms wrote it: two rows and a checkpoint. */
async function exportOfTheFirstForms(): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [{ type: 'export', from: '2026-11-26', to: '2026-11-26' }];
  let prevHash = GENESIS_HASH;
  for (const index of [1, 2]) {
    const content = {
      id: `0193a1c4-5e2f-7c3d-9a1b-00000000000${index}`,
      occurredAt: new Date(OCCURRED.getTime() + index),
      requestId: `req-${index}`,
      apiKeyId: null,
      system: 'HAS',
      institution: INSTITUTION,
      claimedInstitution: null,
      requesterIdentifier: null,
      action: 'referral.read',
      outcome: 'success',
      referralIds: [],
    };
    const rowHash = rowHashOf(prevHash, { ...content, chain: CHAIN, chainIndex: index, sealedAt: SEALED }, 1);
    // The row line as it was: no hashForm, no claimedInstitution.
    lines.push({
      type: 'row',
      chain: CHAIN,
      chainIndex: index,
      prevHash,
      rowHash,
      id: content.id,
      occurredAt: content.occurredAt.toISOString(),
      requestId: content.requestId,
      apiKeyId: null,
      system: content.system,
      institution: INSTITUTION,
      requesterIdentifier: null,
      action: content.action,
      outcome: content.outcome,
      referralIds: [],
      sealedAt: SEALED.toISOString(),
    });
    prevHash = rowHash;
  }
  const checkpoint = {
    createdAt: new Date(SEALED.getTime() + 5),
    heads: { [CHAIN]: { index: 2, hash: prevHash } },
  };
  const signature = await new CompactSign(checkpointBytes({ ...checkpoint, form: 1, prevHash: null }))
    .setProtectedHeader({ alg: 'EdDSA', kid: 'audit-2026-11' })
    .sign(await importJWK(privateKey, 'EdDSA'));
  lines.push({
    type: 'checkpoint',
    createdAt: checkpoint.createdAt.toISOString(),
    heads: checkpoint.heads,
    signature,
    keyId: 'audit-2026-11',
  });
  return lines;
}

const text = (lines: readonly Record<string, unknown>[]) => lines.map((l) => JSON.stringify(l)).join('\n');

describe('an audit export', () => {
  it('written before the second forms, verifies by the first', async () => {
    const parsed = parseExport(text(await exportOfTheFirstForms()), 'old.ndjson');
    expect(parsed.rows.map((r) => [r.hashForm, r.claimedInstitution])).toEqual([
      [1, null],
      [1, null],
    ]);
    expect(parsed.checkpoints.map((c) => [c.form, c.prevHash])).toEqual([[1, null]]);
    const verified = await checkExport(parsed, [publicKey]);
    expect(verified.broken).toBeUndefined();
    expect(verified).toMatchObject({ chains: 1, rows: 2, checkpoints: 1, unsignedCheckpoints: 0 });
  });

  it('breaks when a row of the first form is given a claim its hash does not cover', async () => {
    const lines = await exportOfTheFirstForms();
    lines[1] = { ...lines[1], claimedInstitution: { idType: 'hci', id: 'S9001Z' } };
    const verified = await checkExport(parseExport(text(lines), 'claimed.ndjson'), [publicKey]);
    expect(verified.broken).toMatchObject({
      chain: CHAIN,
      index: 1,
      problem: expect.stringMatching(/claimed institution/) as unknown,
    });
  });

  it('refuses, by line number, a checkpoint of the second form without its link, or of no known form', async () => {
    const lines = await exportOfTheFirstForms();
    for (const [edit, why] of [
      [
        { form: 2 },
        /a checkpoint needs form, 1 \(with a null prevHash\) or 2 \(with prevHash, 64 hex digits\)/,
      ],
      [{ form: 2, prevHash: 'not a hash' }, /a checkpoint needs form/],
      [{ form: 3, prevHash: GENESIS_HASH }, /a checkpoint needs form/],
      [{ prevHash: GENESIS_HASH }, /a checkpoint needs form/],
    ] as const) {
      const edited = lines.map((l, i) => (i === 3 ? { ...l, ...edit } : l));
      expect(() => parseExport(text(edited), 'edited.ndjson')).toThrow(why);
      expect(() => parseExport(text(edited), 'edited.ndjson')).toThrow(/^edited\.ndjson, line 4: /);
    }
    const badForm = lines.map((l, i) => (i === 1 ? { ...l, hashForm: 3 } : l));
    expect(() => parseExport(text(badForm), 'rows.ndjson')).toThrow(
      /^rows\.ndjson, line 2: .*a row needs hashForm, 1 or 2/,
    );
  });

  it('refuses two different public keys under one kid', () => {
    const other = { ...publicKey, x: 'AAAA' };
    expect(mergeKeys([publicKey], [publicKey])).toEqual([publicKey]);
    expect(() => mergeKeys([publicKey], [other])).toThrow(
      /two different public keys have the kid "audit-2026-11"/,
    );
  });
});
