// The operator's commands, wired: each opens what its command needs (the context, or only the store,
// Redis or the sandbox), hands the command the few things it uses, and closes what it opened however
// the command ends. main.ts calls these after parsing the command line; the commands themselves are
// in src/cli. Modules only some commands need are loaded by those commands.
import fs from 'node:fs';
import path from 'node:path';
import { dataKeysStatus, rotateDataKeys } from '../cli/data-keys.command.ts';
import { InvalidArgumentError } from 'commander';
import { loadConfig, opsKeyFromEnv, type Config } from '../config.ts';
import { configuredStoreTarget, MIGRATION_NAMES, openStore } from '../db/database.ts';
import { createLogger } from '../logger.ts';
import { postgresQueueBackend, redisQueueBackend } from '../queue/backend.ts';
import { createSandboxEhr } from '../sandbox-ehr/sandbox-ehr.ts';
import type { CreateKeyOptions } from '../cli/api-key.command.ts';
import type { LimitOptions } from '../cli/rate-limit.command.ts';
import {
  adoptAudit,
  exportAudit,
  printPublicKey,
  sealAudit,
  verifyAudit,
  verifyExportFile,
  type AuditExportOptions,
  type AuditPublicKeyOptions,
  type AuditVerifyOptions,
} from '../cli/audit.command.ts';
import { loadCatalog } from '../cli/catalog.command.ts';
import type { CreateClientOptions, KeySourceOptions } from '../cli/client-credentials.command.ts';
import { controlSocketPath, runInServingRefhub, type ControlCommand } from '../cli/control-client.ts';
import { toStdout } from '../cli/output.ts';
import { DataDirLockedError } from '../db/data-dir-lock.ts';
import { CONTROL_RUNS } from './control-socket.ts';
import { retryForwards } from '../cli/forwarding.command.ts';
import { migrate } from '../cli/migrate.command.ts';
import { reconcile } from '../cli/reconcile.command.ts';
import { verifyRetentionArchive } from '../cli/retention.command.ts';
import {
  refuseSandboxInProduction,
  runSandboxEhr,
  type SandboxEhrCommandOptions,
} from '../cli/sandbox-ehr.command.ts';
import { listWebhooks, replayWebhooks, type ReplayOptions } from '../cli/webhooks.command.ts';
import {
  replayLedger,
  searchLedger,
  type LedgerReplayOptions,
  type LedgerSearchOptions,
} from '../cli/ledger-search.command.ts';
import type { Ledger } from '../domain/ledger-search.ts';
import {
  createContext,
  openConfiguredStore,
  pingScanner,
  sealExistingData,
  type AppContext,
} from './context.ts';
import { openDataKeys } from '../db/data-keys/data-keys.repository.ts';
import { createStores } from '../db/stores.ts';
import { createDataKeyRotation } from '../services/data-keys.service.ts';
import { systemClock } from '../domain/clock.ts';
import { keyRingOf } from './key-ring.ts';

/**
 * Runs `work` with a context, closing the store (and the PGlite lock) however it ends. The schema must
 * be current: these commands never migrate (`refhub migrate` does).
 */
async function withContext<T>(command: string, work: (ctx: AppContext) => Promise<T>): Promise<T> {
  const ctx = await createContext(loadConfig(), command);
  try {
    return await work(ctx);
  } finally {
    await ctx.close();
  }
}

/**
 * A command an operator needs while refhub serves (cli/control-client.ts). It runs here, in a context
 * of its own; but where `refhub all` holds embedded PGlite's DATA_DIR, the serving process runs it
 * (composition/control-socket.ts) and this one prints its answer.
 */
async function inContextOrServingRefhub(command: ControlCommand, args: readonly unknown[]): Promise<void> {
  const config = loadConfig();
  let ctx: AppContext;
  try {
    ctx = await createContext(config, `refhub ${command}`);
  } catch (error) {
    const socket = controlSocketPath(config.dataDir);
    if (!(error instanceof DataDirLockedError) || !fs.existsSync(socket)) throw error;
    process.stdout.write(await runInServingRefhub(socket, { command, args }));
    return;
  }
  try {
    await CONTROL_RUNS[command](ctx, toStdout, args);
  } finally {
    await ctx.close();
  }
}

