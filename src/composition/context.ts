// The composition root: the one place that builds the logger, the store, the clock and the services
// and wires them together. Tests swap real seams (a clock, a store on a test database, a log stream)
// through `overrides`; nothing else holds module-level state.
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import { systemClock, type Clock } from '../domain/clock.ts';
import { displayTimeIn, type DisplayTime } from '../domain/display-time.ts';
import {
  configuredStoreTarget,
  MIGRATION_NAMES,
  migrateToLatest,
  openStore,
  pendingMigrations,
  ping,
  type MigrationProgress,
  type Store,
} from '../db/database.ts';
import { MigrationFailedError, SchemaBehindError, storeUnavailable } from '../db/store-failure.ts';
import type { Database } from '../db/schema.ts';
import type { EhrFormSource } from '../domain/referral-view.ts';
import { createLogger, type Logger } from '../logger.ts';
import { renderEhrForm, type RenderedEhrForm } from '../render/ehr-form.ts';
import { createApiKeyService, type ApiKeyService } from '../services/api-key.service.ts';
import {
  createClientCredentials,
  type ClientCredentials,
} from '../services/client-credentials/client-credentials.service.ts';
import { createJwksFetcher } from '../services/client-credentials/jwks-fetch.ts';
import { createAuditChain, type AuditChain } from '../services/audit/audit-chain.service.ts';
import { TOKEN_PATH } from '../domain/client-credentials.ts';
import { createCatalogService, type CatalogService } from '../services/catalog/catalog.service.ts';
import { createHousekeeping, type Housekeeping } from '../services/housekeeping.service.ts';
import {
  createRetention,
  RETENTION_MONTHS_AHEAD,
  type Retention,
  type RetentionSettings,
} from '../services/retention/retention.service.ts';
import { archiveStaleReferrals } from '../services/retention/referrals-archive.ts';
import { createLinkMinter, type LinkMinter } from '../services/links/minter.ts';
import { createLinkService, type LinkService } from '../services/links/links.service.ts';
import { createLinkRedemption, type LinkRedemption } from '../services/links/redemption.service.ts';
import { createReferralCommands, type ReferralCommands } from '../services/referrals/commands.ts';
import { createReferralQueries, type ReferralQueries } from '../services/referrals/queries.ts';
import { createEhrForwarding, type EhrForwarding } from '../services/forwarding.service.ts';
import { createReminders, type Reminders } from '../services/reminders.service.ts';
import { createTriageOverdue, type TriageOverdue } from '../services/triage-overdue.service.ts';
import { createIncidents, type Incidents, type OpsWebhook } from '../services/incidents.service.ts';
import { createWaitTimes, type WaitTimes } from '../services/wait-times.service.ts';
import {
  createRateLimits,
  createRateLimitSettings,
  type RateLimits,
  type RateLimitSettings,
} from '../services/rate-limits.service.ts';
import { createEventFeed, type EventFeed } from '../services/events.service.ts';
import { createWebhookClient, type WebhookClient } from '../workers/webhooks/webhooks-client.ts';
import { deliverOnce, type DeliveryDeps } from '../workers/webhooks/delivery.ts';
import { createWebhookReplay, type WebhookReplay } from '../services/webhooks/replay.service.ts';
import { createLedgerSearch, type LedgerSearch } from '../services/ledger-search.service.ts';
import {
  createWebhookSubscriptions,
  type WebhookSubscriptions,
} from '../services/webhooks/webhooks.service.ts';
import {
  migrateQueues,
  postgresQueueBackend,
  redisQueueBackend,
  type QueueBackend,
} from '../queue/backend.ts';
import type { ConnectionRole } from '../queue/connections.ts';
import { createQueueProducer, type QueueProducer } from '../queue/producer.ts';
import { redisRateLimitBuckets } from '../queue/rate-limits.ts';
import { claimLeaseMs } from '../queue/prefix-claim.ts';
import { createMetrics, type Metrics } from '../observability/metrics.ts';
import { QUEUE_NAMES } from '../queue/registry.ts';
import { createReferralFhir, type ReferralFhir } from '../services/fhir.service.ts';
import { createAttachments, type Attachments } from '../services/attachments/attachments.service.ts';
import { createPdfChecker } from '../services/attachments/pdf.ts';
import { SCANNER_PING_TIMEOUT_MS, type ScannerPing } from '../services/doctor-checks.ts';
import { createClamdClient } from '../workers/attachments/clamd-client.ts';
import { parseClamdAddress } from '../domain/attachments.ts';
import { openDataKeys, type DataKeys, type DataKeysOptions } from '../db/data-keys/data-keys.repository.ts';
import { keyRingOf } from './key-ring.ts';
import { createDataKeyRotation, type DataKeyRotation } from '../services/data-keys.service.ts';
import { createAccessReport, type AccessReport } from '../services/audit/access-report.service.ts';
import { createStores, type Stores } from '../db/stores.ts';

