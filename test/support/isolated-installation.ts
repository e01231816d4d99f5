// A refhub installation that shares nothing with the machine: a PostgreSQL of its own (and, with its
// queues in Redis, a redis-server of its own) on free loopback ports, a recording fake EHR, the demo
// catalog and a sender key, and `refhub api` and `refhub worker` processes started against them. Fault tests kill, stop and flush its parts
// freely; closing it ends every process and removes every folder, whatever state the test left.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { QueueBackendName } from '../../src/queue/backend.ts';
import { migrateToLatest, openStore, type Store } from '../../src/db/database.ts';
import type { Database } from '../../src/db/schema.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { createApiKeyService } from '../../src/services/api-key.service.ts';
import { createCatalogService } from '../../src/services/catalog/catalog.service.ts';
import { DEMO_CATALOG_FILE } from '../../src/composition/demo-setup.ts';
import { startPostgresServer, type PostgresServer } from './postgres-server.ts';
import type { QueuePlace } from './stalled-jobs.ts';
import { startRecordingEhr, type RecordingEhr } from './recording-ehr.ts';
import { startRedisServer, type RedisServer } from './redis-server.ts';
import { startRefhubProcess, type RefhubCommand, type WorkerProcess } from './worker-process.ts';
import { storesOf } from './stores.ts';

const DATABASE = 'refhub';

/** Settings every process of the installation gets, unless the test gives others. */
const BASE_ENV: Readonly<Record<string, string>> = {
  // Fault tests send bursts from one key; the limiter is not what they test.
  RATE_LIMIT_PER_MINUTE: '1000000',
  EHR_BACKOFF_BASE_MS: '100',
  RECONCILE_INTERVAL_SECONDS: '2',
  SHUTDOWN_GRACE_SECONDS: '5',
};

export interface IsolatedInstallation {
  /** Where its queues are: in its PostgreSQL (BullMQ's PostgreSQL backend), or in its own Redis. */
  readonly queueBackend: QueueBackendName;
  readonly postgres: PostgresServer;
  /** Its redis-server, when its queues are in Redis. */
  readonly redis: RedisServer | undefined;
  readonly ehr: RecordingEhr;
  readonly databaseUrl: string;
  /** The bare queue prefix, as QUEUE_PREFIX takes it (with the queues in Redis). */
  readonly queuePrefix: string;
  /** Where a test reads its queues (stalled-jobs.ts). */
  readonly queuePlace: QueuePlace;
  /** The installation's database, for reading what refhub recorded. */
  readonly db: Kysely<Database>;
  /** A sender key for Bukit Timah Family Clinic (hci:S1234A). */
  readonly senderKey: string;
  /** Starts `refhub <command>` against the installation; `env` adds to or overrides the settings. */
  start(command: RefhubCommand, env?: Readonly<Record<string, string>>): Promise<WorkerProcess>;
  /** The last `lines` lines each process started so far wrote (its log and stderr), for failure reports. */
  outputTails(lines?: number): string;
  close(): Promise<void>;
}

export async function startIsolatedInstallation(
  queueBackend: QueueBackendName = 'redis',
): Promise<IsolatedInstallation> {
  const cleanups: (() => Promise<unknown>)[] = [];
  const processes: WorkerProcess[] = [];
  const closeAll = async () => {
    // Processes first, while the servers they use still run, so each stops cleanly and quickly.
    await Promise.allSettled(processes.map((p) => p.stop()));
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const [postgres, redis, ehr] = await Promise.all([
      startPostgresServer().then((s) => (cleanups.push(() => s.close()), s)),
      queueBackend === 'redis'
        ? startRedisServer().then((s) => (cleanups.push(() => s.close()), s))
        : Promise.resolve(undefined),
      startRecordingEhr().then((s) => (cleanups.push(() => s.close()), s)),
    ]);
    await postgres.createDatabase(DATABASE);
    const databaseUrl = postgres.urlOf(DATABASE);
    const store: Store = await openStore({ engine: 'postgres', url: databaseUrl, poolSize: 3 });
    cleanups.push(() => store.close());
    await migrateToLatest(store.db);
    await createCatalogService({ stores: storesOf(store.db) }).loadFile(DEMO_CATALOG_FILE);
    const { key: senderKey } = await createApiKeyService({
      stores: storesOf(store.db),
      clock: systemClock,
    }).create({
      system: 'HAS',
      role: 'sender',
      institutions: [{ idType: 'hci', id: 'S1234A' }],
      environment: 'test',
    });
    const queuePrefix = `faults-${randomUUID()}`;
    return {
      queueBackend,
      postgres,
      redis,
      ehr,
      databaseUrl,
      queuePrefix,
      queuePlace: redis === undefined ? { databaseUrl } : { redisUrl: redis.url, queuePrefix },
      db: store.db,
      senderKey,
      async start(command, env = {}) {
        const started = await startRefhubProcess(command, {
          databaseUrl,
          redisUrl: redis?.url,
          queuePrefix,
          ehrUrl: ehr.url,
          env: { ...BASE_ENV, ...env },
        });
        processes.push(started);
        return started;
      },
      outputTails(lines = 20) {
        const tail = (text: string) => text.trimEnd().split('\n').slice(-lines).join('\n') || '(nothing)';
        return processes
          .map((p, i) => {
            const { stdout, stderr } = p.output();
            return `process ${i + 1} (pid ${p.pid}):\n${tail(stdout)}\nstderr: ${tail(stderr)}`;
          })
          .join('\n');
      },
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
