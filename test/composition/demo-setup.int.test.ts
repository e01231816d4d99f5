import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import { catalogRepository } from '../../src/db/catalog.repository.ts';
import { createApiKeyService } from '../../src/services/api-key.service.ts';
import { setUpDemo } from '../../src/composition/demo-setup.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';

describe.each(ENGINES)('demo set-up on %s', (engine) => {
  let store: Store;
  let dir: string;
  beforeAll(async () => {
    store = await openTestStore(engine);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-demo-'));
  });
  afterAll(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('leaves an empty database when it fails half-way, so the next start sets it up again', async () => {
    // A data directory that cannot be created: the key file cannot be written.
    const blocked = path.join(dir, 'a-file');
    fs.writeFileSync(blocked, '');
    await expect(setUpDemo(store.db, path.join(blocked, 'data'))).rejects.toThrow();
    expect(await catalogRepository(store.db).isEmpty()).toBe(true);
    expect(await createApiKeyService({ db: store.db, clock: systemClock }).list()).toEqual([]);
  });

  it('loads the demo catalog and creates three test keys on an empty database, once', async () => {
    const dataDir = path.join(dir, 'data');
    const keys = await setUpDemo(store.db, dataDir);
    expect(keys?.map((k) => k.label)).toEqual(['demo-sender', 'demo-provider', 'demo-ops']);
    const apiKeys = createApiKeyService({ db: store.db, clock: systemClock });
    for (const { key } of keys ?? []) {
      expect(key).toMatch(/^rfh_test_[0-9A-Za-z]{43}$/);
      expect(await apiKeys.authenticate(key)).toBeDefined();
    }
    const file = path.join(dataDir, 'demo-keys.txt');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(
      fs
        .readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split('\t')[1]),
    ).toEqual(keys?.map((k) => k.key));
    expect(await catalogRepository(store.db).findOffering('cgh-gastro')).toBeDefined();

    expect(await setUpDemo(store.db, dataDir)).toBeUndefined();
    expect(await apiKeys.list()).toHaveLength(3);
  });
});