export interface AppContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly store: Store;
  readonly db: Kysely<Database>;
  /** The capability-named stores: the one door to the data (db/stores.ts). */
  readonly stores: Stores;
  /** The keys patient data is sealed and opened with. */
  readonly dataKeys: DataKeys;
  /** Rotates the data keys and seals again what is not under the newest (`refhub data-keys`). */
  readonly dataKeyRotation: DataKeyRotation;
  readonly clock: Clock;
  /** Times people read (the EHR form, the web pages, timeline sentences), in DISPLAY_TIME_ZONE. */
  readonly displayTime: DisplayTime;
  /**
   * The EHR form in the installation's display zone. Whatever renders the form (a GET, the
   * forwarder) must use this one, so that one referral version always gives the same bytes.
   */
  readonly renderEhrForm: (source: EhrFormSource) => RenderedEhrForm;
  readonly linkMinter: LinkMinter;
  readonly referralQueries: ReferralQueries;
  readonly referralCommands: ReferralCommands;
  /** The FHIR R4 view of a referral. */
  readonly referralFhir: ReferralFhir;
  readonly attachments: Attachments;
  readonly links: LinkService;
  readonly linkRedemption: LinkRedemption;
  readonly apiKeys: ApiKeyService;
  readonly clientCredentials: ClientCredentials;
  readonly auditChain: AuditChain;
  readonly catalog: CatalogService;
  readonly housekeeping: Housekeeping;
  /** The month partitions kept ahead, and aged months archived and dropped (`refhub retention run`, the job). */
  readonly retention: Retention;
  readonly ehrForwarding: EhrForwarding;
  readonly reminders: Reminders;
  /** Says, once per due time, that a referral's triage is overdue. */
  readonly triageOverdue: TriageOverdue;
  /** The conditions an operator must act on: incidents opened and resolved, and the ops webhooks. */
  readonly incidents: Incidents;
  /** The offerings' wait times: recomputed by the wait-times job, read by the API and the web form. */
  readonly waitTimes: WaitTimes;
  /**
   * Each client's rate limit, its buckets where the queues are (Redis, or the database), shared by
   * every API process.
   */
  readonly rateLimits: RateLimits;
  /** The operator's changes of a client's own rate limit (`refhub keys limit`, `refhub clients limit`). */
  readonly rateLimitSettings: RateLimitSettings;
  /** Each institution's referral events in one total order. */
  readonly eventFeed: EventFeed;
  readonly webhookSubscriptions: WebhookSubscriptions;
  /** A patient's access report: who read or changed the patient's referrals. */
  readonly accessReport: AccessReport;
  /** What a webhook delivery needs (the HTTP client is opened on first use). */
  readonly webhookDelivery: () => DeliveryDeps;
  /** An operator's replay of webhook deliveries (enqueues at once: the queues must be reachable). */
  readonly webhookReplay: WebhookReplay;
  /** An operator's search, export and replay of the forwards' ledger and the webhook deliveries. */
  readonly ledgerSearch: LedgerSearch;
  /** The queue producer, made on first use (operator commands that add no jobs never reach the queues). */
  readonly queues: QueueProducer;
  /** This installation's ID, kept in its database (made on first use). */
  installationId(): Promise<string>;
  /**
   * A new backend of the queues (QUEUE_BACKEND) for producers or for workers: `refhub worker` and
   * `refhub all` make one for their workers and close it as they stop.
   */
  queueBackend(role: ConnectionRole): QueueBackend;
  /**
   * Claims the queues for this installation (queue/backend.ts): anything that runs or adds queue
   * work does it first, and refuses to go on when another installation holds them.
   */
  claimQueues(): Promise<void>;
  /** Gives the claim back (an embedded installation, which is one process, as it stops). */
  releaseQueues(): Promise<void>;
  /** This process's Prometheus metrics. */
  readonly metrics: Metrics;
  /** Asks clamd at an address for PONG, for the doctor's scanner check (`GET /doctor`). */
  readonly pingScanner: ScannerPing;
  /** Set when the process begins to stop: readiness fails, so load balancers stop sending requests. */
  readonly lifecycle: { draining: boolean };
  close(): Promise<void>;
}

