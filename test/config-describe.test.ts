// What a running refhub may show of its settings (`GET /doctor`): every variable it reads, with its
// effective value, except that a secret shows only whether it is set, and a URL shows without its
// password or the values of its query parameters.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeConfig, loadConfig } from '../src/config.ts';
import { auditSigningKeySetting, testAuditSigningKey } from './support/audit-signing-key.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const EXAMPLE_VARIABLES = [
  ...fs.readFileSync(path.join(ROOT, '.env.example'), 'utf8').matchAll(/^([A-Z][A-Z0-9_]*)=/gm),
].map((m) => m[1]);

const SECRETS = {
  EHR_TOKEN: 'ehr-token-4f9b2c7d1e',
  SESSION_SECRET: 'session-secret-8a7b6c5d4e3f2a1b0c9d8e7f',
  METRICS_TOKEN: 'metrics-token-0a1b2c3d4e5f6a7b8c9d0e1f',
  DATA_KEYS: `kek-1:${Buffer.alloc(32, 9).toString('base64')}`,
  AUDIT_SIGNING_KEY: auditSigningKeySetting(await testAuditSigningKey()),
};
const DATABASE_PASSWORD = 'db-password-77c1';
const REDIS_PASSWORD = 'redis-password-91ee';
const EHR_QUERY_TOKEN = 'query-token-5d2a';

const config = loadConfig(
  {
    ...SECRETS,
    DATABASE_URL: `postgres://refhub:${DATABASE_PASSWORD}@db.internal:5432/refhub?sslmode=require`,
    REDIS_URL: `redis://:${REDIS_PASSWORD}@redis.internal:6379/0`,
    EHR_URL: `https://ehr.example/fhir/forms?code=${EHR_QUERY_TOKEN}`,
    EHR_ALLOWED_ADDRESSES: 'ehr.private, 10.0.0.7',
    WEBHOOK_RETRY_SCHEDULE: '5s,90s,1h',
  },
  '/srv/refhub',
);
const shown = describeConfig(config);
const setting = (variable: string) => shown.find((s) => s.variable === variable);

describe('describeConfig', () => {
  it('lists every variable refhub reads, once', () => {
    expect(shown.map((s) => s.variable).sort()).toEqual([...EXAMPLE_VARIABLES].sort());
  });

  it('shows secrets only as set or unset', () => {
    for (const variable of Object.keys(SECRETS)) {
      expect(setting(variable)).toEqual({ variable, secret: true, set: true });
    }
    expect(describeConfig(loadConfig({}, '/srv/refhub')).find((s) => s.variable === 'EHR_TOKEN')).toEqual({
      variable: 'EHR_TOKEN',
      secret: true,
      set: false,
    });
    const text = JSON.stringify(shown);
    for (const value of [...Object.values(SECRETS), DATABASE_PASSWORD, REDIS_PASSWORD, EHR_QUERY_TOKEN]) {
      expect(text).not.toContain(value);
    }
  });

  it('shows URLs without passwords or query values, and other settings as they take effect', () => {
    expect(setting('DATABASE_URL')?.value).toBe('postgres://refhub:***@db.internal:5432/refhub?sslmode=***');
    expect(setting('REDIS_URL')?.value).toBe('redis://:***@redis.internal:6379/0');
    expect(setting('EHR_URL')?.value).toBe('https://ehr.example/fhir/forms?code=***');
    expect(setting('PUBLIC_URL')?.value).toBe('http://127.0.0.1:3000');
    expect(setting('EHR_ALLOWED_ADDRESSES')?.value).toBe('ehr.private,10.0.0.7');
    expect(setting('WEBHOOK_RETRY_SCHEDULE')?.value).toBe('5s,90s,1h');
    expect(setting('DATA_DIR')?.value).toBe('/srv/refhub/data');
    expect(setting('PORT')).toEqual({ variable: 'PORT', secret: false, set: true, value: '3000' });
    expect(setting('CATALOG_FILE')).toEqual({ variable: 'CATALOG_FILE', secret: false, set: false });
  });

  it('shows each value in the unit and words its variable takes, as the docs write them', () => {
    expect(setting('ATTACHMENT_MAX_MIB')?.value).toBe('10');
    expect(setting('ATTACHMENT_SCANNING')?.value).toBe('refhub');
    const elsewhere = describeConfig(
      loadConfig({ ATTACHMENT_SCANNING: 'elsewhere', ATTACHMENT_MAX_MIB: '4' }, '/srv/refhub'),
    );
    expect(elsewhere.find((s) => s.variable === 'ATTACHMENT_SCANNING')?.value).toBe('elsewhere');
    expect(elsewhere.find((s) => s.variable === 'ATTACHMENT_MAX_MIB')?.value).toBe('4');
  });
});
