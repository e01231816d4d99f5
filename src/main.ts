// The `refhub` command: the service itself and the operator's tools, on one composition root.
import fs from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { v7 as uuidv7 } from 'uuid';
import { checkEhrAddress, ConfigError, loadConfig, type Config } from './config.ts';
import { createContext, openConfiguredStore, type AppContext } from './composition/context.ts';
import { DataDirLockedError } from './db/data-dir-lock.ts';
import { ROLES, type Role } from './domain/statuses.ts';
import {
  portArg,
  SANDBOX_DEFAULT_PORT,
  serveSandboxEhr,
  tokenArg,
} from './sandbox-ehr/sandbox-ehr-command.ts';
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

type ServeCommand = 'all' | 'api' | 'worker';

/** How long a stopping API process keeps its listener open while load balancers take it out. */
function drainMs(graceSeconds: number): number {
  return Math.min(2_000, (graceSeconds * 1000) / 4);
}

/** Where forms go: EHR_URL, or (never in production) the sandbox EHR, started in this process. */
async function ehrTarget(ctx: AppContext): Promise<{ url: string; close: () => Promise<void> }> {
  if (ctx.config.ehrUrl !== undefined) return { url: ctx.config.ehrUrl, close: () => Promise.resolve() };
  const { createSandboxEhr } = await import('./sandbox-ehr/sandbox-ehr.ts');
  const sandbox = await createSandboxEhr({
    token: ctx.config.ehrToken,
    logger: ctx.logger.child({ component: 'sandbox-ehr' }),
  }).listen({ port: 0, host: '127.0.0.1' });
  ctx.logger.warn({ url: sandbox.url }, 'EHR_URL is unset: forms go to the in-process sandbox EHR');
  return sandbox;
}

async function serve(command: ServeCommand): Promise<void> {
  const config: Config = loadConfig();
  if (command !== 'all' && config.databaseUrl === undefined) {
    fail(
      `\`refhub ${command}\` runs against PostgreSQL: set DATABASE_URL. For embedded PGlite, run \`refhub all\`.`,
    );
  }
  const withApi = command !== 'worker';
  const withBackground = command !== 'api';
  if (withBackground) await checkEhrAddress(config);
  const ctx = await createContext(config, `refhub ${command}`);
  let demoKeys;
  if (config.catalogFile !== undefined) {
    const loaded = await ctx.catalog.loadFile(config.catalogFile);
    ctx.logger.info(loaded, 'catalog loaded');
  } else if (config.env !== 'production' && withApi) {
    demoKeys = await setUpDemo(ctx.db, config.dataDir);
  }
  const redis = await ctx.queues.health();
  if (redis.problem !== undefined)
    ctx.logger.error({ check: 'redis' }, `${redis.problem}; /readyz fails until it is fixed`);

  const ehr = withBackground ? await ehrTarget(ctx) : undefined;
  const { startBackground } = await import('./composition/background.ts');
  const background = ehr === undefined ? undefined : startBackground(ctx, { ehrUrl: ehr.url });
  // Loaded here, so that operator commands do not pay for the HTTP stack. A worker serves only its
  // health checks and metrics.
  const app = withApi
    ? await (await import('./api/app.ts')).buildApp(ctx)
    : await (await import('./api/ops-app.ts')).buildOpsApp(ctx);
  const stopHousekeeping = withApi ? ctx.housekeeping.start(HOUSEKEEPING_INTERVAL_MS) : () => undefined;

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    ctx.logger.info({ signal, graceSeconds: config.shutdownGraceSeconds }, 'shutting down');
    const deadline = setTimeout(() => {
      ctx.logger.error('the shutdown grace period ran out; stopping with work unfinished');
      ctx.logger.flush();
      process.exit(1);
    }, config.shutdownGraceSeconds * 1000);
    deadline.unref();
    stopHousekeeping();
    // First /readyz says "draining", and the listener stays open a moment, so that a load balancer
    // stops sending requests and the ones already on their way are read. Closing the listener at once
    // would reset a connection whose request had not been read yet. Then no new connections; the
    // requests in flight finish; active jobs finish (worker.close()); the relay and the reconciler
    // stop; the pools close.
    ctx.lifecycle.draining = true;
    if (withApi) await new Promise((resolve) => setTimeout(resolve, drainMs(config.shutdownGraceSeconds)));
    await app.close();
    await background?.stop();
    await ehr?.close();
    await ctx.close();
    ctx.logger.info('stopped');
    ctx.logger.flush(() => process.exit(0));
  };
  process.on('SIGTERM', (s) => void shutdown(s));
  process.on('SIGINT', (s) => void shutdown(s));

  const storeName = ctx.store.engine === 'pglite' ? `embedded PGlite in ${config.dataDir}` : 'PostgreSQL';
  const address = await app.listen({ port: config.port, host: config.host });
  const banner = [''];
  if (withApi) {
    banner.push(
      `refhub ${pkg.version} is serving ${address} on ${storeName}`,
      `  API docs: ${address}/docs    Links: ${config.publicUrl}/l/…    Queues: ${address}/admin`,
    );
  } else {
    banner.push(`refhub ${pkg.version} worker is running on ${storeName}; health and metrics at ${address}`);
  }
  if (ehr !== undefined)
    banner.push(`  Forms go to ${config.ehrUrl === undefined ? 'the sandbox EHR' : 'the EHR'} at ${ehr.url}`);
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
  .description('run the API, the outbox relay and the workers in one process (the only mode with PGlite)')
  .action(() => serve('all'));

