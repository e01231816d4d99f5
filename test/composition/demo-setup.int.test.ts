import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import { catalogRepository } from '../../src/db/catalog.repository.ts';
import { installationSecretRepository } from '../../src/db/installation-secret.repository.ts';
import { createApiKeyService } from '../../src/services/api-key.service.ts';
import { setUpDemo, type DemoInstallation } from '../../src/composition/demo-setup.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';
import { storesOf } from '../support/stores.ts';

const ANY_KEY = /rfh_test_[0-9A-Za-z]{43}/g;

/** The keys a key file holds, in order. */
function keysIn(file: string): string[] {
  return fs.readFileSync(file, 'utf8').match(ANY_KEY) ?? [];
}

describe.each(ENGINES)('demo set-up on %s', (engine) => {
  let store: Store;
  let dir: string;
  let installation: (dataDir: string) => DemoInstallation;
  beforeAll(async () => {
    store = await openTestStore(engine);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-demo-'));
    const installationId = await installationSecretRepository(store.db).installationId();
    installation = (dataDir) => ({ dataDir, engine, installationId });
  });
  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('leaves an empty database when it fails half-way, so the next start sets it up again', async () => {
    // A data directory that cannot be created: the key file cannot be written.
    const blocked = path.join(dir, 'a-file');
    fs.writeFileSync(blocked, '');
    await expect(setUpDemo(store.db, installation(path.join(blocked, 'data')))).rejects.toThrow();
    expect(await catalogRepository(store.db).isEmpty()).toBe(true);
    expect(await createApiKeyService({ stores: storesOf(store.db), clock: systemClock }).list()).toEqual([]);
  });

  it('loads the demo catalog and creates three test keys on an empty database, once', async () => {
    const dataDir = path.join(dir, 'data');
    const own = installation(dataDir);
    const demo = await setUpDemo(store.db, own);
    expect(demo?.keys.map((k) => k.label)).toEqual(['demo-sender', 'demo-provider', 'demo-ops']);
    const apiKeys = createApiKeyService({ stores: storesOf(store.db), clock: systemClock });
    for (const { key } of demo?.keys ?? []) {
      expect(key).toMatch(/^rfh_test_[0-9A-Za-z]{43}$/);
      expect(await apiKeys.authenticate(key)).toBeDefined();
    }
    // PGlite's database lives in DATA_DIR: its keys take the plain name there. A PostgreSQL
    // installation's file carries its installation ID.
    const file = path.join(
      dataDir,
      engine === 'pglite' ? 'demo-keys.txt' : `demo-keys-${own.installationId}.txt`,
    );
    expect(demo?.file).toBe(file);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const [header, ...lines] = fs.readFileSync(file, 'utf8').trim().split('\n');
    expect(header).toBe(`# refhub demo keys of installation ${own.installationId}`);
    expect(lines.map((line) => line.split('\t')[1])).toEqual(demo?.keys.map((k) => k.key));
    expect(await catalogRepository(store.db).findOffering('cgh-gastro')).toBeDefined();

    expect(await setUpDemo(store.db, own)).toBeUndefined();
    expect(await apiKeys.list()).toHaveLength(3);
  });
});

describe('demo set-up of two installations in one DATA_DIR', () => {
  const engines = ['pglite', 'postgres', 'pglite', 'pglite'] as const;
  let installations: { store: Store; installation: DemoInstallation }[];
  let dataDir: string;
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-demo-shared-'));
    installations = await Promise.all(
      engines.map(async (engine) => {
        const store = await openTestStore(engine);
        const installationId = await installationSecretRepository(store.db).installationId();
        return { store, installation: { dataDir, engine, installationId } };
      }),
    );
  }, 180_000);
  afterAll(async () => {
    await Promise.all(installations.map((i) => i.store.close()));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("never overwrites another installation's keys, and each installation's keys are where it says", async () => {
    const [pglite, postgres, fresh] = installations as [
      (typeof installations)[number],
      (typeof installations)[number],
      (typeof installations)[number],
    ];
    // The embedded installation starts first and writes DATA_DIR/demo-keys.txt ...
    const embedded = await setUpDemo(pglite.store.db, pglite.installation);
    const plain = path.join(dataDir, 'demo-keys.txt');
    expect(embedded?.file).toBe(plain);
    const embeddedKeys = embedded?.keys.map((k) => k.key);
    expect(keysIn(plain)).toEqual(embeddedKeys);

    // ... then one on PostgreSQL with the same (default) DATA_DIR: its keys go beside them.
    expect(postgres.installation.installationId).not.toBe(pglite.installation.installationId);
    const other = await setUpDemo(postgres.store.db, postgres.installation);
    expect(other?.file).not.toBe(plain);
    expect(keysIn(other!.file)).toEqual(other?.keys.map((k) => k.key));
    expect(keysIn(plain)).toEqual(embeddedKeys);

    // A new embedded database in that DATA_DIR (its old one deleted) finds demo-keys.txt taken by an
    // installation that is not itself, and writes a file of its own.
    const third = await setUpDemo(fresh.store.db, fresh.installation);
    expect(third?.file).toBe(path.join(dataDir, `demo-keys-${fresh.installation.installationId}.txt`));
    expect(keysIn(plain)).toEqual(embeddedKeys);
    expect(keysIn(other!.file)).toEqual(other?.keys.map((k) => k.key));
  });

  it('keeps a key file from before files named their installation', async () => {
    const legacyDir = fs.mkdtempSync(path.join(dataDir, 'legacy-'));
    const legacy = path.join(legacyDir, 'demo-keys.txt');
    const before = `demo-sender\trfh_test_${'a'.repeat(43)}\tsender\n`;
    fs.writeFileSync(legacy, before, { mode: 0o600 });
    const { store, installation } = installations[3]!;
    const demo = await setUpDemo(store.db, { ...installation, dataDir: legacyDir });
    expect(demo?.file).toBe(path.join(legacyDir, `demo-keys-${installation.installationId}.txt`));
    expect(fs.readFileSync(legacy, 'utf8')).toBe(before);
  });
});