export function forwardsRetryCommand(referralIds: string[], options: { allFailed?: boolean }): Promise<void> {
  return withContext('refhub forwards retry', (ctx) => retryForwards(ctx, referralIds, options));
}

export function webhooksListCommand(): Promise<void> {
  return withContext('refhub webhooks list', (ctx) =>
    listWebhooks({
      allSubscriptions: () => ctx.stores.webhooks.subscriptions.all(),
      displayTime: ctx.displayTime,
    }),
  );
}

export function webhooksReplayCommand(options: ReplayOptions): Promise<void> {
  return withContext('refhub webhooks replay', (ctx) => replayWebhooks(ctx, options));
}

export function ledgerSearchCommand(ledger: Ledger, options: LedgerSearchOptions): Promise<void> {
  return withContext('refhub ledger search', (ctx) => searchLedger(ctx, ledger, options));
}

export async function ledgerReplayCommand(ledger: Ledger, options: LedgerReplayOptions): Promise<void> {
  await withContext('refhub ledger replay', (ctx) => replayLedger(ctx, ledger, options));
}

/**
 * The doctor opens nothing for long and migrates nothing: it gets openers, and a silent logger. With
 * `--server` it asks that refhub instead, and needs no valid settings in this shell.
 */
export async function doctorCommand(options: { server?: string; opsKey?: string } = {}): Promise<void> {
  const { doctor, doctorServer } = await import('../cli/doctor.command.ts');
  if (options.server !== undefined) {
    let shell: Config | undefined;
    try {
      shell = loadConfig();
    } catch {
      shell = undefined;
    }
    return doctorServer(options.server, options.opsKey ?? opsKeyFromEnv(), shell);
  }
  const config = loadConfig();
  const logger = createLogger({ ...config, logLevel: 'silent' });
  await doctor({
    config,
    openStore: () => openStore(configuredStoreTarget(config, 'refhub doctor', { poolSize: 1 })),
    checkQueues: async (store) => {
      const { notChecked, queuesCheck } = await import('../services/doctor-checks.ts');
      if (config.queueBackend === 'postgres' && store === undefined) {
        return notChecked(
          'queues',
          'QUEUE_BACKEND=postgres: the queues are in the database, which could not be opened',
        );
      }
      const backend =
        store === undefined || config.queueBackend === 'redis'
          ? redisQueueBackend(config, 'producer', logger)
          : postgresQueueBackend(store.queueDatabase(), logger);
      try {
        return queuesCheck(backend, await backend.health());
      } finally {
        await backend.close();
      }
    },
    pingScanner,
  });
}

export function reconcileCommand(): Promise<void> {
  return withContext('refhub reconcile', async (ctx) => {
    const { createReconcilerFor } = await import('./background.ts');
    await reconcile({
      reconciler: createReconcilerFor(ctx),
      scansAttachments: ctx.config.attachmentScanner !== undefined,
    });
  });
}

export function retentionRunCommand(): Promise<void> {
  return inContextOrServingRefhub('retention run', []);
}

/** Needs no database and no settings: an archive is checked by its own manifest. */
export function retentionVerifyCommand(archive: string): Promise<void> {
  return verifyRetentionArchive(archive);
}

/** The one operator's command that changes the schema; the serving modes migrate as they start. */
export function migrateCommand(): Promise<void> {
  return migrate({
    known: MIGRATION_NAMES.length,
    migrate: async (progress) => {
      const config = loadConfig();
      const store = await openConfiguredStore(config, 'refhub migrate', { migrate: progress });
      try {
        const dataKeys = openDataKeys(keyRingOf(config), {
          refreshMs: config.dataKeyRefreshSeconds * 1000,
        });
        const rotation = createDataKeyRotation({
          stores: createStores(store.db, dataKeys),
          clock: systemClock,
        });
        const sealed = await sealExistingData(rotation, createLogger({ ...config, logLevel: 'warn' }));
        if (sealed > 0) progress.sealed(sealed);
      } finally {
        await store.close();
      }
    },
  });
}

