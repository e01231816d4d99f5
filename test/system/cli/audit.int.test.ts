// `refhub audit …`, spawned as operators and auditors run it against a PostgreSQL database: audit rows
// written as requests write them are sealed on demand, the trail verifies, the public key is printed
// without its private half, and an export verifies offline (`--file`, no database) with the key given
// apart. Exports the test edits (a row's action changed, a row's line deleted, the chain's last row
// cut, a checkpoint's head rewritten, a foreign key) are refused with the broken link named, and so is
// a row changed in the database.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { auditChainRepository } from '../../../src/db/audit/audit-chain.repository.ts';
import { auditEventOf, systemActor } from '../../../src/domain/audit.ts';
import { auditRepository } from '../../../src/db/audit/audit.repository.ts';
import { chainOf, rowHashOf, type HashForm } from '../../../src/domain/audit-chain.ts';
import { checkpointHashOf } from '../../../src/services/audit/audit-chain-check.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { openPostgresStoreWithUrl } from '../../support/engines.ts';
import { describeRun, runRefhub, type CliResult } from '../../support/refhub-cli.ts';

const QUEUE_PREFIX = `cli-audit-${randomUUID()}`;
const STACK = /\n\s+at /;
const ROW_FIELDS = [
  'type',
  'chain',
  'chainIndex',
  'prevHash',
  'rowHash',
  'hashForm',
  'id',
  'occurredAt',
  'requestId',
  'apiKeyId',
  'system',
  'institution',
  'claimedInstitution',
  'requesterIdentifier',
  'action',
  'outcome',
  'referralIds',
  'sealedAt',
];

const tempDirs: string[] = [];

