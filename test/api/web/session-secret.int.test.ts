// The secret that signs web sessions: SESSION_SECRET when given (required in production, at least 32
// characters), else one the installation generates once and keeps in its database, so every process
// on that database signs and checks sessions alike.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import type { Store } from '../../../src/db/database.ts';
import { resolveSessionSecret } from '../../../src/api/web/session-secret.ts';
import { installationSecretRepository } from '../../../src/db/installation-secret.repository.ts';
import { auditSigningKeySetting, testAuditSigningKey } from '../../support/audit-signing-key.ts';
import { APP_ENGINES, openTestStore } from '../../support/engines.ts';

const PRODUCTION = {
  NODE_ENV: 'production',
  QUEUE_BACKEND: 'postgres',
  EHR_URL: 'https://ehr.example/forms',
  ATTACHMENT_SCANNING: 'elsewhere',
  DATA_KEYS: `kek-1:${Buffer.alloc(32, 1).toString('base64')}`,
  AUDIT_SIGNING_KEY: auditSigningKeySetting(await testAuditSigningKey()),
};

describe('SESSION_SECRET', () => {
  it('is required in production, and names itself when missing or short', () => {
    const missing = () => loadConfig(PRODUCTION);
    expect(missing).toThrow(ConfigError);
    expect(missing).toThrow(/^SESSION_SECRET: is required when NODE_ENV=production/);
    const short = () => loadConfig({ ...PRODUCTION, SESSION_SECRET: 'x'.repeat(31) });
    expect(short).toThrow(/^SESSION_SECRET: must be at least 32 characters, got 31$/);
    expect(loadConfig({ ...PRODUCTION, SESSION_SECRET: 's'.repeat(32) }).sessionSecret).toBe('s'.repeat(32));
  });

  it('is optional elsewhere', () => {
    expect(loadConfig({}).sessionSecret).toBeUndefined();
    expect(loadConfig({ NODE_ENV: 'test' }).sessionSecret).toBeUndefined();
  });
});

describe.each(APP_ENGINES)('the session secret on %s', (engine) => {
  let store: Store;
  const secretsOf = () => installationSecretRepository(store.db);
  beforeAll(async () => {
    store = await openTestStore(engine);
  });
  afterAll(async () => {
    await store.close();
  });

  it('is SESSION_SECRET when given, and then nothing is stored', async () => {
    const given = 'g'.repeat(40);
    expect(await resolveSessionSecret({ env: 'production', sessionSecret: given }, secretsOf())).toBe(given);
    expect(await store.db.selectFrom('installation_secrets').selectAll().execute()).toEqual([]);
  });

  it('is generated once per installation, and every process that starts at once gets the same', async () => {
    const secrets = await Promise.all(
      Array.from({ length: 6 }, () =>
        resolveSessionSecret({ env: 'development', sessionSecret: undefined }, secretsOf()),
      ),
    );
    expect(new Set(secrets).size).toBe(1);
    expect(secrets[0]!.length).toBeGreaterThanOrEqual(43);
    expect(await resolveSessionSecret({ env: 'test', sessionSecret: undefined }, secretsOf())).toBe(
      secrets[0],
    );
    expect(await store.db.selectFrom('installation_secrets').select('name').execute()).toEqual([
      { name: 'web-session' },
    ]);
  });

  it('is never generated in production', async () => {
    await expect(
      resolveSessionSecret({ env: 'production', sessionSecret: undefined }, secretsOf()),
    ).rejects.toThrow(/SESSION_SECRET is required/);
  });
});
