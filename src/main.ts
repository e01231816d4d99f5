// The `refhub` command: the service itself and the operator's tools, on one composition root.
import fs from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createContext, openConfiguredStore, type AppContext } from './context.ts';
import { DataDirLockedError } from './db/data-dir-lock.ts';
import { ROLES, type Role } from './domain/statuses.ts';
import { AppError } from './errors.ts';
import { setUpDemo } from './services/demo-setup.ts';
import type { InstitutionRef } from './domain/access.ts';

const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const HOUSEKEEPING_INTERVAL_MS = 15 * 60_000;

function fail(message: string): never {
  process.stderr.write(`refhub: ${message}\n`);
  process.exit(1);
}

/** Runs `work` with a context, closing the store (and the PGlite lock) however it ends. */
async function withContext<T>(command: string, work: (ctx: AppContext) => Promise<T>): Promise<T> {
  const ctx = await createContext(loadConfig(), command);
  try {
    return await work(ctx);
  } finally {
    await ctx.close();
  }
}

function institutionArg(value: string, previous: InstitutionRef[] = []): InstitutionRef[] {
  const [idType, id, ...rest] = value.split(':');
  if (
    idType === undefined ||
    id === undefined ||
    rest.length > 0 ||
    !/^[a-z]+$/.test(idType) ||
    !/^[A-Za-z0-9._-]{1,64}$/.test(id)
  ) {
    throw new InvalidArgumentError('expected idType:id, for example hci:S1234A');
  }
  return [...previous, { idType, id }];
}

function roleArg(value: string): Role {
  if (!(ROLES as readonly string[]).includes(value))
    throw new InvalidArgumentError(`expected ${ROLES.join(', ')}`);
  return value as Role;
}

async function serve(command: 'all' | 'api'): Promise<void> {
  const config: Config = loadConfig();
  if (command === 'api' && config.databaseUrl === undefined) {
    fail('`refhub api` runs against PostgreSQL: set DATABASE_URL. For embedded PGlite, run `refhub all`.');
  }
  const ctx = await createContext(config, `refhub ${command}`);
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    ctx.logger.info({ signal }, 'shutting down');
    stopHousekeeping();
    await app.close();
    await ctx.close();
    process.exit(0);
  };
  let demoKeys;
  if (config.catalogFile !== undefined) {
    const loaded = await ctx.catalog.loadFile(config.catalogFile);
    ctx.logger.info(loaded, 'catalog loaded');
  } else if (config.env !== 'production') {
    demoKeys = await setUpDemo(ctx.db, config.dataDir);
  }
  // Loaded here, so that operator commands do not pay for the HTTP stack.
  const { buildApp } = await import('./api/app.ts');
  const app = await buildApp(ctx);
  const stopHousekeeping = ctx.housekeeping.start(HOUSEKEEPING_INTERVAL_MS);
  process.once('SIGTERM', (s) => void shutdown(s));
  process.once('SIGINT', (s) => void shutdown(s));
  const address = await app.listen({ port: config.port, host: config.host });
  const storeName = ctx.store.engine === 'pglite' ? `embedded PGlite in ${config.dataDir}` : 'PostgreSQL';
  const banner = [
    '',
    `refhub ${pkg.version} is serving ${address} on ${storeName}`,
    `  API docs: ${address}/docs    Links: ${config.publicUrl}/l/…`,
  ];
  if (demoKeys) {
    banner.push(
      '',
      'The demo catalog was loaded. These test keys are shown once (also in demo-keys.txt, mode 600):',
      ...demoKeys.map((k) => `  ${k.label.padEnd(14)} ${k.key}  (${k.description})`),
    );
  }
  process.stdout.write(`${banner.join('\n')}\n\n`);
}

const program = new Command('refhub')
  .description('refhub: referrals between institutions, with a bridge to the national EHR')
  .version(pkg.version);

program
  .command('all')
  .description('run the API in one process (the embedded default; the only mode with PGlite)')
  .action(() => serve('all'));

program
  .command('api')
  .description('run an API process against PostgreSQL (DATABASE_URL); run as many as you need')
  .action(() => serve('api'));

program
  .command('migrate')
  .description('apply pending database migrations')
  .action(async () => {
    const store = await openConfiguredStore(loadConfig(), 'refhub migrate');
    await store.close();
    process.stdout.write('The database schema is up to date.\n');
  });

program
  .command('catalog')
  .description('manage the catalog of systems, institutions and offerings')
  .command('load <file>')
  .description('load a catalog JSON file (an upsert by ID; loading twice changes nothing)')
  .action((file: string) =>
    withContext('refhub catalog load', async (ctx) => {
      const loaded = await ctx.catalog.loadFile(file);
      process.stdout.write(
        `Loaded ${loaded.systems} systems, ${loaded.institutions} institutions and ${loaded.offerings} offerings.\n`,
      );
    }),
  );

const keys = program.command('keys').description('manage API keys');

keys
  .command('create')
  .description('create an API key; the key is printed once, alone on the last line')
  .requiredOption('--system <name>', 'the system that holds the key, for example HAS')
  .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, roleArg)
  .option('--institution <idType:id>', 'an institution the key may act for (repeatable)', institutionArg, [])
  .option('--label <text>', 'a note for operators')
  .option('--environment <env>', 'live or test (default: live in production, else test)')
  .action(
    (options: {
      system: string;
      role: Role;
      institution: InstitutionRef[];
      label?: string;
      environment?: string;
    }) =>
      withContext('refhub keys create', async (ctx) => {
        const environment = options.environment ?? (ctx.config.env === 'production' ? 'live' : 'test');
        if (environment !== 'live' && environment !== 'test')
          throw new InvalidArgumentError('--environment: live or test');
        const { key, record } = await ctx.apiKeys.create({
          system: options.system,
          role: options.role,
          institutions: options.institution,
          label: options.label,
          environment,
        });
        const where = record.institutions.map((i) => `${i.idType}:${i.id}`).join(', ') || 'no institutions';
        process.stdout.write(
          `Created ${record.role} key ${record.id} (${record.prefix}…) for ${record.system}, acting for ${where}.\n`,
        );
        process.stdout.write('Store it now: it is not shown again.\n');
        process.stdout.write(`${key}\n`);
      }),
  );

keys
  .command('list')
  .description('list API keys (never the keys themselves)')
  .action(() =>
    withContext('refhub keys list', async (ctx) => {
      for (const k of await ctx.apiKeys.list()) {
        const where = k.institutions.map((i) => `${i.idType}:${i.id}`).join(',') || '-';
        const state = k.revokedAt === null ? 'active' : `revoked ${k.revokedAt.toISOString()}`;
        process.stdout.write(
          [k.id, `${k.prefix}…`, k.role, k.system, where, state, k.label ?? ''].join('\t') + '\n',
        );
      }
    }),
  );

keys
  .command('revoke <idOrPrefix>')
  .description('revoke a key by its ID or display prefix; it stops working at once')
  .action((idOrPrefix: string) =>
    withContext('refhub keys revoke', async (ctx) => {
      const revoked = await ctx.apiKeys.revoke(idOrPrefix);
      process.stdout.write(`Revoked key ${revoked.id} (${revoked.prefix}…).\n`);
    }),
  );

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (
    error instanceof ConfigError ||
    error instanceof DataDirLockedError ||
    error instanceof InvalidArgumentError
  ) {
    fail(error.message);
  }
  if (error instanceof AppError) {
    const problems = error.errors?.map((e) => `\n  ${e.path}: ${e.message}`).join('') ?? '';
    fail(problems === '' ? error.message : `${error.title}:${problems}`);
  }
  throw error;
}