/** Asks clamd for PONG over a connection of its own: the doctor's scanner check. */
export const pingScanner: ScannerPing = (settings) => createClamdClient(settings).ping();

export interface ContextOverrides {
  readonly store?: Store;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** How the data keys are looked up again (a test shortens the refresh interval). */
  readonly dataKeys?: DataKeysOptions;
}

/**
 * What opening the store does to its schema. Only `refhub migrate` and the serving modes (`all`, `api`,
 * `worker`, which log it) change the schema: they pass `migrate`. Every other command needs the
 * schema `current` and refuses, in one line, to run on one with migrations pending.
 */
export type SchemaUse = { readonly migrate: MigrationProgress } | 'current';

/**
 * Opens the store for `command` (PGlite holds DATA_DIR for this process), asks it once, and migrates
 * it or checks that it is migrated. Every command that uses the store opens it here, so a database
 * that is missing, unreachable or refuses the user stops each of them with the same one line and what
 * to do (StoreUnavailableError), never with a driver's stack.
 */
export async function openConfiguredStore(
  config: Config,
  command: string,
  schema: SchemaUse,
): Promise<Store> {
  const target = configuredStoreTarget(config, command, {
    preparedStatements: config.databasePreparedStatements,
  });
  let store: Store | undefined;
  try {
    store = await openStore(target);
    // node-postgres connects on the first statement: one here turns a wrong DATABASE_URL into the
    // reason, before any work starts.
    await ping(store.db);
  } catch (error) {
    await store?.close();
    throw storeUnavailable(error, target) ?? error;
  }
  try {
    if (schema === 'current') {
      const pending = await pendingMigrations(store.db);
      if (pending.length > 0) throw new SchemaBehindError(pending, MIGRATION_NAMES.length);
    } else {
      await migrateToLatest(store.db, schema.migrate, target);
    }
  } catch (error) {
    await store.close();
    const ours = error instanceof SchemaBehindError || error instanceof MigrationFailedError;
    throw ours ? error : (storeUnavailable(error, target) ?? error);
  }
  return store;
}

/** A serving process's migrations, in its log: each one as it starts and ends, then the total. */
async function openServingStore(config: Config, command: string, logger: Logger): Promise<Store> {
  let applied = 0;
  const store = await openConfiguredStore(config, command, {
    migrate: {
      started: (migration) => {
        logger.info({ migration }, 'migration started');
      },
      finished: (migration, ms) => {
        applied += 1;
        logger.info({ migration, ms: Math.round(ms) }, 'migration finished');
      },
    },
  });
  if (applied > 0) logger.info({ migrations: applied }, 'database schema migrated');
  return store;
}

