// `refhub migrate` and `refhub data-keys status|rotate`, spawned as an operator runs them against a
// PostgreSQL database that holds a referral written before field encryption: the status names what is
// still in the clear, the migration seals it, a rotation to a new key-encryption key wraps every data
// key again and seals every value under a new data key, after which the old key-encryption key can
// leave the ring; a ring that lacks the key a data key is wrapped by is refused in one line.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dataKeyRepository, openColumns } from '../../../src/db/data-keys/data-keys.repository.ts';
import { DEMO_CATALOG_FILE } from '../../../src/composition/demo-setup.ts';
import { createCatalogService } from '../../../src/services/catalog/catalog.service.ts';
import { createStores } from '../../../src/db/stores.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { dataKeysSetting, testDataKeys, testKeyEncryptionKey } from '../../support/data-keys.ts';
import { openPostgresStoreWithUrl } from '../../support/engines.ts';
import { describeRun, runRefhub, type CliResult } from '../../support/refhub-cli.ts';

const STACK = /\n\s+at /;
const tempDirs: string[] = [];

afterAll(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

// Each spawn of refhub costs seconds, and more on a busy machine.
describe('refhub data-keys', { timeout: 600_000 }, () => {
  it('seals data written before encryption, rotates both kinds of key, and refuses a ring that lacks one', async () => {
    const { store, url: databaseUrl } = await openPostgresStoreWithUrl();
    try {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-data-keys-'));
      tempDirs.push(dir);
      const first = testKeyEncryptionKey('kek-2025');
      const second = testKeyEncryptionKey('kek-2026');
      const base = {
        DATABASE_URL: databaseUrl,
        DATA_DIR: dir,
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: `cli-data-keys-${randomUUID()}`,
        DATA_KEY_REFRESH_SECONDS: '1',
      };
      const cli = async (args: string[], keys: string, outcome: 'ok' | 'fail' = 'ok'): Promise<CliResult> => {
        const r = await runRefhub(args, { ...base, DATA_KEYS: keys });
        expect(r.code, describeRun(args, r)).toBe(outcome === 'ok' ? 0 : 1);
        expect(r.stderr, 'a message, not a stack trace').not.toMatch(STACK);
        return r;
      };

      // A referral as a refhub before field encryption wrote it: its patient data in the clear.
      await createCatalogService({ stores: createStores(store.db, testDataKeys()) }).loadFile(
        DEMO_CATALOG_FILE,
      );
      const id = randomUUID();
      const at = new Date();
      await store.db
        .insertInto('referrals')
        .values({
          id,
          status: 'draft',
          sender_id_type: 'hci',
          sender_id: 'S1234A',
          sender_system: 'HAS',
          patient_uin: 'S1000009J',
          patient_name: 'Lim Bee Hoon',
          clinical_info: 'Written before field encryption',
          created_at: at,
          updated_at: at,
        })
        .execute();
      const stored = () =>
        store.db
          .selectFrom('referrals')
          .select(['id', 'patient_name', 'patient_uin_index', 'clinical_info', 'personal_data'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow();

      const before = await cli(['data-keys', 'status'], dataKeysSetting(first));
      expect(before.stdout).toMatch(/^Active data key: [0-9a-f]{12} \(a rotation to it is unfinished/);
      expect(before.stdout).toContain('  referrals: 1\n');
      expect(before.stdout).toMatch(/ {2}[0-9a-f]{12} {2}fields {7}wrapped by kek-2025 {2}made /);
      expect(before.stdout).toMatch(/ {2}[0-9a-f]{12} {2}blind index {2}wrapped by kek-2025 {2}made /);

      const migrated = await cli(['migrate'], dataKeysSetting(first));
      expect(migrated.stdout).toContain(
        'Sealed the patient data of 1 row written before field encryption.\n',
      );
      const sealed = await stored();
      expect(sealed).toMatchObject({ patient_name: null, clinical_info: null });
      expect(sealed.personal_data).toMatch(/^rh1:/);
      expect(sealed.personal_data).not.toContain('Written before');
      expect(sealed.patient_uin_index).not.toBeNull();
      expect((await cli(['data-keys', 'status'], dataKeysSetting(first))).stdout).toContain(
        '  referrals: 0\n',
      );

      // A new key-encryption key, first in the ring; the old one after it, until the rotation.
      const rotated = await cli(['data-keys', 'rotate'], dataKeysSetting(second, first));
      const newKey = /^Made data key ([0-9a-f]{12}); new values are sealed under it\.$/m.exec(
        rotated.stdout,
      )?.[1];
      expect(newKey, rotated.stdout).toBeDefined();
      expect(rotated.stdout).toContain('Wrapped 2 data keys again with the first key of DATA_KEYS.\n');
      expect(rotated.stdout).toContain(`Sealed 1 row again; every value is now under ${newKey}.\n`);
      expect((await stored()).personal_data).toMatch(new RegExp(`^rh1:${newKey}:`));

      // The old key-encryption key has left the ring; everything still opens.
      const after = await cli(['data-keys', 'status'], dataKeysSetting(second));
      expect(after.stdout).toMatch(new RegExp(`^Active data key: ${newKey}\\n`));
      expect(after.stdout).not.toContain('kek-2025');
      const keys = testDataKeys([second]);
      const row = await stored();
      expect(await keys.reading(store.db, (c) => openColumns('referrals', row, c))).toMatchObject({
        patient_name: 'Lim Bee Hoon',
        clinical_info: 'Written before field encryption',
      });
      expect((await dataKeyRepository(store.db).all()).every((k) => k.kek_id === 'kek-2026')).toBe(true);

      // A ring without the key that wraps the data keys: one line that names it.
      const refused = await cli(
        ['data-keys', 'status'],
        dataKeysSetting(testKeyEncryptionKey('kek-2027')),
        'fail',
      );
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toMatch(
        /^refhub: DATA_KEYS: does not hold key-encryption key kek-2026, which wraps data key [0-9a-f]{12}: add it back/,
      );
    } finally {
      await store.close();
    }
  });
});
