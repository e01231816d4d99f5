// First start outside production: load the demo catalog into an empty database and create test keys
// for a demo sender, a demo provider and ops, so the README's walk-through needs nothing else. The
// keys are printed once and written to DATA_DIR/demo-keys.txt (mode 600).
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import { catalogRepository } from '../db/catalog.repository.ts';
import type { Database } from '../db/schema.ts';
import { createApiKeyIn } from '../services/api-key.service.ts';
import { loadCatalogIn, readCatalogFile } from '../services/catalog.service.ts';

export const DEMO_CATALOG_FILE = fileURLToPath(new URL('../../catalog/demo.json', import.meta.url));

export interface DemoKey {
  readonly label: string;
  readonly key: string;
  readonly description: string;
}

const DEMO_KEYS = [
  {
    label: 'demo-sender',
    system: 'HAS',
    role: 'sender',
    institution: { idType: 'hci', id: 'S1234A' },
    description: 'sender: Bukit Timah Family Clinic (hci:S1234A) via HAS',
  },
  {
    label: 'demo-provider',
    system: 'Epic',
    role: 'provider',
    institution: { idType: 'hci', id: 'S9001Z' },
    description: 'provider: Central General Hospital (hci:S9001Z) via Epic',
  },
  { label: 'demo-ops', system: 'HAS', role: 'ops', institution: undefined, description: 'ops' },
] as const;

/**
 * Loads the demo catalog and creates demo keys if the database is empty; returns the keys made. All of
 * it is one transaction, and the key file is written before it commits: a start that fails half-way
 * leaves an empty database, and the next start sets the demo up again.
 */
export async function setUpDemo(db: Kysely<Database>, dataDir: string): Promise<DemoKey[] | undefined> {
  const document = await readCatalogFile(DEMO_CATALOG_FILE);
  return db.transaction().execute(async (trx) => {
    if (!(await catalogRepository(trx).isEmpty())) return undefined;
    await loadCatalogIn(trx, document);
    const keys: DemoKey[] = [];
    for (const demo of DEMO_KEYS) {
      const { key } = await createApiKeyIn(trx, {
        system: demo.system,
        role: demo.role,
        institutions: demo.institution === undefined ? [] : [demo.institution],
        label: demo.label,
        environment: 'test',
      });
      keys.push({ label: demo.label, key, description: demo.description });
    }
    await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
    const file = path.join(dataDir, 'demo-keys.txt');
    await fs.writeFile(file, keys.map((k) => `${k.label}\t${k.key}\t${k.description}\n`).join(''), {
      mode: 0o600,
    });
    await fs.chmod(file, 0o600);
    return keys;
  });
}