program
  .command('api')
  .description('run an API process against PostgreSQL (DATABASE_URL); run as many as you need')
  .action(() => serve('api'));

program
  .command('worker')
  .description(
    'run the outbox relay, the workers and the reconciler against PostgreSQL; run as many as you need',
  )
  .action(() => serve('worker'));

program
  .command('forwards')
  .description('manage forwards to the EHR')
  .command('retry [referralIds...]')
  .description(
    'forward failed referrals again, after fixing the cause (each ID, or every failed one with --all-failed)',
  )
  .option('--all-failed', 'retry every failed forward')
  .action((referralIds: string[], options: { allFailed?: boolean }) =>
    withContext('refhub forwards retry', async (ctx) => {
      if ((referralIds.length === 0) === (options.allFailed !== true)) {
        throw new InvalidArgumentError('name referral IDs, or pass --all-failed (not both)');
      }
      const bad = referralIds.filter(
        (id) => !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id),
      );
      if (bad.length > 0) throw new InvalidArgumentError(`not referral IDs: ${bad.join(', ')}`);
      const requeued = await ctx.ehrForwarding.retryFailed(
        options.allFailed === true ? undefined : referralIds,
        `ops.retry.${uuidv7()}`,
      );
      const skipped = referralIds.filter((id) => !requeued.includes(id));
      process.stdout.write(`Queued ${requeued.length} failed forwards again.\n`);
      if (skipped.length > 0)
        process.stdout.write(`Not failed, so left as they are: ${skipped.join(', ')}\n`);
    }),
  );

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function uuidArg(what: string) {
  return (value: string): string => {
    if (!UUID.test(value)) throw new InvalidArgumentError(`expected ${what} (a UUID)`);
    return value.toLowerCase();
  };
}

function instantArg(value: string): Date {
  const at = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(at.getTime())) {
    throw new InvalidArgumentError('expected an ISO 8601 time, for example 2026-06-04T03:00:00Z');
  }
  return at;
}

const webhooks = program.command('webhooks').description('watch and replay webhook deliveries');