/**
 * Seals the patient data written before field encryption, once, after migrating (the serving modes as
 * they start, and `refhub migrate`): the first data key is made then, and everything found in the
 * clear is sealed under it, in batches (interrupted, the next start goes on). A migration that leaves
 * values to seal marks the active key unswept again (0018 does, for the referrals' columns now sealed
 * together; 0019, for the timeline's sentences), which runs this sweep once more while there is one
 * fields key. A rotation
 * left unfinished is not resumed here, which could hold a start for long, and with more than one
 * fields key a start cannot tell such a migration's mark from one: it names the key, with what
 * finishes it. Returns the rows sealed.
 */
export async function sealExistingData(
  rotation: DataKeyRotation,
  logger: Pick<Logger, 'info' | 'warn'>,
): Promise<number> {
  const pending = await rotation.pending();
  if (pending === undefined) return 0;
  if (!pending.first) {
    logger.warn(
      { dataKey: pending.keyId },
      'values not sealed under the active data key remain (a rotation left unfinished, or values an ' +
        'upgrade left to seal): they still open, and `refhub data-keys rotate` seals them',
    );
    return 0;
  }
  const { sealed } = await rotation.sweep(({ table, done, total }) => {
    logger.info({ table, done, total }, 'sealing patient data written before field encryption');
  });
  if (sealed > 0) logger.info({ rows: sealed }, 'patient data sealed');
  return sealed;
}

/**
 * Builds the context for `command`. `schema: 'migrate'` (the serving modes only) applies pending
 * migrations and logs them; otherwise a schema with migrations pending is refused.
 */
