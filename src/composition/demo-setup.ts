// First start outside production: load the demo catalog into an empty database and create test keys
// for a demo sender, a demo provider and ops, so the README's walk-through needs nothing else. The
// keys are printed once and written to a key file in DATA_DIR (mode 600), whose first line names the
// installation it belongs to.
//
// One DATA_DIR may serve several installations (its embedded PGlite, and a PostgreSQL one started
// with the default DATA_DIR), and a key file is the only copy of its keys. So a file is never
// overwritten unless it is this installation's own: PGlite, whose database lives in DATA_DIR, writes
// `demo-keys.txt` when that name is free or its own; PostgreSQL, and PGlite when `demo-keys.txt`
// belongs to another installation (or to none it can tell: a file from before files were named),
// write `demo-keys-<installation ID>.txt`.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import { apiKeyRepository } from '../db/api-key.repository.ts';
import { catalogRepository } from '../db/catalog.repository.ts';
import type { Database } from '../db/schema.ts';
import { createApiKeyIn } from '../services/api-key.service.ts';
import { loadCatalogIn, readCatalogFile } from '../services/catalog/catalog.service.ts';

export const DEMO_CATALOG_FILE = fileURLToPath(new URL('../../catalog/demo.json', import.meta.url));

export interface DemoKey {
  readonly label: string;
  readonly key: string;
  readonly description: string;
}

/** The demo keys made, and the file they were written to. */
export interface DemoSetUp {
  readonly keys: readonly DemoKey[];
  readonly file: string;
}

export interface DemoInstallation {
  readonly dataDir: string;
  /** PGlite keeps its database in DATA_DIR, so its key file may take the plain name there. */
  readonly engine: 'pglite' | 'postgres';
  readonly installationId: string;
}

const PLAIN_NAME = 'demo-keys.txt';

const headerOf = (installationId: string) => `# refhub demo keys of installation ${installationId}\n`;

/** The key file this installation may write: its own, never another installation's. */
async function keyFileFor(installation: DemoInstallation): Promise<string> {
  const own = path.join(installation.dataDir, `demo-keys-${installation.installationId}.txt`);
  if (installation.engine !== 'pglite') return own;
  const plain = path.join(installation.dataDir, PLAIN_NAME);
  const existing = await fs.readFile(plain, 'utf8').catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  });
  return existing === undefined || existing.startsWith(headerOf(installation.installationId)) ? plain : own;
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
  // An ops key acts for refhub's operators, not for a system: `system` is only the catalog row every
  // key names, and the listing shows `operators` for it (cli/api-key.command.ts).
  {
    label: 'demo-ops',
    system: 'HAS',
    role: 'ops',
    institution: undefined,
    description: "ops: refhub's operators (/admin, /metrics, /doctor)",
  },
] as const;

/**
 * Loads the demo catalog and creates demo keys if the database is empty; returns the keys made and
 * where they were written. All of it is one transaction, and the key file is written before it
 * commits: a start that fails half-way leaves an empty database, and the next start sets the demo up
 * again (and writes the same file, which is this installation's).
 */
export async function setUpDemo(
  db: Kysely<Database>,
  installation: DemoInstallation,
): Promise<DemoSetUp | undefined> {
  const document = await readCatalogFile(DEMO_CATALOG_FILE);
  return db.transaction().execute(async (trx) => {
    if (!(await catalogRepository(trx).isEmpty())) return undefined;
    await loadCatalogIn(catalogRepository(trx), document);
    const keys: DemoKey[] = [];
    for (const demo of DEMO_KEYS) {
      const { key } = await createApiKeyIn(
        { apiKeys: apiKeyRepository(trx), catalog: catalogRepository(trx) },
        {
          system: demo.system,
          role: demo.role,
          institutions: demo.institution === undefined ? [] : [demo.institution],
          label: demo.label,
          environment: 'test',
        },
      );
      keys.push({ label: demo.label, key, description: demo.description });
    }
    await fs.mkdir(installation.dataDir, { recursive: true, mode: 0o700 });
    const file = await keyFileFor(installation);
    const lines = keys.map((k) => `${k.label}\t${k.key}\t${k.description}\n`);
    await fs.writeFile(file, headerOf(installation.installationId) + lines.join(''), { mode: 0o600 });
    await fs.chmod(file, 0o600);
    return { keys, file };
  });
}
