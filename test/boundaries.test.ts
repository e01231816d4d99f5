// The import rules of .dependency-cruiser.js (`npm run boundaries`) catch what they forbid. Offending
// files are planted in a copy of src in a temporary directory, depcruise runs there with the project's
// configuration, and each case expects the rule that names its offence; the real tree must pass. The
// real src is never touched, and no server is needed.
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, type ICruiseResult } from 'dependency-cruiser';
import { describe, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CONFIG = join(ROOT, '.dependency-cruiser.js');
const DEPCRUISE = join(ROOT, 'node_modules/.bin/depcruise');

interface Violation {
  rule: string;
  severity: string;
  from: string;
  to: string;
}

interface Outcome {
  /** what `npm run boundaries` (the err reporter) exits with on this tree */
  exitCode: number;
  violations: Violation[];
}

/** Runs the depcruise CLI as `npm run boundaries` does, on the src folder under `cwd`. */
function depcruise(cwd: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [DEPCRUISE, 'src', '--config', CONFIG, '--output-type', 'json'],
      { cwd, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`depcruise failed to run in ${cwd}: ${stderr}`, { cause: error }));
          return;
        }
        const result = JSON.parse(stdout) as ICruiseResult;
        format(result, { outputType: 'err' }).then(({ exitCode }) => {
          resolve({
            exitCode,
            violations: result.summary.violations.map(({ rule, from, to }) => ({
              rule: rule.name,
              severity: rule.severity,
              from,
              to,
            })),
          });
        }, reject);
      },
    );
  });
}