export function catalogLoadCommand(file: string): Promise<void> {
  return withContext('refhub catalog load', (ctx) => loadCatalog(ctx, file));
}

export function keysCreateCommand(options: CreateKeyOptions): Promise<void> {
  return inContextOrServingRefhub('keys create', [options]);
}

export function keysListCommand(): Promise<void> {
  return inContextOrServingRefhub('keys list', []);
}

export function keysRevokeCommand(idOrPrefix: string): Promise<void> {
  return inContextOrServingRefhub('keys revoke', [idOrPrefix]);
}

export function keysLimitCommand(idOrPrefix: string, options: LimitOptions): Promise<void> {
  return inContextOrServingRefhub('keys limit', [idOrPrefix, options]);
}

export function dataKeysStatusCommand(): Promise<void> {
  return withContext('refhub data-keys status', (ctx) => dataKeysStatus(ctx));
}

export function dataKeysRotateCommand(): Promise<void> {
  return withContext('refhub data-keys rotate', (ctx) => rotateDataKeys(ctx));
}

export function retentionReferralsCommand(): Promise<void> {
  return inContextOrServingRefhub('retention referrals', []);
}

export function auditSealCommand(): Promise<void> {
  return withContext('refhub audit seal', (ctx) => sealAudit(ctx));
}

export function auditAdoptCommand(): Promise<void> {
  return withContext('refhub audit adopt', (ctx) => adoptAudit(ctx));
}

/** With `--file`, an export is checked alone: no settings, no database. */
export async function auditVerifyCommand(options: AuditVerifyOptions): Promise<void> {
  if (options.file !== undefined) {
    if (options.since !== undefined)
      throw new InvalidArgumentError('--since is for the trail in the database; an export is checked whole');
    return verifyExportFile(options);
  }
  return withContext('refhub audit verify', (ctx) => verifyAudit(ctx, options));
}

/** Needs only the settings: the public key is the half of AUDIT_SIGNING_KEY that may be shown. */
export async function auditPublicKeyCommand(options: AuditPublicKeyOptions): Promise<void> {
  const config = loadConfig();
  printPublicKey(config.auditSigningKey, config.auditPublicKeys, options);
  return Promise.resolve();
}

export function auditExportCommand(options: AuditExportOptions): Promise<void> {
  return withContext('refhub audit export', (ctx) => exportAudit(ctx, options));
}

/** A file the command reads is named from here: the serving refhub may have another working directory. */
const fromHere = <T extends KeySourceOptions>(options: T): T =>
  options.jwkFile === undefined ? options : { ...options, jwkFile: path.resolve(options.jwkFile) };

export function clientsCreateCommand(options: CreateClientOptions): Promise<void> {
  return inContextOrServingRefhub('clients create', [fromHere(options)]);
}

export function clientsListCommand(): Promise<void> {
  return inContextOrServingRefhub('clients list', []);
}

export function clientsKeysCommand(id: string, options: KeySourceOptions): Promise<void> {
  return inContextOrServingRefhub('clients keys', [id, fromHere(options)]);
}

export function clientsRevokeCommand(id: string): Promise<void> {
  return inContextOrServingRefhub('clients revoke', [id]);
}

export function clientsLimitCommand(id: string, options: LimitOptions): Promise<void> {
  return inContextOrServingRefhub('clients limit', [id, options]);
}

/** `refhub sandbox-ehr`; the in-process tests call it too. Refuses in production before building. */
export async function serveSandboxEhr(config: Config, options: SandboxEhrCommandOptions): Promise<void> {
  refuseSandboxInProduction(config);
  const logger = createLogger(config, process.stderr).child({ component: 'sandbox-ehr' });
  const token = options.token ?? config.ehrToken;
  await runSandboxEhr(
    { sandbox: createSandboxEhr({ token, logger }), logger, bearerToken: token !== undefined },
    options,
  );
}

export function sandboxEhrCommand(options: SandboxEhrCommandOptions): Promise<void> {
  return serveSandboxEhr(loadConfig(), options);
}