export async function createContext(
  config: Config,
  command: string,
  overrides: ContextOverrides = {},
  schema: 'migrate' | 'current' = 'current',
): Promise<AppContext> {
  const logger = overrides.logger ?? createLogger(config);
  const clock = overrides.clock ?? systemClock;
  const store =
    overrides.store ??
    (schema === 'migrate'
      ? await openServingStore(config, command, logger)
      : await openConfiguredStore(config, command, 'current'));
  const db = store.db;
  const metrics = createMetrics();
  const dataKeys = openDataKeys(keyRingOf(config), {
    refreshMs: config.dataKeyRefreshSeconds * 1000,
    onLoad: () => {
      metrics.dataKeysLoaded();
    },
    ...overrides.dataKeys,
  });
  const stores = createStores(db, dataKeys);
  const dataKeyRotation = createDataKeyRotation({ stores, clock });
  if (schema === 'migrate') await sealExistingData(dataKeyRotation, logger);
  const linkMinter = createLinkMinter({
    publicUrl: config.publicUrl,
    ttlSeconds: config.linkTtlSeconds,
    clock,
  });
  const displayTime = displayTimeIn(config.displayTimeZone);
  const renderForm = (source: EhrFormSource) => renderEhrForm(source, displayTime);
  const deps = { stores, clock, links: linkMinter };
  // BullMQ's schema in the database, created or upgraded before a queue is made (queue/backend.ts).
  if (config.queueBackend === 'postgres') await migrateQueues(store.queueDatabase());
  /** The queues' backend for producers or workers: each role its own (a Redis connection each). */
  const queueBackend = (role: ConnectionRole): QueueBackend =>
    config.queueBackend === 'postgres'
      ? postgresQueueBackend(store.queueDatabase(), logger)
      : redisQueueBackend(config, role, logger);
  let queues: QueueProducer | undefined;
  const queueProducer = () =>
    (queues ??= createQueueProducer(config, queueBackend('producer'), stores.forwarding.backlog, logger));
  let installation: Promise<string> | undefined;
  const installationId = () => (installation ??= stores.installation.installationId());
  // Renewed by each reconciler pass, so it outlives the gaps between them.
  const claimLease = claimLeaseMs(config.reconcileIntervalSeconds * 1000);
  const claimQueues = async () => queueProducer().claim(await installationId(), claimLease);
  const releaseQueues = async () => queueProducer().release(await installationId());
  let claimed: Promise<void> | undefined;
  // A replay runs outside the serving processes too (`refhub webhooks replay`, `refhub ledger replay`):
  // it claims the queues first.
  const replayQueues: Pick<QueueProducer, 'enqueueWebhooks'> = {
    enqueueWebhooks: async (jobs, replay) => {
      await (claimed ??= claimQueues().catch((error: unknown) => {
        claimed = undefined;
        throw error;
      }));
      await queueProducer().enqueueWebhooks(jobs, replay);
    },
  };
  // Whether clamd answers PING now, where a scanner is configured: a scrape-time gauge and an incident.
  const scannerAddress =
    config.attachmentScanner === undefined ? undefined : parseClamdAddress(config.attachmentScanner);
  const scannerReachable =
    scannerAddress === undefined
      ? undefined
      : () =>
          pingScanner({ ...scannerAddress, timeoutMs: SCANNER_PING_TIMEOUT_MS }).then(
            () => true,
            () => false,
          );
  const queueCounts = async () =>
    Object.fromEntries(
      await Promise.all(
        QUEUE_NAMES.map(async (name) => [name, await queueProducer().jobCounts(name)] as const),
      ),
    );
  const production = config.env === 'production';
  // The ops webhooks go through a client of their own, to the one receiver the operator named.
  let opsClient: WebhookClient | undefined;
  const opsUrl = config.opsWebhookUrl;
  const opsSecret = config.opsWebhookSecret;
  const opsWebhook: OpsWebhook | undefined =
    opsUrl === undefined || opsSecret === undefined
      ? undefined
      : {
          secret: opsSecret,
          post: (body, headers) =>
            (opsClient ??= createWebhookClient({
              attemptTimeoutMs: config.webhookAttemptTimeoutSeconds * 1000,
              loopback: !production,
              allowed: new Set([
                ...config.webhookAllowedAddresses,
                new URL(opsUrl).hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase(),
              ]),
            })).post({ url: opsUrl, body, headers }),
        };
  const incidents = createIncidents({
    stores,
    clock,
    logger: logger.child({ component: 'incident-sweep' }),
    queueCounts,
    scannerReachable,
    opsWebhook,
    sendLeaseMs: (config.webhookAttemptTimeoutSeconds + 5) * 1000,
  });
  metrics.setSources({
    queueCounts,
    openIncidents: () => incidents.openConditions(),
    outboxBacklog: () => stores.outbox.backlogWithEvents(clock.now()),
    disabledWebhookSubscriptions: () => stores.webhooks.subscriptions.disabledCounts(),
    ehrCircuitOpen: async () => (await stores.forwarding.circuit.read()).state === 'open',
    ...(scannerReachable === undefined ? {} : { scannerReachable }),
  });
  let webhookClient: WebhookClient | undefined;
  const webhookDelivery = (): DeliveryDeps => ({
    stores,
    clock,
    metrics,
    disableAfterMs: config.webhookDisableAfterSeconds * 1000,
    client: (webhookClient ??= createWebhookClient({
      attemptTimeoutMs: config.webhookAttemptTimeoutSeconds * 1000,
      loopback: !production,
      allowed: config.webhookAllowedAddresses,
    })),
  });
  // The buckets are where the queues are, so that every API process of the installation shares them.
  const redisBuckets = config.queueBackend === 'redis' ? redisRateLimitBuckets(config, logger) : undefined;
  const rateLimits = createRateLimits({
    buckets: redisBuckets ?? stores.rateLimits,
    storeName: redisBuckets === undefined ? 'database' : 'redis',
    clock,
    defaults: { perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst },
    metrics,
    logger,
  });
  const referralQueries = createReferralQueries({ ...deps, renderEhrForm: renderForm });
  const ehrForwarding = createEhrForwarding({ stores, clock, metrics });
  const attachments = createAttachments({
    stores,
    clock,
    settings: {
      maxBytes: config.attachmentMaxBytes,
      perReferral: config.attachmentsPerReferral,
      types: config.attachmentTypes,
      scanned: config.attachmentScanner !== undefined,
    },
    checkPdf: createPdfChecker({
      qpdfPath: config.qpdfPath,
      onUnavailable: (why, code) => {
        logger.warn(
          { check: 'pdf', why, ...(code === undefined ? {} : { code }) },
          why === 'busy'
            ? 'a PDF upload was answered 503: every PDF check was busy'
            : why === 'deadline'
              ? 'a PDF upload was answered 503: qpdf did not finish by its deadline and was stopped'
              : 'a PDF upload was answered 503: qpdf could not be started',
        );
      },
    }),
  });
  const auditChain = createAuditChain({
    stores,
    clock,
    signingKey: config.auditSigningKey,
    earlierPublicKeys: config.auditPublicKeys,
    metrics,
  });
  return {
    config,
    logger,
    store,
    db,
    stores,
    dataKeys,
    dataKeyRotation,
    clock,
    displayTime,
    renderEhrForm: renderForm,
    linkMinter,
    referralQueries,
    referralCommands: createReferralCommands({ ...deps, displayTime }),
    referralFhir: createReferralFhir({ referralQueries, ehrForwarding, attachments, clock }),
    attachments,
    links: createLinkService(deps),
    linkRedemption: createLinkRedemption({ stores, clock }),
    apiKeys: createApiKeyService({ stores, clock }),
    auditChain,
    clientCredentials: createClientCredentials({
      stores,
      clock,
      tokenUrl: `${config.publicUrl}${TOKEN_PATH}`,
      fetchJwks: createJwksFetcher({ production, allowed: config.webhookAllowedAddresses }),
      endpoints: { production, allowed: config.webhookAllowedAddresses },
    }),
    catalog: createCatalogService({ stores }),
    housekeeping: createHousekeeping({
      stores,
      clock,
      logger,
      eventRetentionDays: config.eventRetentionDays,
    }),
    retention: createRetention({
      stores,
      archiveReferrals: (options) => archiveStaleReferrals({ stores, config }, options),
      auditChain,
      clock,
      metrics,
      settings: retentionSettings(config),
    }),
    ehrForwarding,
    reminders: createReminders({
      stores,
      clock,
      metrics,
      policy: {
        afterSeconds: config.reminderAfterSeconds,
        intervalSeconds: config.reminderIntervalSeconds,
        max: config.reminderMax,
      },
    }),
    triageOverdue: createTriageOverdue({ stores, clock, displayTime, metrics }),
    incidents,
    waitTimes: createWaitTimes({
      stores,
      clock,
      metrics,
      policy: { windowDays: config.waitTimesWindowDays, minReferrals: config.waitTimesMinReferrals },
    }),
    rateLimits,
    rateLimitSettings: createRateLimitSettings({ stores, clock }),
    eventFeed: createEventFeed({ stores, clock }),
    webhookSubscriptions: createWebhookSubscriptions({
      stores,
      clock,
      endpoints: { production, allowed: config.webhookAllowedAddresses },
      deliver: (input) => deliverOnce(webhookDelivery(), input),
    }),
    accessReport: createAccessReport({ stores, clock }),
    webhookDelivery,
    webhookReplay: createWebhookReplay({ stores, queues: replayQueues }),
    ledgerSearch: createLedgerSearch({ stores, clock, queues: replayQueues }),
    get queues() {
      return queueProducer();
    },
    installationId,
    queueBackend,
    claimQueues,
    releaseQueues,
    metrics,
    pingScanner,
    lifecycle: { draining: false },
    close: async () => {
      await queues?.close();
      await redisBuckets?.close();
      await webhookClient?.close();
      await opsClient?.close();
      await store.close();
    },
  };
}

/** Retention's settings from the configuration: each table's months, the archives' directory. */
export function retentionSettings(config: Config): RetentionSettings {
  return {
    months: {
      audit_events: config.retentionAuditMonths,
      referral_events: config.retentionEventsMonths,
      webhook_attempts: config.retentionWebhookAttemptsMonths,
      ehr_submissions: config.retentionLedgerMonths,
    },
    archiveDir: config.retentionArchiveDir,
    monthsAhead: RETENTION_MONTHS_AHEAD,
  };
}