/** Copies src (and what resolution needs) to a temporary directory, plants `files` and cruises it. */
async function cruisePlanted(files: Record<string, string>): Promise<Outcome> {
  const dir = await mkdtemp(join(tmpdir(), 'refhub-boundaries-'));
  try {
    await cp(join(ROOT, 'src'), join(dir, 'src'), { recursive: true });
    await cp(join(ROOT, 'tsconfig.json'), join(dir, 'tsconfig.json'));
    await cp(join(ROOT, 'package.json'), join(dir, 'package.json'));
    await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    return await depcruise(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A planted module's text, one argument per line. */
const source = (...lines: string[]): string => `${lines.join('\n')}\n`;

// One file of each kind the rules forbid. They all go into one copy of src, so that the suite needs
// two cruises, not nine; each case looks for its own violation, and an error-severity violation alone
// makes `npm run boundaries` exit non-zero.
const PLANTS = {
  fileCycle: {
    'src/domain/planted-cycle-a.ts': source(
      "import type { PlantedB } from './planted-cycle-b.ts';",
      "export const PLANTED_A = 'a';",
      'export type PlantedA = PlantedB;',
    ),
    'src/domain/planted-cycle-b.ts': source(
      "import { PLANTED_A } from './planted-cycle-a.ts';",
      'export type PlantedB = typeof PLANTED_A;',
    ),
  },
  // No file cycle here: services/x → queue/x is allowed, and queue/y → services/y closes a folder cycle.
  folderCycle: {
    'src/services/planted-x/uses-queue.ts': source(
      "export { PLANTED_JOB } from '../../queue/planted-x/job.ts';",
    ),
    'src/queue/planted-x/job.ts': source("export const PLANTED_JOB = 'job';"),
    'src/queue/planted-y/reads-service.ts': source(
      "export { PLANTED_RULE } from '../../services/planted-y/rule.ts';",
    ),
    'src/services/planted-y/rule.ts': source("export const PLANTED_RULE = 'rule';"),
  },
  renderToDb: {
    'src/db/planted.repository.ts': source('export interface PlantedRow {', '  id: string;', '}'),
    'src/render/planted.page.ts': source(
      "import type { PlantedRow } from '../db/planted.repository.ts';",
      'export const renderPlanted = (row: PlantedRow): string => row.id;',
    ),
  },
  domainToServiceAndFs: {
    'src/services/planted.service.ts': source(
      'export function createPlantedService(): object {',
      '  return {};',
      '}',
    ),
    'src/domain/planted.ts': source(
      "import { readFileSync } from 'node:fs';",
      "import { createPlantedService } from '../services/planted.service.ts';",
      'export const planted = [readFileSync, createPlantedService];',
    ),
  },
  // The data's one door: the database, a store's construction and the cipher stay behind it.
  serviceHoldsDatabase: {
    'src/services/planted-holder.ts': source(
      "import type { Kysely } from 'kysely';",
      'export type PlantedHandle = Kysely<object>;',
    ),
  },
  serviceBuildsStores: {
    'src/services/planted-builder.ts': source(
      "import { createStores } from '../db/stores.ts';",
      'export const plantedStores = createStores;',
    ),
  },
  routeSealsItself: {
    'src/api/routes/planted-sealing.routes.ts': source(
      "import type { FieldCipher } from '../../domain/data-keys.ts';",
      'export type PlantedSealer = FieldCipher;',
    ),
  },
  routeToContext: {
    'src/api/routes/planted.routes.ts': source(
      "import type { AppContext } from '../../composition/context.ts';",
      'export type PlantedDeps = Pick<AppContext, never>;',
    ),
  },
} satisfies Record<string, Record<string, string>>;

let plantedRun: Promise<Outcome> | undefined;
function planted(): Promise<Outcome> {
  plantedRun ??= cruisePlanted(Object.assign({}, ...Object.values(PLANTS)) as Record<string, string>);
  return plantedRun;
}

const error = (rule: string, from: string, to: string): Violation => ({ rule, severity: 'error', from, to });

// The real tree and the planted copy are cruised side by side.
describe.concurrent('npm run boundaries', () => {
  it('passes on the real tree', async ({ expect }) => {
    const outcome = await depcruise(ROOT);
    expect(outcome.violations).toEqual([]);
    expect(outcome.exitCode).toBe(0);
  });

  it('fails on planted violations', async ({ expect }) => {
    expect((await planted()).exitCode).toBeGreaterThan(0);
  });

  it('fails on a cycle between two files, even through a type-only import', async ({ expect }) => {
    const { violations } = await planted();
    expect(violations).toContainEqual(
      error('no-circular', 'src/domain/planted-cycle-a.ts', 'src/domain/planted-cycle-b.ts'),
    );
  });

  it('fails on a cycle between top-level folders that runs through their subfolders', async ({ expect }) => {
    const { violations } = await planted();
    const fromPlants = violations.filter((v) => v.from in PLANTS.folderCycle);
    expect(fromPlants).toEqual([
      error('no-folder-cycle', 'src/queue/planted-y/reads-service.ts', 'src/services/planted-y/rule.ts'),
    ]);
  });

  it('fails when render imports the store, even for a type', async ({ expect }) => {
    const { violations } = await planted();
    expect(violations).toContainEqual(
      error(
        'render-imports-only-render-and-domain',
        'src/render/planted.page.ts',
        'src/db/planted.repository.ts',
      ),
    );
  });

  it('fails when domain imports a service or node:fs', async ({ expect }) => {
    const { violations } = await planted();
    expect(violations).toContainEqual(
      error('domain-imports-only-domain', 'src/domain/planted.ts', 'src/services/planted.service.ts'),
    );
    expect(violations).toContainEqual(error('domain-does-no-io', 'src/domain/planted.ts', 'fs'));
    expect(violations).toContainEqual(
      error('only-root-constructs-services', 'src/domain/planted.ts', 'src/services/planted.service.ts'),
    );
  });

  it('fails when a service holds the database, even for a type', async ({ expect }) => {
    const { violations } = await planted();
    expect(violations).toContainEqual(
      expect.objectContaining({
        rule: 'database-only-behind-the-stores',
        severity: 'error',
        from: 'src/services/planted-holder.ts',
        to: expect.stringMatching(/(^|\/)node_modules\/kysely\//) as unknown,
      }),
    );
  });

  it('fails when a service builds the stores itself', async ({ expect }) => {
    const { violations } = await planted();
    expect(violations).toContainEqual(
      error('stores-built-only-by-the-root', 'src/services/planted-builder.ts', 'src/db/stores.ts'),
    );
  });

  it('fails when a route names the field cipher, even for a type', async ({ expect }) => {
    const { violations } = await planted();
    expect(violations).toContainEqual(
      error(
        'cipher-only-in-db-and-domain',
        'src/api/routes/planted-sealing.routes.ts',
        'src/domain/data-keys.ts',
      ),
    );
  });

  it('fails when a route reaches the composition root’s context, even for its type', async ({ expect }) => {
    const { violations } = await planted();
    expect(violations).toContainEqual(
      error('context-stays-in-composition', 'src/api/routes/planted.routes.ts', 'src/composition/context.ts'),
    );
  });
});
