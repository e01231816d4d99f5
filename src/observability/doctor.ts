// `refhub doctor`: checks an installation the way an operator would before trusting it with
// referrals, and says for each check what it found. It opens what it checks itself and closes it
// again, so it can run beside a live PostgreSQL installation at any time. With embedded PGlite it
// does not touch a DATA_DIR that a running refhub holds: it names the holder instead.
import { sql, type Kysely } from 'kysely';
import { checkEhrAddress, ConfigError, type Config } from '../config.ts';
import { DataDirLockedError } from '../db/data-dir-lock.ts';
import { isMigrated, openStore, ping, type Store } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import { checkRedis, connectRedis } from '../queue/connections.ts';
import type { Logger } from '../logger.ts';

export interface DoctorCheck {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

/** PostgreSQL settings that must stay on, or a crash can lose or corrupt committed referrals. */
const DURABILITY = [
  { name: 'fsync', safe: ['on'] },
  { name: 'synchronous_commit', safe: ['on', 'remote_write', 'remote_apply'] },
  { name: 'full_page_writes', safe: ['on'] },
] as const;

async function durabilityChecks(db: Kysely<Database>): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  for (const setting of DURABILITY) {
    const { rows } = await sql<{ value: string }>`select current_setting(${setting.name}) as value`.execute(
      db,
    );
    const value = rows[0]?.value ?? 'unknown';
    const ok = (setting.safe as readonly string[]).includes(value);
    checks.push({
      name: `postgres ${setting.name}`,
      ok,
      detail: ok ? value : `${value}: a crash can lose committed referrals; set ${setting.name} = on`,
    });
  }
  return checks;
}

async function storeChecks(config: Config): Promise<DoctorCheck[]> {
  let store: Store;
  try {
    store =
      config.databaseUrl === undefined
        ? await openStore({ engine: 'pglite', dataDir: config.dataDir, command: 'refhub doctor' })
        : await openStore({ engine: 'postgres', url: config.databaseUrl, poolSize: 1 });
  } catch (error) {
    if (error instanceof DataDirLockedError) {
      return [
        {
          name: 'pglite lock',
          ok: true,
          detail: `DATA_DIR is held by process ${error.holder.pid} ("${error.holder.command}"): the running refhub owns it`,
        },
      ];
    }
    return [{ name: 'database', ok: false, detail: `cannot open: ${(error as Error).message}` }];
  }
  try {
    const checks: DoctorCheck[] = [];
    if (store.engine === 'pglite') {
      checks.push({
        name: 'pglite lock',
        ok: true,
        detail: `DATA_DIR ${config.dataDir} is free; no refhub holds it`,
      });
    }
    try {
      await ping(store.db);
      checks.push({
        name: 'database',
        ok: true,
        detail: store.engine === 'pglite' ? 'embedded PGlite answers' : 'PostgreSQL answers',
      });
    } catch (error) {
      return [...checks, { name: 'database', ok: false, detail: `no answer: ${(error as Error).message}` }];
    }
    const migrated = await isMigrated(store.db);
    checks.push({
      name: 'migrations',
      ok: migrated,
      detail: migrated ? 'every migration is applied' : 'migrations are pending: run `refhub migrate`',
    });
    if (store.engine === 'postgres') checks.push(...(await durabilityChecks(store.db)));
    return checks;
  } finally {
    await store.close();
  }
}

async function redisCheck(config: Config, logger: Logger): Promise<DoctorCheck> {
  const redis = connectRedis(config.redisUrl, 'producer', logger);
  try {
    const health = await checkRedis(redis);
    return {
      name: 'redis',
      ok: health.problem === undefined,
      detail: health.problem ?? 'reachable, maxmemory-policy noeviction',
    };
  } finally {
    redis.disconnect();
  }
}

async function ehrCheck(config: Config): Promise<DoctorCheck> {
  if (config.ehrUrl === undefined) {
    return {
      name: 'ehr url',
      ok: config.env !== 'production',
      detail: 'unset: forms go to the in-process sandbox EHR (never in production)',
    };
  }
  const https = new URL(config.ehrUrl).protocol === 'https:';
  try {
    await checkEhrAddress(config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { name: 'ehr url', ok: false, detail: error.message };
  }
  return {
    name: 'ehr url',
    ok: https || config.env !== 'production',
    detail: https ? `https, ${new URL(config.ehrUrl).host}` : `${config.ehrUrl} is not https`,
  };
}

export async function runDoctor(config: Config, logger: Logger): Promise<DoctorCheck[]> {
  const [store, redis] = await Promise.all([storeChecks(config), redisCheck(config, logger)]);
  return [...store, redis, await ehrCheck(config)];
}
