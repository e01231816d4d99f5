// `refhub doctor`: checks an installation the way an operator would before trusting it with
// referrals, and says for each check what it found, one line each. It opens what it checks (through
// the openers the composition root gives it) and closes it again, so it can run beside a live
// PostgreSQL installation at any time. With embedded PGlite it does not touch a DATA_DIR that a
// running refhub holds: it names the holder instead. It exits 1 when a check fails.
import type { Redis } from 'ioredis';
import { sql, type Kysely } from 'kysely';
import { ConfigError, type Config } from '../config.ts';
import { DataDirLockedError } from '../db/data-dir-lock.ts';
import { isMigrated, ping, type Store } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import { checkRedis } from '../queue/connections.ts';
import { checkEhrAddress } from '../services/outbound-address.ts';

export interface DoctorDeps {
  readonly config: Config;
  /** Opens the configured store without migrating it: PGlite in DATA_DIR, or one PostgreSQL connection. */
  readonly openStore: () => Promise<Store>;
  /** Opens a producer's connection to REDIS_URL (the doctor disconnects it). */
  readonly connectRedis: () => Redis;
}

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

async function storeChecks({ config, openStore }: DoctorDeps): Promise<DoctorCheck[]> {
  let store: Store;
  try {
    store = await openStore();
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

async function redisCheck(deps: DoctorDeps): Promise<DoctorCheck> {
  const redis = deps.connectRedis();
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

export async function runDoctor(deps: DoctorDeps): Promise<DoctorCheck[]> {
  const [store, redis] = await Promise.all([storeChecks(deps), redisCheck(deps)]);
  return [...store, redis, await ehrCheck(deps.config)];
}

/** Runs the checks and prints them; the exit status is 1 when one failed. */
export async function doctor(deps: DoctorDeps): Promise<void> {
  const checks = await runDoctor(deps);
  const width = Math.max(...checks.map((c) => c.name.length));
  for (const c of checks) {
    process.stdout.write(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(width)}  ${c.detail}\n`);
  }
  const failed = checks.filter((c) => !c.ok).length;
  process.stdout.write(failed === 0 ? 'Every check passed.\n' : `${failed} check(s) failed.\n`);
  process.exitCode = failed === 0 ? 0 : 1;
}
