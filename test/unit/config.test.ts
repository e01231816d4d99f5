import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({}, '/srv/refhub');
    expect(config).toMatchObject({
      env: 'development',
      port: 3000,
      host: '127.0.0.1',
      publicUrl: 'http://127.0.0.1:3000',
      databaseUrl: undefined,
      dataDir: '/srv/refhub/data',
      linkTtlSeconds: 900,
      catalogFile: undefined,
      rateLimitPerMinute: 1200,
      logLevel: 'info',
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads every variable', () => {
    const config = loadConfig(
      {
        NODE_ENV: 'production',
        PORT: '8080',
        HOST: '0.0.0.0',
        PUBLIC_URL: 'https://refhub.example/',
        DATABASE_URL: 'postgres://u@db:5432/refhub',
        DATA_DIR: '/var/lib/refhub',
        LINK_TTL_SECONDS: '600',
        CATALOG_FILE: 'catalog.json',
        RATE_LIMIT_PER_MINUTE: '60',
        LOG_LEVEL: 'warn',
      },
      '/srv',
    );
    expect(config).toMatchObject({
      env: 'production',
      port: 8080,
      host: '0.0.0.0',
      publicUrl: 'https://refhub.example',
      databaseUrl: 'postgres://u@db:5432/refhub',
      dataDir: '/var/lib/refhub',
      linkTtlSeconds: 600,
      catalogFile: '/srv/catalog.json',
      rateLimitPerMinute: 60,
      logLevel: 'warn',
    });
  });

  it.each([
    ['PORT', 'abc', /PORT: must be a whole number/],
    ['PORT', '70000', /PORT: must be between 0 and 65535/],
    ['PUBLIC_URL', 'not a url', /PUBLIC_URL: is not a valid URL/],
    ['PUBLIC_URL', 'ftp://x', /PUBLIC_URL: must use http: or https:/],
    ['DATABASE_URL', 'mysql://x/y', /DATABASE_URL: must use postgres: or postgresql:/],
    ['LINK_TTL_SECONDS', '5', /LINK_TTL_SECONDS: must be between 30 and 86400/],
    ['RATE_LIMIT_PER_MINUTE', '-1', /RATE_LIMIT_PER_MINUTE: must be a whole number/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL: must be one of/],
  ])('rejects %s=%s with a message naming the variable', (name, value, message) => {
    const load = () => loadConfig({ [name]: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(message);
  });
});