afterAll(async () => {
  const redis = new Redis(testRedisUrl());
  const keys = await redis.keys(`{${QUEUE_PREFIX}[}:]*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** A private Ed25519 JWK with a kid, as AUDIT_SIGNING_KEY holds one. */
async function signingKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  return { ...(await exportJWK(privateKey)), kid };
}

type Line = Record<string, unknown>;

// Each spawn of refhub costs seconds, and more on a busy machine.
describe('refhub audit', { timeout: 600_000 }, () => {
  it('seals, verifies, prints the public key, and exports a trail that verifies offline until edited', async () => {
    const { store, url: databaseUrl } = await openPostgresStoreWithUrl();
    try {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-audit-'));
      tempDirs.push(dir);
      const key = await signingKey('audit-test-1');
      const base = {
        DATABASE_URL: databaseUrl,
        DATA_DIR: dir,
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX,
      };
      const env = { ...base, AUDIT_SIGNING_KEY: JSON.stringify(key) };
      const cli = async (
        args: string[],
        outcome: 'ok' | 'fail' = 'ok',
        withEnv: Record<string, string> = env,
      ): Promise<CliResult> => {
        const r = await runRefhub(args, withEnv);
        expect(r.code, describeRun(args, r)).toBe(outcome === 'ok' ? 0 : 1);
        expect(r.stderr, 'a message, not a stack trace').not.toMatch(STACK);
        if (outcome === 'fail') expect(r.stdout, describeRun(args, r)).toBe('');
        return r;
      };
      const file = (name: string, content: string) => {
        const at = path.join(dir, name);
        fs.writeFileSync(at, content);
        return at;
      };

      // Rows as requests write them: four by a clinic's key for its institution, two by refhub itself.
      // Written a few seconds ago, so that the sealer takes them at once.
      const at = new Date(Date.now() - 5_000);
      const clinic = {
        requestId: 'req-clinic',
        apiKeyId: randomUUID(),
        system: 'HAS',
        institution: { idType: 'hci', id: 'S1234A' },
        requesterIdentifier: null,
      };
      const actions = ['referral.create', 'referral.read', 'referral.list', 'referral.read'];
      for (const [i, action] of actions.entries())
        await auditRepository(store.db).record(
          auditEventOf(clinic, action, [randomUUID()], new Date(at.getTime() + i)),
        );
      for (const i of [0, 1])
        await auditRepository(store.db).record(
          auditEventOf(
            systemActor('req-refhub'),
            'forward.sent',
            [randomUUID()],
            new Date(at.getTime() + 10 + i),
          ),
        );
      const day = at.toISOString().slice(0, 10);
      const clinicChain = chainOf({ institution: clinic.institution, occurredAt: at });
      expect(clinicChain).toBe(`hci:S1234A/${day}`);

      expect((await cli(['audit', 'seal'])).stdout).toBe('Sealed 6 audit rows.\n');
      expect((await cli(['audit', 'seal'])).stdout).toBe('Nothing to seal: every audit row is sealed.\n');

      const [verified, since, noKey, publicKey, noPublicKey, sinceWithFile, badDay, exported] =
        await Promise.all([
          cli(['audit', 'verify']),
          cli(['audit', 'verify', '--since', day]),
          cli(['audit', 'verify'], 'ok', base),
          cli(['audit', 'public-key']),
          cli(['audit', 'public-key'], 'fail', base),
          cli(['audit', 'verify', '--file', 'export.ndjson', '--since', day], 'fail'),
          cli(['audit', 'export', '--from', '2026-02-30', '--to', day], 'fail'),
          cli(['audit', 'export', '--from', day, '--to', day]),
        ]);
      expect(verified.stdout).toBe('Audit trail intact: 2 chains, 6 rows, 1 checkpoint (0 unsigned).\n');
      expect(verified.stderr).toBe('');
      expect(since.stdout).toBe(verified.stdout);
      // Without the key in this shell, the signatures go unchecked, and it says so.
      expect(noKey.stdout).toBe(verified.stdout);
      expect(noKey.stderr).toMatch(/^refhub: warning: the checkpoints' signatures were not checked/);
      const jwk = JSON.parse(publicKey.stdout) as JWK;
      expect(jwk).toEqual({ kty: 'OKP', crv: 'Ed25519', x: key.x, kid: 'audit-test-1' });
      expect(publicKey.stdout).not.toContain(key.d);
      expect(noPublicKey.stderr).toMatch(/^refhub: AUDIT_SIGNING_KEY is not set/);
      expect(sinceWithFile.stderr).toMatch(/^refhub: --since is for the trail in the database/);
      expect(badDay.stderr).toMatch(/expected a day, YYYY-MM-DD/);

      // The export: the days, the rows in chain order, the checkpoint, the key; nothing else.
      const lines = exported.stdout.trimEnd().split('\n');
      const parsed = lines.map((l) => JSON.parse(l) as Line);
      expect(parsed[0]).toEqual({ type: 'export', from: day, to: day });
      const rows = parsed.filter((l) => l.type === 'row');
      expect(rows).toHaveLength(6);
      for (const row of rows) expect(Object.keys(row)).toEqual(ROW_FIELDS);
      expect(rows.map((r) => [r.chain, r.chainIndex])).toEqual([
        [clinicChain, 1],
        [clinicChain, 2],
        [clinicChain, 3],
        [clinicChain, 4],
        [`refhub/${day}`, 1],
        [`refhub/${day}`, 2],
      ]);
      expect(rows.slice(0, 4).map((r) => r.action)).toEqual(actions);
      const checkpoints = parsed.filter((l) => l.type === 'checkpoint');
      expect(checkpoints).toHaveLength(1);
      expect(checkpoints[0]?.keyId).toBe('audit-test-1');
      expect(parsed.at(-1)).toEqual({ type: 'key', jwk });
      expect(exported.stdout).not.toContain(key.d);

      const exportFile = file('export.ndjson', exported.stdout);
      const keyFile = file('public.jwk', publicKey.stdout);
      const otherKey = await signingKey('audit-test-1');
      const otherKeyFile = file('other.jwk', JSON.stringify({ ...otherKey, d: undefined }));
      /** The export with its line `n` (0-based) replaced by `edit`'s result, or deleted for null. */
      const edited = (name: string, n: number, edit: (line: Line) => Line | null) =>
        file(
          name,
          parsed
            .flatMap((line, i) => {
              if (i !== n) return [line];
              const changed = edit(structuredClone(line));
              return changed === null ? [] : [changed];
            })
            .map((l) => JSON.stringify(l))
            .join('\n') + '\n',
        );
      const rowLine = (chainIndex: number) =>
        parsed.findIndex((l) => l.type === 'row' && l.chain === clinicChain && l.chainIndex === chainIndex);
      const rowId = (chainIndex: number) => parsed[rowLine(chainIndex)]?.id as string;
      const checkpointLine = parsed.findIndex((l) => l.type === 'checkpoint');
      const createdAt = parsed[checkpointLine]?.createdAt as string;

      const changed = edited('changed.ndjson', rowLine(2), (l) => ({ ...l, action: 'referral.update' }));
      const deleted = edited('deleted.ndjson', rowLine(3), () => null);
      const cut = edited('cut.ndjson', rowLine(4), () => null);
      const forged = edited('forged.ndjson', checkpointLine, (l) => {
        const heads = l.heads as Record<string, { index: number; hash: string }>;
        return {
          ...l,
          heads: { ...heads, [clinicChain]: { index: 3, hash: rowsHash(parsed, clinicChain, 3) } },
        };
      });
      const notAnExport = file('not-an-export.ndjson', `${lines[0]}\n{"type":"row","chain":1}\n`);

      const offline = (args: string[], outcome: 'ok' | 'fail' = 'ok') =>
        // No database: the settings are left out altogether.
        cli(['audit', 'verify', ...args], outcome, {});
      const [intact, intactOwnKey, wrongKey, isChanged, isDeleted, isCut, isForged, isNotAnExport] =
        await Promise.all([
          offline(['--file', exportFile, '--key', keyFile]),
          offline(['--file', exportFile]),
          offline(['--file', exportFile, '--key', otherKeyFile], 'fail'),
          offline(['--file', changed, '--key', keyFile], 'fail'),
          offline(['--file', deleted, '--key', keyFile], 'fail'),
          offline(['--file', cut, '--key', keyFile], 'fail'),
          offline(['--file', forged, '--key', keyFile], 'fail'),
          offline(['--file', notAnExport, '--key', keyFile], 'fail'),
        ]);
      expect(intact.stdout).toBe(
        `Audit export intact: 2 chains, 6 rows, 1 checkpoint (0 unsigned), of ${day}.\n`,
      );
      expect(intact.stderr).toBe('');
      expect(intactOwnKey.stdout).toBe(intact.stdout);
      expect(intactOwnKey.stderr).toMatch(
        /^refhub: warning: the signatures were checked with the key the export itself holds/,
      );
      expect(wrongKey.stderr).toMatch(
        /^refhub: audit export broken: chain .*: checkpoint 1 of .* does not match its signature\n$/,
      );
      expect(isChanged.stderr).toBe(
        `refhub: audit export broken: chain ${clinicChain}, row 2 (${rowId(2)}): its content does not give its hash: it was changed\n`,
      );
      expect(isDeleted.stderr).toBe(
        `refhub: audit export broken: chain ${clinicChain}, row 4 (${rowId(4)}): row 3 of the chain is missing, or a row was inserted\n`,
      );
      expect(isCut.stderr).toBe(
        `refhub: audit export broken: chain ${clinicChain}, row 4: checkpoint 1 of ${createdAt} recorded row 4, and the row is gone\n`,
      );
      expect(isForged.stderr).toMatch(
        /^refhub: audit export broken: chain .*: checkpoint 1 of .* does not match its signature\n$/,
      );
      expect(isNotAnExport.stderr).toMatch(
        /not-an-export\.ndjson, line 2: not a line of an audit export: a row needs/,
      );

      // The signing key rotated: a new kid. The checkpoints the old key signed verify with its public
      // key, given with --key or kept in AUDIT_PUBLIC_KEYS, in the database and in an export.
      const key2 = await signingKey('audit-test-2');
      const env2 = { ...base, AUDIT_SIGNING_KEY: JSON.stringify(key2) };
      const env2WithOld = { ...env2, AUDIT_PUBLIC_KEYS: publicKey.stdout.trim() };
      const later = new Date(Date.now() - 5_000);
      for (const [i, action] of ['referral.read', 'referral.accept'].entries())
        await auditRepository(store.db).record(
          auditEventOf(clinic, action, [randomUUID()], new Date(later.getTime() + i)),
        );
      expect((await cli(['audit', 'seal'], 'ok', env2)).stdout).toBe('Sealed 2 audit rows.\n');
      const laterDay = later.toISOString().slice(0, 10);
      const exportArgs = ['audit', 'export', '--from', day, '--to', laterDay];
      const [oldKeyMissing, rotated, rotatedBySetting, exportedOneKey, exportedAfter, jwks, badSetting] =
        await Promise.all([
          cli(['audit', 'verify'], 'fail', env2),
          cli(['audit', 'verify', '--key', keyFile], 'ok', env2),
          cli(['audit', 'verify'], 'ok', env2WithOld),
          cli(exportArgs, 'ok', env2),
          cli(exportArgs, 'ok', env2WithOld),
          cli(['audit', 'public-key', '--jwks'], 'ok', env2WithOld),
          cli(['audit', 'verify'], 'fail', { ...env2, AUDIT_PUBLIC_KEYS: JSON.stringify(key) }),
        ]);
      expect(oldKeyMissing.stderr).toMatch(
        /checkpoint 1 of .* is signed with key "audit-test-1", and no public key with that kid was given\n$/,
      );
      // Across midnight, the two new rows start a chain of their own.
      const chainsAfter = laterDay === day ? 2 : 3;
      const intactAfter = `Audit trail intact: ${chainsAfter} chains, 8 rows, 2 checkpoints (0 unsigned).\n`;
      expect(rotated.stdout).toBe(intactAfter);
      expect(rotatedBySetting.stdout).toBe(intactAfter);
      expect(rotatedBySetting.stderr).toBe('');
      const publicKey2 = { kty: 'OKP', crv: 'Ed25519', x: key2.x, kid: 'audit-test-2' };
      expect(JSON.parse(jwks.stdout)).toEqual({ keys: [publicKey2, jwk] });
      expect(badSetting.stderr).toMatch(/^refhub: AUDIT_PUBLIC_KEYS: must hold public keys only/);
      // The export carries every public key known where it was made.
      const keyLines = (out: string) =>
        out
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as Line)
          .filter((l) => l.type === 'key');
      expect(keyLines(exportedOneKey.stdout)).toEqual([{ type: 'key', jwk: publicKey2 }]);
      expect(keyLines(exportedAfter.stdout)).toEqual([
        { type: 'key', jwk: publicKey2 },
        { type: 'key', jwk },
      ]);
      const afterOneKey = file('after-one-key.ndjson', exportedOneKey.stdout);
      const after = file('after.ndjson', exportedAfter.stdout);
      const bothKeys = file('both.jwks', jwks.stdout);
      const [afterBoth, afterOwnKeys, afterOwnKeyOnly] = await Promise.all([
        offline(['--file', afterOneKey, '--key', bothKeys]),
        offline(['--file', after]),
        offline(['--file', afterOneKey], 'fail'),
      ]);
      const exportIntact = new RegExp(
        `^Audit export intact: ${chainsAfter} chains, 8 rows, 2 checkpoints \\(0 unsigned\\), of ${day}`,
      );
      expect(afterBoth.stdout).toMatch(exportIntact);
      expect(afterOwnKeys.stdout).toMatch(exportIntact);
      expect(afterOwnKeyOnly.stderr).toMatch(
        /checkpoint 1 of .* is signed with key "audit-test-1", and no public key with that kid was given\n$/,
      );

      // The export's newest checkpoint with its signature removed: a break, not "intact".
      const afterLines = exportedAfter.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as Line);
      const newestLine = afterLines.findLastIndex((l) => l.type === 'checkpoint');
      const unsignedExport = file(
        'unsigned.ndjson',
        afterLines
          .map((l, i) => JSON.stringify(i === newestLine ? { ...l, signature: null, keyId: null } : l))
          .join('\n') + '\n',
      );
      expect((await offline(['--file', unsignedExport, '--key', bothKeys], 'fail')).stderr).toMatch(
        /^refhub: audit export broken: chain .*: checkpoint 2 of .* is not signed, and an earlier one is: its signature was removed, or it was inserted\n$/,
      );

      // A row changed in the database: `verify` names it, and exits 1.
      await store.db
        .updateTable('audit_events')
        .set({ action: 'referral.update' })
        .where('id', '=', rowId(2))
        .execute();
      expect((await cli(['audit', 'verify'], 'fail', env2WithOld)).stderr).toBe(
        `refhub: audit trail broken: chain ${clinicChain}, row 2 (${rowId(2)}): its content does not give its hash: it was changed\n`,
      );

      // The chain rewritten from that row on, every hash recomputed by the published rules, and a
      // checkpoint of its new head added without a signature: still a break, naming the checkpoint.
      const chainRows = await auditChainRepository(store.db).chainRows(clinicChain);
      let prevHash = chainRows[0]!.rowHash!;
      for (const row of chainRows.slice(1)) {
        const rowHash = rowHashOf(
          prevHash,
          { ...row, chain: clinicChain, chainIndex: row.chainIndex!, sealedAt: row.sealedAt! },
          row.hashForm as HashForm,
        );
        await store.db
          .updateTable('audit_events')
          .set({ prev_hash: prevHash, row_hash: rowHash })
          .where('id', '=', row.id)
          .execute();
        prevHash = rowHash;
      }
      const newHead = { [clinicChain]: { index: chainRows.length, hash: prevHash } };
      const newest = (await auditChainRepository(store.db).lastCheckpoint())!;
      await store.db
        .insertInto('audit_checkpoints')
        .values({
          created_at: new Date(),
          heads: JSON.stringify(newHead),
          signature: null,
          key_id: null,
          form: 2,
          prev_hash: checkpointHashOf(newest),
        })
        .execute();
      expect((await cli(['audit', 'verify'], 'fail', env2WithOld)).stderr).toMatch(
        new RegExp(
          `^refhub: audit trail broken: chain ${clinicChain}: checkpoint \\d+ of .* is not signed, and an earlier one is: its signature was removed, or it was inserted\\n$`,
        ),
      );
      // Instead, the newest signed checkpoint made to name the new head, its signature removed.
      await store.db.deleteFrom('audit_checkpoints').where('signature', 'is', null).execute();
      await store.db
        .updateTable('audit_checkpoints')
        .set({ heads: JSON.stringify(newHead), signature: null, key_id: null })
        .where('seq', '=', newest.seq)
        .execute();
      expect((await cli(['audit', 'verify'], 'fail', env2WithOld)).stderr).toMatch(
        new RegExp(
          `^refhub: audit trail broken: chain ${clinicChain}: checkpoint ${newest.seq} of .* is not signed`,
        ),
      );
    } finally {
      await store.close();
    }
  });
});

describe('refhub audit adopt', { timeout: 600_000 }, () => {
  it('signs for the unsigned checkpoints of a trail begun without a key, once, and only with the key', async () => {
    const { store, url: databaseUrl } = await openPostgresStoreWithUrl();
    try {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-audit-adopt-'));
      tempDirs.push(dir);
      const key = await signingKey('audit-adopt-1');
      const base = { DATABASE_URL: databaseUrl, DATA_DIR: dir, REDIS_URL: testRedisUrl(), QUEUE_PREFIX };
      const env = { ...base, AUDIT_SIGNING_KEY: JSON.stringify(key) };
      const cli = async (args: string[], withEnv: Record<string, string>, outcome: 'ok' | 'fail' = 'ok') => {
        const r = await runRefhub(args, withEnv);
        expect(r.code, describeRun(args, r)).toBe(outcome === 'ok' ? 0 : 1);
        expect(r.stderr, 'a message, not a stack trace').not.toMatch(STACK);
        return r;
      };
      const at = new Date(Date.now() - 5_000);
      await auditRepository(store.db).record(
        auditEventOf(systemActor('req-adopt'), 'forward.sent', [randomUUID()], at),
      );
      // Sealed without a key, as a refhub outside production without AUDIT_SIGNING_KEY seals.
      expect((await cli(['audit', 'seal'], base)).stdout).toBe('Sealed 1 audit row.\n');
      const [unadopted, withoutKey] = await Promise.all([
        cli(['audit', 'verify'], env, 'fail'),
        cli(['audit', 'adopt'], base, 'fail'),
      ]);
      expect(unadopted.stderr).toMatch(
        /^refhub: audit trail broken: chain -: no checkpoint is signed, though a key to check them with is known: .*`refhub audit adopt`/,
      );
      expect(withoutKey.stderr).toMatch(
        /^refhub: AUDIT_SIGNING_KEY is not set: an adoption is a checkpoint signed with it/,
      );

      const adopted = await cli(['audit', 'adopt'], env);
      expect(adopted.stdout).toMatch(
        /^Adopted 1 unsigned checkpoint, checkpoint 1 of \S+Z, with key "audit-adopt-1"\.\n$/,
      );
      const day = at.toISOString().slice(0, 10);
      const [verified, again, exported] = await Promise.all([
        cli(['audit', 'verify'], env),
        cli(['audit', 'adopt'], env),
        cli(['audit', 'export', '--from', day, '--to', day], env),
      ]);
      expect(verified.stdout).toBe('Audit trail intact: 1 chain, 1 row, 2 checkpoints (1 unsigned).\n');
      expect(verified.stderr).toBe(
        'refhub: warning: 1 checkpoint is unsigned, from before the trail was signed: an adoption signed for it as it was then\n',
      );
      expect(again.stdout).toBe(
        'Nothing to adopt: every checkpoint is signed, or an adoption signed for them.\n',
      );
      // The export goes on to the adoption, so that it verifies offline with the key too.
      const exportFile = path.join(dir, 'export.ndjson');
      fs.writeFileSync(exportFile, exported.stdout);
      const keyFile = path.join(dir, 'public.jwk');
      fs.writeFileSync(keyFile, JSON.stringify({ ...key, d: undefined }));
      const offline = await cli(['audit', 'verify', '--file', exportFile, '--key', keyFile], {});
      expect(offline.stdout).toBe(
        `Audit export intact: 1 chain, 1 row, 2 checkpoints (1 unsigned), of ${day}.\n`,
      );
    } finally {
      await store.close();
    }
  });
});

/** The row hash of row `index` of `chain` in an export. */
function rowsHash(lines: readonly Line[], chain: string, index: number): string {
  return lines.find((l) => l.type === 'row' && l.chain === chain && l.chainIndex === index)
    ?.rowHash as string;
}
