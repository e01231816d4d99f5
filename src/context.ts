// The composition root: the one place that builds the logger, the store, the clock and the services
// and wires them together. Tests swap real seams (a clock, a store on a test database, a log stream)
// through `overrides`; nothing else holds module-level state.
import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import { systemClock, type Clock } from './domain/clock.ts';
import { migrateToLatest, openStore, type Store } from './db/database.ts';
import type { Database } from './db/schema.ts';
import { createLogger, type Logger } from './logger.ts';
import { renderEhrForm } from './render/ehr-form.ts';
import { createApiKeyService, type ApiKeyService } from './services/api-key.service.ts';
import { createCatalogService, type CatalogService } from './services/catalog.service.ts';
import { createHousekeeping, type Housekeeping } from './services/housekeeping.service.ts';
import { createLinkMinter, type LinkMinter } from './services/link-minter.ts';
import { createLinkService, type LinkService } from './services/link.service.ts';
import { createReferralCommands, type ReferralCommands } from './services/referral-commands.ts';
import { createReferralQueries, type ReferralQueries } from './services/referral-queries.ts';

export interface AppContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly store: Store;
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly linkMinter: LinkMinter;
  readonly referralQueries: ReferralQueries;
  readonly referralCommands: ReferralCommands;
  readonly links: LinkService;
  readonly apiKeys: ApiKeyService;
  readonly catalog: CatalogService;
  readonly housekeeping: Housekeeping;
  close(): Promise<void>;
}

export interface ContextOverrides {
  readonly store?: Store;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** Opens the store for `command` (PGlite holds DATA_DIR for this process), and migrates it. */
export async function openConfiguredStore(config: Config, command: string): Promise<Store> {
  const store = await openStore(
    config.databaseUrl === undefined
      ? { engine: 'pglite', dataDir: config.dataDir, command }
      : { engine: 'postgres', url: config.databaseUrl },
  );
  try {
    await migrateToLatest(store.db);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

export async function createContext(
  config: Config,
  command: string,
  overrides: ContextOverrides = {},
): Promise<AppContext> {
  const logger = overrides.logger ?? createLogger(config);
  const clock = overrides.clock ?? systemClock;
  const store = overrides.store ?? (await openConfiguredStore(config, command));
  const db = store.db;
  const linkMinter = createLinkMinter({
    publicUrl: config.publicUrl,
    ttlSeconds: config.linkTtlSeconds,
    clock,
  });
  const deps = { db, clock, links: linkMinter };
  return {
    config,
    logger,
    store,
    db,
    clock,
    linkMinter,
    referralQueries: createReferralQueries({ ...deps, renderEhrForm }),
    referralCommands: createReferralCommands(deps),
    links: createLinkService(deps),
    apiKeys: createApiKeyService({ db, clock }),
    catalog: createCatalogService({ db }),
    housekeeping: createHousekeeping({ db, clock, logger }),
    close: () => store.close(),
  };
}
