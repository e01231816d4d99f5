// The one door to the data: the capability-named stores, built once by the composition root over the
// database and the data keys, and handed out as `Pick`s. Nothing outside db/ holds the database
// handle or a cipher: a store seals what it writes and opens what it reads, and a unit of work that
// spans stores runs in `transaction`, which hands the work the same stores bound to its transaction
// (every statement of the work goes through it: db/database.ts refuses any other).
//
// A store is made on first use, for each database handle or transaction, so that a transaction that
// touches two stores builds two, not all of them.
import type { Kysely } from 'kysely';
import { accessReportRepository } from './audit/access-report.repository.ts';
import { apiKeyRepository } from './api-key.repository.ts';
import { attachmentRepository } from './attachments.repository.ts';
import { auditChainRepository } from './audit/audit-chain.repository.ts';
import { auditRepository } from './audit/audit.repository.ts';
import { catalogRepository } from './catalog.repository.ts';
import { clientCredentialsRepository } from './client-credentials.repository.ts';
import type { DataKeys } from './data-keys/data-keys.repository.ts';
import { dataKeyStore } from './data-keys/data-keys.store.ts';
import { referralEventRepository } from './events.repository.ts';
import type { Executor } from './executor.ts';
import { createForwardingStore } from './forwarding/forwarding.store.ts';
import { housekeepingRepository } from './housekeeping.repository.ts';
import { idempotencyRepository } from './idempotency.repository.ts';
import { incidentRepository } from './incidents.repository.ts';
import { installationSecretRepository } from './installation-secret.repository.ts';
import { ledgerSearchRepository } from './ledger-search.repository.ts';
import { linkTokenRepository } from './links.repository.ts';
import { outboxRepository } from './outbox.repository.ts';
import { rateLimitRepository } from './rate-limits.repository.ts';
import { createReferralStore } from './referrals/referrals.store.ts';
import { referralsArchiveRepository } from './referrals-archive.repository.ts';
import { reminderRepository } from './reminders.repository.ts';
import { retentionRepository } from './retention.repository.ts';
import type { Database } from './schema.ts';
import { waitTimesRepository } from './wait-times.repository.ts';
import { webhookAttemptRepository } from './webhooks/attempts.repository.ts';
import { webhookRelayRepository } from './webhooks/relay.repository.ts';
import { webhookSubscriptionRepository } from './webhooks/subscriptions.repository.ts';

/** How each capability's store is made over an executor (the database, or a transaction). */
const STORES = {
  referrals: (db: Executor, keys: DataKeys) => createReferralStore(db, keys),
  referralsArchive: (db: Executor, keys: DataKeys) => referralsArchiveRepository(db, keys),
  attachments: (db: Executor, keys: DataKeys) => attachmentRepository(db, keys),
  forwarding: (db: Executor, keys: DataKeys) => createForwardingStore(db, keys),
  reminders: (db: Executor) => reminderRepository(db),
  outbox: (db: Executor) => outboxRepository(db),
  events: (db: Executor) => referralEventRepository(db),
  webhooks: (db: Executor) => ({
    subscriptions: webhookSubscriptionRepository(db),
    attempts: webhookAttemptRepository(db),
    relay: webhookRelayRepository(db),
  }),
  links: (db: Executor) => linkTokenRepository(db),
  ledgerSearch: (db: Executor) => ledgerSearchRepository(db),
  audit: (db: Executor, keys: DataKeys) => ({
    ...auditRepository(db),
    chain: auditChainRepository(db),
    accessReport: accessReportRepository(db, keys),
  }),
  catalog: (db: Executor) => catalogRepository(db),
  apiKeys: (db: Executor) => apiKeyRepository(db),
  clientCredentials: (db: Executor) => clientCredentialsRepository(db),
  dataKeys: (db: Executor, keys: DataKeys) => dataKeyStore(db, keys),
  idempotency: (db: Executor, keys: DataKeys) => idempotencyRepository(db, keys),
  installation: (db: Executor) => installationSecretRepository(db),
  housekeeping: (db: Executor) => housekeepingRepository(db),
  waitTimes: (db: Executor) => waitTimesRepository(db),
  incidents: (db: Executor) => incidentRepository(db),
  retention: (db: Executor) => retentionRepository(db),
  rateLimits: (db: Executor) => rateLimitRepository(db),
} as const;

type StoreMakers = typeof STORES;
export type StoreName = keyof StoreMakers;

/** Each capability's store, by name. */
export type CapabilityStores = { readonly [K in StoreName]: ReturnType<StoreMakers[K]> };

export interface Stores extends CapabilityStores {
  /**
   * Runs `work` in one transaction, with the stores bound to it: every statement of the work goes
   * through the transaction, and all of them commit, or none.
   */
  transaction<T>(work: (tx: CapabilityStores) => Promise<T>, options?: TransactionOptions): Promise<T>;
}

export interface TransactionOptions {
  /**
   * Read only, from one snapshot (repeatable read): what reads a whole (a check of the audit trail,
   * an export) sees no write made while it runs, and makes none.
   */
  readonly snapshot?: boolean;
}

/** The stores over `db` (the database, or a transaction), sealing and opening with `keys`. */
function storesOver(db: Executor, keys: DataKeys): CapabilityStores {
  const made = new Map<StoreName, unknown>();
  const stores = {} as Record<StoreName, unknown>;
  for (const name of Object.keys(STORES) as StoreName[]) {
    Object.defineProperty(stores, name, {
      enumerable: true,
      get() {
        let store = made.get(name);
        if (store === undefined) {
          store = STORES[name](db, keys);
          made.set(name, store);
        }
        return store;
      },
    });
  }
  return stores as CapabilityStores;
}

/** The stores of the database `db`, made once by the composition root. */
export function createStores(db: Kysely<Database>, keys: DataKeys): Stores {
  const stores = storesOver(db, keys);
  Object.defineProperty(stores, 'transaction', {
    value: <T>(work: (tx: CapabilityStores) => Promise<T>, options: TransactionOptions = {}) => {
      const transaction =
        options.snapshot === true
          ? db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only')
          : db.transaction();
      return transaction.execute((trx) => work(storesOver(trx, keys)));
    },
  });
  return stores as Stores;
}
