import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { checkEhrAddress } from '../src/services/outbound-address.ts';
import { auditSigningKeySetting, testAuditSigningKey } from './support/audit-signing-key.ts';

/** A key ring of one key-encryption key, as DATA_KEYS writes it. */
const DATA_KEYS = 'kek-1:' + Buffer.alloc(32, 7).toString('base64');
/** A key that signs the audit trail's checkpoints, as AUDIT_SIGNING_KEY holds it. */
const AUDIT_KEY = await testAuditSigningKey('audit-1');
const AUDIT_SIGNING_KEY = auditSigningKeySetting(AUDIT_KEY);

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({}, '/srv/refhub');
    expect(config).toMatchObject({
      env: 'development',
      port: 3000,
      host: '127.0.0.1',
      publicUrl: 'http://127.0.0.1:3000',
      databaseUrl: undefined,
      databasePreparedStatements: true,
      dataDir: '/srv/refhub/data',
      linkTtlSeconds: 900,
      catalogFile: undefined,
      rateLimitPerSecond: 10,
      rateLimitBurst: 50,
      logLevel: 'info',
      redisUrl: 'redis://127.0.0.1:6379',
      queuePrefix: '{refhub}',
      ehrUrl: undefined,
      ehrToken: undefined,
      ehrMaxAttempts: 10,
      ehrBackoffBaseMs: 2000,
      reminderAfterSeconds: 86_400,
      reminderIntervalSeconds: 86_400,
      reminderMax: 3,
      reconcileIntervalSeconds: 60,
      waitTimesWindowDays: 180,
      waitTimesMinReferrals: 10,
      waitTimesAt: '02:00',
      opsDashboardWrite: false,
      metricsToken: undefined,
      shutdownGraceSeconds: 20,
      displayTimeZone: 'Asia/Singapore',
      httpRequestTimeoutSeconds: 30,
      httpHeadersTimeoutSeconds: 10,
      httpKeepAliveTimeoutSeconds: 72,
      attachmentScanner: undefined,
      attachmentScanTimeoutSeconds: 60,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads every variable', () => {
    const config = loadConfig(
      {
        NODE_ENV: 'production',
        QUEUE_BACKEND: 'postgres',
        PORT: '8080',
        HOST: '0.0.0.0',
        PUBLIC_URL: 'https://refhub.example/',
        DATABASE_URL: 'postgres://u@db:5432/refhub',
        DATABASE_PREPARED_STATEMENTS: 'false',
        DATA_DIR: '/var/lib/refhub',
        LINK_TTL_SECONDS: '600',
        CATALOG_FILE: 'catalog.json',
        RATE_LIMIT_PER_MINUTE: '60',
        LOG_LEVEL: 'warn',
        REDIS_URL: 'rediss://:secret@redis:6380/2',
        QUEUE_PREFIX: 'refhub-eu',
        EHR_URL: 'https://ehr.example/fhir/referrals',
        EHR_TOKEN: 'token-1',
        SESSION_SECRET: 'a-session-secret-of-at-least-32-characters',
        DATA_KEYS: DATA_KEYS,
        DATA_KEY_REFRESH_SECONDS: '10',
        AUDIT_SIGNING_KEY,
        EHR_MAX_ATTEMPTS: '5',
        EHR_BACKOFF_BASE_MS: '500',
        REMINDER_AFTER_SECONDS: '3600',
        REMINDER_INTERVAL_SECONDS: '7200',
        REMINDER_MAX: '0',
        RECONCILE_INTERVAL_SECONDS: '30',
        WAIT_TIMES_WINDOW_DAYS: '90',
        WAIT_TIMES_MIN_REFERRALS: '20',
        WAIT_TIMES_AT: '23:45',
        OPS_DASHBOARD_WRITE: 'true',
        METRICS_TOKEN: 'a-metrics-token-of-at-least-32-characters',
        SHUTDOWN_GRACE_SECONDS: '45',
        DISPLAY_TIME_ZONE: 'Europe/London',
        HTTP_REQUEST_TIMEOUT_SECONDS: '60',
        HTTP_HEADERS_TIMEOUT_SECONDS: '60',
        HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: '650',
        ATTACHMENT_SCANNER: 'clamav.internal:3310',
        ATTACHMENT_SCAN_TIMEOUT_SECONDS: '120',
        ATTACHMENT_MAX_MIB: '5',
        ATTACHMENTS_PER_REFERRAL: '8',
        ATTACHMENT_TYPES: 'pdf, PNG',
        ATTACHMENT_UPLOADS_IN_FLIGHT_MIB: '64',
        ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB: '24',
        ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB: '12',
        ATTACHMENT_UPLOAD_WAIT_MS: '1500',
      },
      '/srv',
    );
    expect(config).toMatchObject({
      env: 'production',
      port: 8080,
      host: '0.0.0.0',
      publicUrl: 'https://refhub.example',
      databaseUrl: 'postgres://u@db:5432/refhub',
      databasePreparedStatements: false,
      dataDir: '/var/lib/refhub',
      linkTtlSeconds: 600,
      catalogFile: '/srv/catalog.json',
      // The older setting alone: its number a minute, with a burst of that number.
      rateLimitPerSecond: 1,
      rateLimitBurst: 60,
      logLevel: 'warn',
      redisUrl: 'rediss://:secret@redis:6380/2',
      queuePrefix: '{refhub-eu}',
      ehrUrl: 'https://ehr.example/fhir/referrals',
      ehrToken: 'token-1',
      ehrMaxAttempts: 5,
      ehrBackoffBaseMs: 500,
      reminderAfterSeconds: 3600,
      reminderIntervalSeconds: 7200,
      reminderMax: 0,
      reconcileIntervalSeconds: 30,
      waitTimesWindowDays: 90,
      waitTimesMinReferrals: 20,
      waitTimesAt: '23:45',
      opsDashboardWrite: true,
      metricsToken: 'a-metrics-token-of-at-least-32-characters',
      shutdownGraceSeconds: 45,
      displayTimeZone: 'Europe/London',
      httpRequestTimeoutSeconds: 60,
      httpHeadersTimeoutSeconds: 60,
      httpKeepAliveTimeoutSeconds: 650,
      attachmentScanner: 'clamd://clamav.internal:3310',
      attachmentScanTimeoutSeconds: 120,
      attachmentsScannedElsewhere: false,
      attachmentMaxBytes: 5 * 1024 * 1024,
      attachmentsPerReferral: 8,
      attachmentTypes: new Set(['pdf', 'png']),
      attachmentUploadsInFlightMib: 64,
      attachmentUploadsPerCredentialMib: 24,
      attachmentUploadsPerInstitutionMib: 12,
      attachmentUploadWaitMs: 1500,
      dataKeys: [{ id: 'kek-1', key: Buffer.alloc(32, 7) }],
      dataKeysFile: undefined,
      dataKeyRefreshSeconds: 10,
      auditSigningKey: AUDIT_KEY,
    });
  });

  it('needs a key ring in production, from one place, and says what is wrong with one', () => {
    const production = {
      NODE_ENV: 'production',
      QUEUE_BACKEND: 'postgres',
      EHR_URL: 'https://ehr.example/fhir',
      SESSION_SECRET: 's'.repeat(40),
      AUDIT_SIGNING_KEY,
      ATTACHMENT_SCANNING: 'elsewhere',
    };
    expect(() => loadConfig(production)).toThrow(
      /^DATA_KEYS: is required when NODE_ENV=production \(or DATA_KEYS_FILE\)/,
    );
    expect(loadConfig({ ...production, DATA_KEYS_FILE: 'keys.json' }, '/srv').dataKeysFile).toBe(
      '/srv/keys.json',
    );
    expect(() => loadConfig({ ...production, DATA_KEYS, DATA_KEYS_FILE: 'keys.json' })).toThrow(
      /^DATA_KEYS_FILE: cannot be set with DATA_KEYS/,
    );
    expect(() => loadConfig({ DATA_KEYS: 'kek-1:c2hvcnQ=' })).toThrow(
      'DATA_KEYS: key kek-1 must be 32 bytes in base64, got 5',
    );
    expect(() => loadConfig({ DATA_KEYS: `${DATA_KEYS},${DATA_KEYS}` })).toThrow(
      'DATA_KEYS: names a key ID twice',
    );
    // Outside production, none is needed: refhub keeps a key file of its own (composition/key-ring.ts).
    expect(loadConfig({}).dataKeys).toBeUndefined();
  });

  it('needs AUDIT_SIGNING_KEY in production, so that no checkpoint of the audit trail goes unsigned', () => {
    const production = {
      NODE_ENV: 'production',
      QUEUE_BACKEND: 'postgres',
      EHR_URL: 'https://ehr.example/fhir',
      SESSION_SECRET: 's'.repeat(40),
      DATA_KEYS,
      ATTACHMENT_SCANNING: 'elsewhere',
    };
    for (const unset of [production, { ...production, AUDIT_SIGNING_KEY: '' }]) {
      expect(() => loadConfig(unset)).toThrow(ConfigError);
      expect(() => loadConfig(unset)).toThrow(
        /^AUDIT_SIGNING_KEY: is required when NODE_ENV=production: .*Ed25519.*docs\/operations\.md/,
      );
    }
    expect(loadConfig({ ...production, AUDIT_SIGNING_KEY }).auditSigningKey).toEqual(AUDIT_KEY);
    // Outside production the checkpoints may go unsigned, and verification says they are.
    expect(loadConfig({}).auditSigningKey).toBeUndefined();
    expect(loadConfig({ NODE_ENV: 'test' }).auditSigningKey).toBeUndefined();
  });

  it('accepts every attachment type, 10 MiB and 20 a referral unless told otherwise', () => {
    expect(loadConfig({})).toMatchObject({
      attachmentMaxBytes: 10 * 1024 * 1024,
      attachmentsPerReferral: 20,
      attachmentTypes: new Set(['pdf', 'jpeg', 'png', 'tiff', 'text', 'docx']),
      attachmentsScannedElsewhere: false,
    });
  });

  it('holds 80 MiB of uploads, 16 for each credential and each institution, waiting 2 s for room', () => {
    expect(loadConfig({})).toMatchObject({
      attachmentUploadsInFlightMib: 80,
      attachmentUploadsPerCredentialMib: 16,
      attachmentUploadsPerInstitutionMib: 16,
      attachmentUploadWaitMs: 2000,
    });
  });

  it('leaves room for the largest file: stored, arriving, and within each share', () => {
    // Six times the largest file: five while it is stored, one more arriving.
    expect(loadConfig({ ATTACHMENT_MAX_MIB: '2', ATTACHMENT_UPLOADS_IN_FLIGHT_MIB: '12' })).toMatchObject({
      attachmentUploadsInFlightMib: 12,
    });
    expect(() => loadConfig({ ATTACHMENT_UPLOADS_IN_FLIGHT_MIB: '32' })).toThrow(
      /^ATTACHMENT_UPLOADS_IN_FLIGHT_MIB: must be at least 60 \(six times ATTACHMENT_MAX_MIB, 10\).*got 32$/,
    );
    expect(() => loadConfig({ ATTACHMENT_MAX_MIB: '2', ATTACHMENT_UPLOADS_IN_FLIGHT_MIB: '11' })).toThrow(
      /ATTACHMENT_UPLOADS_IN_FLIGHT_MIB: must be at least 12/,
    );
    for (const name of ['ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB', 'ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB']) {
      expect(() => loadConfig({ [name]: '9' })).toThrow(
        new RegExp(
          `^${name}: must be at least ATTACHMENT_MAX_MIB \\(10\\), so that the largest file can arrive, got 9$`,
        ),
      );
      expect(loadConfig({ ATTACHMENT_MAX_MIB: '4', [name]: '4' })).toBeDefined();
    }
    expect(() => loadConfig({ ATTACHMENT_UPLOAD_WAIT_MS: '31000' })).toThrow(
      /^ATTACHMENT_UPLOAD_WAIT_MS: must not exceed HTTP_REQUEST_TIMEOUT_SECONDS \(30 s\)/,
    );
    expect(loadConfig({ ATTACHMENT_UPLOAD_WAIT_MS: '0' }).attachmentUploadWaitMs).toBe(0);
  });

  it('reads AUDIT_SIGNING_KEY as a private Ed25519 JWK with a kid, and refuses anything else', () => {
    const key = { kty: 'OKP', crv: 'Ed25519', x: 'eA', d: 'ZA', kid: 'audit-1' };
    expect(loadConfig({ AUDIT_SIGNING_KEY: JSON.stringify(key) }).auditSigningKey).toEqual(key);
    expect(loadConfig({}).auditSigningKey).toBeUndefined();
    for (const bad of [
      'not json',
      JSON.stringify({ ...key, kid: undefined }),
      JSON.stringify({ ...key, d: undefined }),
      JSON.stringify({ ...key, crv: 'P-256', kty: 'EC' }),
    ]) {
      expect(() => loadConfig({ AUDIT_SIGNING_KEY: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ AUDIT_SIGNING_KEY: bad })).toThrow(/AUDIT_SIGNING_KEY/);
    }
  });

  it('reads AUDIT_PUBLIC_KEYS as public Ed25519 JWKs with kids, one or a JWKS, and refuses anything else', () => {
    const earlier = { kty: 'OKP', crv: 'Ed25519', x: 'eDE', kid: 'audit-0' };
    const older = { kty: 'OKP', crv: 'Ed25519', x: 'eDA', kid: 'audit-00' };
    expect(loadConfig({}).auditPublicKeys).toBeUndefined();
    expect(loadConfig({ AUDIT_PUBLIC_KEYS: JSON.stringify(earlier) }).auditPublicKeys).toEqual([earlier]);
    const both = { AUDIT_PUBLIC_KEYS: JSON.stringify({ keys: [earlier, older] }), AUDIT_SIGNING_KEY };
    expect(loadConfig(both).auditPublicKeys).toEqual([earlier, older]);
    // The current key's public half may be listed too; the doctor shows the kids.
    const current = { kty: 'OKP', crv: 'Ed25519', x: AUDIT_KEY.x, kid: AUDIT_KEY.kid };
    const withCurrent = loadConfig({
      AUDIT_PUBLIC_KEYS: JSON.stringify({ keys: [current] }),
      AUDIT_SIGNING_KEY,
    });
    expect(withCurrent.auditPublicKeys).toEqual([current]);
    for (const [bad, why] of [
      ['not json', /must be a JWK or a JWKS/],
      [JSON.stringify({ ...earlier, d: 'ZA' }), /public keys only/],
      [JSON.stringify({ ...earlier, kid: undefined }), /each with x and a kid/],
      [JSON.stringify({ ...earlier, crv: 'P-256', kty: 'EC' }), /public Ed25519 JWKs/],
      [JSON.stringify({ keys: [earlier, { ...older, kid: 'audit-0' }] }), /two keys with the kid "audit-0"/],
      [JSON.stringify({ ...earlier, kid: AUDIT_KEY.kid }), /the kid "audit-1" of AUDIT_SIGNING_KEY/],
    ] as const) {
      expect(() => loadConfig({ AUDIT_PUBLIC_KEYS: bad, AUDIT_SIGNING_KEY })).toThrow(ConfigError);
      expect(() => loadConfig({ AUDIT_PUBLIC_KEYS: bad, AUDIT_SIGNING_KEY })).toThrow(why);
      expect(() => loadConfig({ AUDIT_PUBLIC_KEYS: bad, AUDIT_SIGNING_KEY })).toThrow(/^AUDIT_PUBLIC_KEYS: /);
    }
  });

  it('refuses to start in production with no scanner, unless files are scanned before refhub', () => {
    const production = {
      NODE_ENV: 'production',
      QUEUE_BACKEND: 'postgres',
      EHR_URL: 'https://ehr.example.org/referrals',
      SESSION_SECRET: 's'.repeat(40),
      DATA_KEYS,
      AUDIT_SIGNING_KEY,
    };
    expect(() => loadConfig(production)).toThrow(
      /^ATTACHMENT_SCANNER: is required when NODE_ENV=production, so that no attachment is handed out unscanned; set ATTACHMENT_SCANNING=elsewhere/,
    );
    expect(loadConfig({ ...production, ATTACHMENT_SCANNER: 'clamd://clamav:3310' }).attachmentScanner).toBe(
      'clamd://clamav:3310',
    );
    expect(loadConfig({ ...production, ATTACHMENT_SCANNING: 'elsewhere' }).attachmentsScannedElsewhere).toBe(
      true,
    );
    // Development keeps attachments unscanned, and says so on every one.
    expect(loadConfig({}).attachmentScanner).toBeUndefined();
  });

  it('refuses a scanner together with scanning elsewhere', () => {
    expect(() =>
      loadConfig({ ATTACHMENT_SCANNER: 'clamd://clamav:3310', ATTACHMENT_SCANNING: 'elsewhere' }),
    ).toThrow(/^ATTACHMENT_SCANNING: must not be elsewhere while ATTACHMENT_SCANNER names a scanner/);
  });

  it('refuses an ATTACHMENT_SCANNER that is not a clamd address, naming it', () => {
    for (const bad of ['clamav.internal', 'http://clamav.internal:3310', 'clamd://a:b@clamav:3310']) {
      expect(() => loadConfig({ ATTACHMENT_SCANNER: bad })).toThrow(
        new ConfigError(
          'ATTACHMENT_SCANNER',
          `must be a clamd address such as clamd://clamav:3310, got "${bad}"`,
        ),
      );
    }
  });

  it('takes a queue prefix already in hash-tag form as it is', () => {
    expect(loadConfig({ QUEUE_PREFIX: '{shared}' }).queuePrefix).toBe('{shared}');
  });

  it('serves the API docs to anyone outside production, and only to ops keys in production', () => {
    expect(loadConfig({}).apiDocs).toBe('public');
    expect(loadConfig({ NODE_ENV: 'test' }).apiDocs).toBe('public');
    const production = {
      NODE_ENV: 'production',
      QUEUE_BACKEND: 'postgres',
      EHR_URL: 'https://ehr.example.org/referrals',
      SESSION_SECRET: 's'.repeat(40),
      DATA_KEYS,
      AUDIT_SIGNING_KEY,
      ATTACHMENT_SCANNING: 'elsewhere',
    };
    expect(loadConfig(production).apiDocs).toBe('ops');
    expect(loadConfig({ ...production, API_DOCS: 'off' }).apiDocs).toBe('off');
    expect(loadConfig({ ...production, API_DOCS: 'public' }).apiDocs).toBe('public');
  });

  it('needs an https EHR_URL in production, where the sandbox EHR is off', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      /^ {2}EHR_URL: is required when NODE_ENV=production \(the sandbox EHR is off\)$/m,
    );
    expect(() =>
      loadConfig({ NODE_ENV: 'production', QUEUE_BACKEND: 'postgres', EHR_URL: 'http://ehr.example/x' }),
    ).toThrow(/^EHR_URL: must use https:/);
    expect(loadConfig({ EHR_URL: 'http://127.0.0.1:4010/ehr/referrals' }).ehrUrl).toBe(
      'http://127.0.0.1:4010/ehr/referrals',
    );
  });

  it('refuses in production an EHR_URL that reaches a non-public address, unless it is allowed', async () => {
    const production = {
      NODE_ENV: 'production',
      QUEUE_BACKEND: 'postgres',
      SESSION_SECRET: 's'.repeat(32),
      DATA_KEYS,
      AUDIT_SIGNING_KEY,
      ATTACHMENT_SCANNING: 'elsewhere',
    };
    const loopback = loadConfig({ ...production, EHR_URL: 'https://127.0.0.1:9/ehr' });
    await expect(checkEhrAddress(loopback)).rejects.toThrow(
      /^EHR_URL: must reach a public address in production: 127\.0\.0\.1 is a loopback address\. .*EHR_ALLOWED_ADDRESSES/,
    );
    const metadata = loadConfig({ ...production, EHR_URL: 'https://169.254.169.254/' });
    await expect(checkEhrAddress(metadata)).rejects.toThrow(/169\.254\.169\.254 is a link-local address/);
    const named = loadConfig({
      ...production,
      EHR_URL: 'https://ehr.link/',
      EHR_ALLOWED_ADDRESSES: 'ehr.link',
    });
    await expect(checkEhrAddress(named, () => Promise.resolve(['10.9.8.7']))).resolves.toBeUndefined();
    const other = loadConfig({
      ...production,
      EHR_URL: 'https://ehr.link/',
      EHR_ALLOWED_ADDRESSES: ' [::1], 10.9.8.6 ',
    });
    expect([...other.ehrAllowedAddresses]).toEqual(['::1', '10.9.8.6']);
    await expect(checkEhrAddress(other, () => Promise.resolve(['10.9.8.7']))).rejects.toThrow(
      /resolves to 10\.9\.8\.7, a private address/,
    );
    const publicHost = loadConfig({ ...production, EHR_URL: 'https://ehr.example.org/' });
    await expect(
      checkEhrAddress(publicHost, () => Promise.resolve(['203.0.114.5'])),
    ).resolves.toBeUndefined();
    // Outside production a local EHR is the normal case.
    await expect(checkEhrAddress(loadConfig({ EHR_URL: 'http://127.0.0.1:4010/' }))).resolves.toBeUndefined();
  });

  it.each([
    ['PORT', 'abc', /PORT: must be a whole number/],
    ['PORT', '70000', /PORT: must be between 0 and 65535/],
    ['PUBLIC_URL', 'not a url', /PUBLIC_URL: is not a valid URL/],
    ['PUBLIC_URL', 'ftp://x', /PUBLIC_URL: must use http: or https:/],
    ['DATABASE_URL', 'mysql://x/y', /DATABASE_URL: must use postgres: or postgresql:/],
    ['LINK_TTL_SECONDS', '5', /LINK_TTL_SECONDS: must be between 30 and 86400/],
    ['RATE_LIMIT_PER_MINUTE', '-1', /RATE_LIMIT_PER_MINUTE: must be a whole number/],
    ['RATE_LIMIT_PER_SECOND', 'ten', /RATE_LIMIT_PER_SECOND: must be a number such as 10 or 0.5/],
    ['RATE_LIMIT_PER_SECOND', '0', /RATE_LIMIT_PER_SECOND: must be between 0.001 and 100000/],
    ['RATE_LIMIT_BURST', '0', /RATE_LIMIT_BURST: must be between 1 and 1000000/],
    ['RATE_LIMIT_BURST', '2.5', /RATE_LIMIT_BURST: must be a whole number/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL: must be one of/],
    ['REDIS_URL', 'http://redis:6379', /REDIS_URL: must use redis: or rediss:/],
    ['QUEUE_PREFIX', 'a b', /QUEUE_PREFIX: must be 1 to 64 of/],
    ['QUEUE_PREFIX', '{x}y}', /QUEUE_PREFIX: must be 1 to 64 of/],
    ['EHR_URL', 'ftp://ehr', /EHR_URL: must use http: or https:/],
    ['EHR_MAX_ATTEMPTS', '0', /EHR_MAX_ATTEMPTS: must be between 1 and 100/],
    ['EHR_BACKOFF_BASE_MS', '1.5', /EHR_BACKOFF_BASE_MS: must be a whole number/],
    ['REMINDER_AFTER_SECONDS', '0', /REMINDER_AFTER_SECONDS: must be between 1 and/],
    ['REMINDER_INTERVAL_SECONDS', 'soon', /REMINDER_INTERVAL_SECONDS: must be a whole number/],
    ['REMINDER_MAX', '101', /REMINDER_MAX: must be between 0 and 100/],
    ['RECONCILE_INTERVAL_SECONDS', '0', /RECONCILE_INTERVAL_SECONDS: must be between 1 and/],
    ['WAIT_TIMES_WINDOW_DAYS', '0', /WAIT_TIMES_WINDOW_DAYS: must be between 1 and 3650, got 0/],
    ['WAIT_TIMES_WINDOW_DAYS', 'half a year', /WAIT_TIMES_WINDOW_DAYS: must be a whole number/],
    ['WAIT_TIMES_MIN_REFERRALS', '1', /WAIT_TIMES_MIN_REFERRALS: must be between 5 and 100000, got 1/],
    [
      'WAIT_TIMES_AT',
      '2am',
      /WAIT_TIMES_AT: must be a time of day as HH:MM on a 24-hour clock, such as 02:00, got "2am"/,
    ],
    ['WAIT_TIMES_AT', '24:00', /WAIT_TIMES_AT: must be a time of day as HH:MM/],
    ['OPS_DASHBOARD_WRITE', 'yes', /OPS_DASHBOARD_WRITE: must be one of true, false/],
    ['METRICS_TOKEN', 'short', /METRICS_TOKEN: must be at least 32 characters/],
    ['SHUTDOWN_GRACE_SECONDS', '0', /SHUTDOWN_GRACE_SECONDS: must be between 1 and 600/],
    ['NODE_ENV', 'prod', /NODE_ENV: must be one of development, production, test, got "prod"/],
    ['NODE_ENV', 'Production', /NODE_ENV: must be one of development, production, test/],
    ['EHR_ATTEMPT_TIMEOUT_SECONDS', '0', /EHR_ATTEMPT_TIMEOUT_SECONDS: must be between 1 and 600/],
    ['API_DOCS', 'yes', /API_DOCS: must be one of public, ops, off/],
    ['DISPLAY_TIME_ZONE', 'Asia/Atlantis', /DISPLAY_TIME_ZONE: must be an IANA time zone/],
    ['DISPLAY_TIME_ZONE', 'SGT', /DISPLAY_TIME_ZONE: must be an IANA time zone/],
    ['DISPLAY_TIME_ZONE', '+08:00', /DISPLAY_TIME_ZONE: must be an IANA time zone/],
    ['HTTP_REQUEST_TIMEOUT_SECONDS', '0', /HTTP_REQUEST_TIMEOUT_SECONDS: must be between 1 and 600/],
    ['HTTP_HEADERS_TIMEOUT_SECONDS', 'soon', /HTTP_HEADERS_TIMEOUT_SECONDS: must be a whole number/],
    [
      'HTTP_HEADERS_TIMEOUT_SECONDS',
      '31',
      /HTTP_HEADERS_TIMEOUT_SECONDS: must not exceed HTTP_REQUEST_TIMEOUT_SECONDS \(30\)/,
    ],
    ['ATTACHMENT_SCANNING', 'off', /ATTACHMENT_SCANNING: must be one of refhub, elsewhere, got "off"/],
    ['ATTACHMENT_MAX_MIB', '11', /ATTACHMENT_MAX_MIB: must be between 1 and 10/],
    ['ATTACHMENTS_PER_REFERRAL', '0', /ATTACHMENTS_PER_REFERRAL: must be between 1 and 100/],
    [
      'ATTACHMENT_TYPES',
      'pdf,exe',
      /ATTACHMENT_TYPES: must list one or more of pdf, jpeg, png, tiff, text, docx, comma-separated, got "pdf,exe"/,
    ],
    ['ATTACHMENT_TYPES', ' , ', /ATTACHMENT_TYPES: must list one or more of/],
    ['ATTACHMENT_UPLOADS_IN_FLIGHT_MIB', '0', /ATTACHMENT_UPLOADS_IN_FLIGHT_MIB: must be between 1/],
    [
      'ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB',
      '0',
      /ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB: must be between 1/,
    ],
    [
      'ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB',
      'x',
      /ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB: must be a whole/,
    ],
    ['ATTACHMENT_UPLOAD_WAIT_MS', '60001', /ATTACHMENT_UPLOAD_WAIT_MS: must be between 0 and 60000/],
    [
      'HTTP_KEEP_ALIVE_TIMEOUT_SECONDS',
      '3601',
      /HTTP_KEEP_ALIVE_TIMEOUT_SECONDS: must be between 1 and 3600/,
    ],
  ])('rejects %s=%s with a message naming the variable', (name, value, message) => {
    const load = () => loadConfig({ [name]: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(message);
  });

  it('takes the rate limit a second with a burst, or the older RATE_LIMIT_PER_MINUTE, never both', () => {
    expect(loadConfig({ RATE_LIMIT_PER_SECOND: '2.5', RATE_LIMIT_BURST: '20' })).toMatchObject({
      rateLimitPerSecond: 2.5,
      rateLimitBurst: 20,
    });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '120', RATE_LIMIT_BURST: '10' })).toMatchObject({
      rateLimitPerSecond: 2,
      rateLimitBurst: 10,
    });
    const both = () => loadConfig({ RATE_LIMIT_PER_MINUTE: '120', RATE_LIMIT_PER_SECOND: '2' });
    expect(both).toThrow(ConfigError);
    expect(both).toThrow(/RATE_LIMIT_PER_MINUTE: is the older form of RATE_LIMIT_PER_SECOND/);
  });

  it('puts the queues in the database unless Redis is chosen, and makes production choose', () => {
    expect(loadConfig({}).queueBackend).toBe('postgres');
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).queueBackend).toBe('redis');
    expect(loadConfig({ QUEUE_BACKEND: 'redis' }).queueBackend).toBe('redis');
    expect(loadConfig({ QUEUE_BACKEND: 'postgres', REDIS_URL: 'redis://127.0.0.1:6379' }).queueBackend).toBe(
      'postgres',
    );
    expect(() => loadConfig({ QUEUE_BACKEND: 'kafka' })).toThrow(
      /^QUEUE_BACKEND: must be one of postgres, redis, got "kafka"/,
    );
    const production = {
      NODE_ENV: 'production',
      EHR_URL: 'https://ehr.example/fhir',
      SESSION_SECRET: 's'.repeat(40),
      DATA_KEYS,
      AUDIT_SIGNING_KEY,
      ATTACHMENT_SCANNING: 'elsewhere',
    };
    expect(() => loadConfig(production)).toThrow(/^QUEUE_BACKEND: is required when NODE_ENV=production/);
    expect(() => loadConfig({ ...production, QUEUE_BACKEND: 'redis' })).toThrow(
      /^REDIS_URL: is required when QUEUE_BACKEND=redis/,
    );
    expect(loadConfig({ ...production, QUEUE_BACKEND: 'postgres' }).queueBackend).toBe('postgres');
    expect(loadConfig({ ...production, REDIS_URL: 'redis://127.0.0.1:6379' }).queueBackend).toBe('redis');
  });
});