webhooks
  .command('list')
  .description('list webhook subscriptions: ID, institution, state and since when they fail (no secrets)')
  .action(() =>
    withContext('refhub webhooks list', async (ctx) => {
      const { webhookSubscriptionRepository } = await import('./db/webhook-subscription.repository.ts');
      for (const s of await webhookSubscriptionRepository(ctx.db).all()) {
        const state =
          s.disabledAt === null
            ? 'enabled'
            : `disabled (${s.disabledReason ?? 'by-institution'}) ${s.disabledAt.toISOString()}`;
        const failing = s.failingSince === null ? '' : `failing since ${s.failingSince.toISOString()}`;
        process.stdout.write(
          [s.id, `${s.institution.idType}:${s.institution.id}`, state, failing, new URL(s.url).host].join(
            '\t',
          ) + '\n',
        );
      }
    }),
  );

webhooks
  .command('replay')
  .description(
    'deliver one event again (--event), or every event since a time (--since), to its subscriptions',
  )
  .option('--event <eventId>', 'the event to deliver again', uuidArg('an event ID'))
  .option('--since <time>', 'every event that occurred at or after this time', instantArg)
  .option('--subscription <subscriptionId>', 'only to this subscription', uuidArg('a subscription ID'))
  .action((options: { event?: string; since?: Date; subscription?: string }) =>
    withContext('refhub webhooks replay', async (ctx) => {
      if ((options.event === undefined) === (options.since === undefined)) {
        throw new InvalidArgumentError('name an event with --event, or a time with --since (not both)');
      }
      const result =
        options.event === undefined
          ? await ctx.webhookReplay.replaySince(options.since ?? new Date(), options.subscription)
          : await ctx.webhookReplay.replayEvent(options.event, options.subscription);
      process.stdout.write(
        `Queued ${result.deliveries} deliveries of ${result.events} events again; receivers see each event's own webhook-id.\n`,
      );
    }),
  );

program
  .command('doctor')
  .description(
    'check the database, migrations, durability settings, Redis and the EHR URL; exit 1 if one fails',
  )
  .action(async () => {
    const config = loadConfig();
    const { runDoctor } = await import('./observability/doctor.ts');
    const { createLogger } = await import('./logger.ts');
    const checks = await runDoctor(config, createLogger({ ...config, logLevel: 'silent' }));
    const width = Math.max(...checks.map((c) => c.name.length));
    for (const c of checks) {
      process.stdout.write(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(width)}  ${c.detail}\n`);
    }
    const failed = checks.filter((c) => !c.ok).length;
    process.stdout.write(failed === 0 ? 'Every check passed.\n' : `${failed} check(s) failed.\n`);
    process.exitCode = failed === 0 ? 0 : 1;
  });

program
  .command('reconcile')
  .description('re-enqueue due forwards that have no live job and rebuild missing reminder schedules, once')
  .action(() =>
    withContext('refhub reconcile', async (ctx) => {
      const { createReconcilerFor } = await import('./composition/background.ts');
      const repairs = await createReconcilerFor(ctx).reconcileOnce();
      process.stdout.write(
        `Re-enqueued ${repairs.forwardsRequeued} forwards and rebuilt ${repairs.schedulersRebuilt} reminder schedules.\n`,
      );
    }),
  );

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

program
  .command('sandbox-ehr')
  .description(
    'run the sandbox EHR, a stand-in for the national EHR that records deliveries (not in production)',
  )
  .option('--port <n>', 'port to listen on; 0 picks a free one', portArg, SANDBOX_DEFAULT_PORT)
  .option('--host <host>', 'address to listen on', '127.0.0.1')
  .option('--token <token>', 'require Authorization: Bearer <token> (default: EHR_TOKEN)', tokenArg)
  .action((options: { port: number; host: string; token?: string }) =>
    serveSandboxEhr(loadConfig(), options),
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
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
    const { address, port } = error as { address?: string; port?: number };
    fail(`cannot listen on ${address ?? 'HOST'}:${port ?? 'PORT'} (${code}); set PORT or HOST`);
  }
  if (error instanceof AppError) {
    const problems = error.errors?.map((e) => `\n  ${e.path}: ${e.message}`).join('') ?? '';
    fail(problems === '' ? error.message : `${error.title}:${problems}`);
  }
  throw error;
}