describe('a production start', () => {
  it('names every setting it lacks at once, each on a line of its own, not one per restart', () => {
    let error: unknown;
    try {
      loadConfig({ NODE_ENV: 'production' });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as Error).message.split('\n');
    const names = [
      'EHR_URL',
      'DATA_KEYS',
      'SESSION_SECRET',
      'AUDIT_SIGNING_KEY',
      'ATTACHMENT_SCANNER',
      'QUEUE_BACKEND',
    ];
    expect(lines[0]).toBe(`${names.join(', ')}: are required when NODE_ENV=production, and missing:`);
    expect(
      lines.slice(1).map((line) => /^ {2}([A-Z_]+): is required when NODE_ENV=production/.exec(line)?.[1]),
    ).toEqual(names);
  });
});

describe('the ops webhook', () => {
  const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

  it('takes a URL with its secret, and a sweep interval', () => {
    const config = loadConfig({
      OPS_WEBHOOK_URL: 'https://ops.example.org/refhub',
      OPS_WEBHOOK_SECRET: secret,
      INCIDENT_SWEEP_SECONDS: '30',
    });
    expect(config.opsWebhookUrl).toBe('https://ops.example.org/refhub');
    expect(config.opsWebhookSecret).toBe(secret);
    expect(config.incidentSweepSeconds).toBe(30);
    expect(loadConfig({}).incidentSweepSeconds).toBe(60);
  });

  it('refuses a URL without a secret, and a secret that is not a webhook secret, naming the variable', () => {
    expect(() => loadConfig({ OPS_WEBHOOK_URL: 'https://ops.example.org/refhub' })).toThrow(
      /OPS_WEBHOOK_SECRET.*must be set with OPS_WEBHOOK_URL/,
    );
    for (const bad of ['not-a-secret', 'whsec_c2hvcnQ=', `whsec_${'!'.repeat(44)}`]) {
      expect(() =>
        loadConfig({ OPS_WEBHOOK_URL: 'https://ops.example.org/refhub', OPS_WEBHOOK_SECRET: bad }),
      ).toThrow(/OPS_WEBHOOK_SECRET/);
    }
    expect(() =>
      loadConfig({ OPS_WEBHOOK_URL: 'ftp://ops.example.org/', OPS_WEBHOOK_SECRET: secret }),
    ).toThrow(/OPS_WEBHOOK_URL/);
  });
});
