// The only reader of process.env. Every setting is parsed and validated once at start; a bad or
// missing value stops the process with a message that names the variable (contract §12).
import path from 'node:path';
import {
  ATTACHMENT_TYPE_NAMES,
  MAX_ATTACHMENT_BYTES,
  clamdAddressText,
  parseClamdAddress,
  type AttachmentType,
} from './domain/attachments.ts';
import { DEFAULT_DISPLAY_TIME_ZONE, isDisplayTimeZone } from './domain/display-time.ts';
import { parseKeyEncryptionKeys, type LocalKeyEncryptionKey } from './domain/key-ring.ts';
import { DEFAULT_RATE_LIMIT, RATE_LIMIT_BOUNDS } from './domain/rate-limits.ts';
import {
  parseAuditPublicKeys,
  parseAuditSigningKey,
  type AuditPublicKey,
  type AuditSigningKey,
} from './domain/audit-keys.ts';

export type { AuditPublicKey, AuditSigningKey };

export interface Config {
  readonly env: 'production' | 'development' | 'test';
  readonly port: number;
  readonly host: string;
  readonly publicUrl: string;
  readonly databaseUrl: string | undefined;
  /**
   * Keep statements prepared on each PostgreSQL connection, so each is planned once (db/database.ts).
   * Off only behind a PgBouncer in transaction mode that cannot keep prepared statements.
   */
  readonly databasePreparedStatements: boolean;
  readonly dataDir: string;
  /**
   * The key-encryption keys that wrap the data keys patient data is sealed with (DATA_KEYS), the
   * first active; or the file that holds them (DATA_KEYS_FILE). Outside production, with neither set,
   * a key file is made in DATA_DIR on first start.
   */
  readonly dataKeys: readonly LocalKeyEncryptionKey[] | undefined;
  readonly dataKeysFile: string | undefined;
  /**
   * How often each process looks for a data key made since it last looked (`refhub data-keys
   * rotate`), which waits twice this long before its last passes. Every process must have the same.
   */
  readonly dataKeyRefreshSeconds: number;
  readonly linkTtlSeconds: number;
  readonly catalogFile: string | undefined;
  /**
   * Each client's sustained rate limit, requests a second, unless the operator gave it its own
   * (domain/rate-limits.ts). From RATE_LIMIT_PER_SECOND, or the older RATE_LIMIT_PER_MINUTE ÷ 60.
   */
  readonly rateLimitPerSecond: number;
  /**
   * The requests a client may send at once above its rate (its bucket's size): RATE_LIMIT_BURST; with
   * the older RATE_LIMIT_PER_MINUTE alone, that number, as its one-minute window allowed at once.
   */
  readonly rateLimitBurst: number;
  /** The older RATE_LIMIT_PER_MINUTE as set, which the two above were read from; undefined when unset. */
  readonly rateLimitPerMinute: number | undefined;
  /**
   * MiB of answers one process has handed to Node and not yet to the network (a slow client's);
   * a read whose answer does not fit is answered 503 (api/response-budget.ts).
   */
  readonly responsesInFlightMib: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /**
   * Where the queues are: `postgres`, in the installation's own database (BullMQ's PostgreSQL
   * backend), or `redis`, at REDIS_URL. Unset, it is `redis` when REDIS_URL (or a cluster, or
   * Sentinel) is set and `postgres` otherwise; production without one must say which.
   */
  readonly queueBackend: (typeof QUEUE_BACKENDS)[number];
  /**
   * One Redis server; with a cluster or Sentinel, only its credentials and TLS (`rediss:`) are used
   * (queue/connections.ts, `redisTopologyOf`).
   */
  readonly redisUrl: string;
  /** REDIS_CLUSTER_NODES: `host:port` of some nodes of a Redis Cluster, which tell the rest. */
  readonly redisClusterNodes: readonly string[] | undefined;
  /** REDIS_SENTINELS: `host:port` of the Sentinels that watch the primary named REDIS_SENTINEL_NAME. */
  readonly redisSentinels: readonly string[] | undefined;
  readonly redisSentinelName: string | undefined;
  readonly redisSentinelPassword: string | undefined;
  /**
   * The installation's BullMQ prefix in hash-tag form (`{refhub}`): the tag of its claim, and where
   * queues of releases before per-queue tags were. Each queue's keys are under a tag of their own,
   * `{refhub:<queue>}` (queue/backend.ts, `queueKeyPrefix`), so a Redis Cluster spreads the queues.
   */
  readonly queuePrefix: string;
  /** Unset outside production: the built-in sandbox EHR serves in-process. */
  readonly ehrUrl: string | undefined;
  readonly ehrToken: string | undefined;
  /**
   * Hosts or IP addresses that EHR_URL may reach in production although they are not public (a
   * national EHR on a private link). Anything else loopback, private or link-local is refused.
   */
  readonly ehrAllowedAddresses: ReadonlySet<string>;
  readonly ehrMaxAttempts: number;
  /** The first retry waits about this long; each later one doubles it (with jitter), up to 15 minutes. */
  readonly ehrBackoffBaseMs: number;
  /** The overall deadline of one attempt to deliver a form, from connecting to the answer's last byte. */
  readonly ehrAttemptTimeoutSeconds: number;
  /** The EHR's circuit: failures in a row (within the window) that pause forwarding; 0 never pauses. */
  readonly ehrCircuitFailures: number;
  readonly ehrCircuitWindowSeconds: number;
  /** The first probe of an open circuit waits this long; each failed probe doubles it, to 10 minutes. */
  readonly ehrCircuitProbeSeconds: number;
  /**
   * MiB of EHR forms one process's forward jobs hold at once (four bytes per byte of form, for its
   * copies in flight); a job whose form does not fit waits its turn (workers/forwarding/form-budget.ts).
   */
  readonly ehrFormsInFlightMib: number;
  readonly reminderAfterSeconds: number;
  readonly reminderIntervalSeconds: number;
  readonly reminderMax: number;
  /** How often refhub looks for referrals whose triage passed its due time (referral.triage-overdue). */
  readonly triageOverdueSweepSeconds: number;
  /** How often the reconciler repairs queue state from the database. */
  readonly reconcileIntervalSeconds: number;
  /** The offerings' wait times count the referrals first submitted this many days back. */
  readonly waitTimesWindowDays: number;
  /** No wait-time figure is given from fewer referrals than this, so that none points at a patient. */
  readonly waitTimesMinReferrals: number;
  /** When the wait times are recomputed each day (`HH:MM`, in DISPLAY_TIME_ZONE). */
  readonly waitTimesAt: string;
  /** The queue dashboard may retry, promote and remove jobs. */
  readonly opsDashboardWrite: boolean;
  /**
   * Whether the API takes the API keys of senders and providers (`Authorization: ApiKey …`). An
   * installation whose clients all sign their credentials (POST /oauth2/token) refuses them with
   * false; ops keys, refhub's operators' own, keep working.
   */
  readonly acceptApiKeys: boolean;
  /**
   * Signs the audit trail's checkpoints (docs/security.md): a private Ed25519 JWK with a `kid`, kept
   * out of the database, so that whoever can rewrite the database cannot sign new heads. Required in
   * production; unset outside it, the checkpoints are recorded unsigned and `refhub audit verify` says
   * so.
   */
  readonly auditSigningKey: AuditSigningKey | undefined;
  /**
   * The public keys AUDIT_SIGNING_KEY had before a rotation (a public Ed25519 JWK with a `kid`, or a
   * JWKS of them): `refhub audit verify` checks the checkpoints they signed with them, and an export
   * carries them. Public halves only, so not a secret; unset, only the current key's checkpoints verify.
   */
  readonly auditPublicKeys: readonly AuditPublicKey[] | undefined;
  /** How often the audit trail's new rows are chained and a checkpoint written. */
  readonly auditSealIntervalSeconds: number;
  /**
   * Signs the web form's session cookies; every API process must share it. Unset outside production:
   * the installation generates one and keeps it in its database.
   */
  readonly sessionSecret: string | undefined;
  /** A bearer token Prometheus may scrape /metrics with, besides an ops API key. */
  readonly metricsToken: string | undefined;
  /** How long a stopping process waits for requests and jobs in flight before it gives up. */
  readonly shutdownGraceSeconds: number;
  /** Who may read `/docs` and `/openapi.json`: anyone, ops keys only, or nobody (not served). */
  readonly apiDocs: 'public' | 'ops' | 'off';
  /**
   * The IANA time zone of every time a person reads (the EHR form, the web form and its pages). The
   * API keeps ISO 8601 UTC. Every process of an installation must share it: the EHR form's bytes
   * depend on it.
   */
  readonly displayTimeZone: string;
  /**
   * How long a client has to send a whole request (headers and body), and its headers alone; and how
   * long an idle kept-alive connection stays open (docs/operations.md, "Timeouts").
   */
  readonly httpRequestTimeoutSeconds: number;
  readonly httpHeadersTimeoutSeconds: number;
  readonly httpKeepAliveTimeoutSeconds: number;
  /** How long referral events stay in the feed, in days. */
  readonly eventRetentionDays: number;
  /**
   * Whole months each partitioned table keeps before retention archives and drops a month
   * (services/retention/): the audit trail (at least 72, six years), the event feed, webhook
   * attempts and the forwarding ledger (by default as long as the audit trail).
   */
  readonly retentionAuditMonths: number;
  readonly retentionEventsMonths: number;
  readonly retentionWebhookAttemptsMonths: number;
  readonly retentionLedgerMonths: number;
  /** Where retention writes its archives, one directory per month of a table. */
  readonly retentionArchiveDir: string;
  /** How often the scheduled retention run fires. */
  readonly retentionSweepSeconds: number;
  /**
   * A referral in a final status untouched for this many months is archived: its record written to
   * an archive in RETENTION_ARCHIVE_DIR, its clinical content then purged (docs/operations.md,
   * "Archiving referrals").
   */
  readonly referralArchiveAfterMonths: number;
  /**
   * The waits before each retry of a webhook delivery, in milliseconds (the first attempt is
   * immediate); its length is the number of retries.
   */
  readonly webhookRetryScheduleMs: readonly number[];
  /** The deadline of one webhook delivery, from connecting to the answer's last byte. */
  readonly webhookAttemptTimeoutSeconds: number;
  /** A subscription whose deliveries have failed without a success for this long is disabled. */
  readonly webhookDisableAfterSeconds: number;
  /**
   * Hosts and IP addresses a webhook URL may point to even though they are not public (production
   * refuses loopback, private and link-local addresses otherwise).
   */
  readonly webhookAllowedAddresses: ReadonlySet<string>;
  /**
   * Where refhub sends its ops webhooks: one signed event when an incident opens and one when it
   * resolves (docs/operations.md, "Alerts"). Without it incidents are kept and shown, and none is sent.
   */
  readonly opsWebhookUrl: string | undefined;
  /** The Standard Webhooks secret (`whsec_…`) the ops webhooks are signed with; set with the URL. */
  readonly opsWebhookSecret: string | undefined;
  /** How often refhub looks at the conditions an operator must act on (the incident sweep). */
  readonly incidentSweepSeconds: number;
  /**
   * Where ClamAV's daemon scans attachments, as `clamd://host:port`; without it no attachment is
   * scanned by refhub.
   */
  readonly attachmentScanner: string | undefined;
  /** The deadline of one scan, from connecting to the scanner's answer. */
  readonly attachmentScanTimeoutSeconds: number;
  /**
   * Attachments are scanned before they reach refhub (a gateway, a scanning proxy), so refhub may
   * keep them unscanned in production. Without it, production refuses to start with no scanner.
   */
  readonly attachmentsScannedElsewhere: boolean;
  /** The largest attachment accepted, in bytes. */
  readonly attachmentMaxBytes: number;
  /** How many attachments a referral may hold. */
  readonly attachmentsPerReferral: number;
  /** The types an attachment may have, detected from its bytes. */
  readonly attachmentTypes: ReadonlySet<AttachmentType>;
  /**
   * MiB uploads may hold in one API process at once (api/upload-budget.ts): bodies as they arrive,
   * and five times a body while it is checked and stored. Five times ATTACHMENT_MAX_MIB of it is kept
   * for checking and storing; bodies arriving share the rest.
   */
  readonly attachmentUploadsInFlightMib: number;
  /**
   * MiB one credential's uploads, and one institution's, may claim at once, by the lengths they
   * declare (a body of no declared length claims ATTACHMENT_MAX_MIB).
   */
  readonly attachmentUploadsPerCredentialMib: number;
  readonly attachmentUploadsPerInstitutionMib: number;
  /** How long an upload waits for room before it is answered 503 with Retry-After. */
  readonly attachmentUploadWaitMs: number;
  /**
   * qpdf, which reads every PDF attachment whole before it is kept: a name looked up in PATH, or a
   * path. Production refuses to start when ATTACHMENT_TYPES lists pdf and it is not there.
   */
  readonly qpdfPath: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.variable = variable;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A number with a fractional part allowed (`0.5`, `10`), from `min` to `max`. */
function decimal(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+(\.\d+)?$/.test(raw))
    throw new ConfigError(name, `must be a number such as 10 or 0.5, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

/**
 * The default rate limit: RATE_LIMIT_PER_SECOND and RATE_LIMIT_BURST, or, for an installation that
 * still sets only the older RATE_LIMIT_PER_MINUTE, its number a minute (÷ 60 a second) with a burst
 * of that number, which its one-minute window allowed at once. Both rates at once are refused: which
 * one was meant cannot be told.
 */
function rateLimit(env: Env): Pick<Config, 'rateLimitPerSecond' | 'rateLimitBurst' | 'rateLimitPerMinute'> {
  const { perSecond, burst } = RATE_LIMIT_BOUNDS;
  const perMinute = read(env, 'RATE_LIMIT_PER_MINUTE');
  if (perMinute !== undefined && read(env, 'RATE_LIMIT_PER_SECOND') !== undefined) {
    throw new ConfigError(
      'RATE_LIMIT_PER_MINUTE',
      'is the older form of RATE_LIMIT_PER_SECOND: set one of them, not both (RATE_LIMIT_PER_SECOND with ' +
        'RATE_LIMIT_BURST is the current form)',
    );
  }
  if (perMinute !== undefined) {
    const minute = integer(env, 'RATE_LIMIT_PER_MINUTE', 0, 1, burst.max);
    return {
      rateLimitPerSecond: minute / 60,
      rateLimitBurst: integer(env, 'RATE_LIMIT_BURST', minute, burst.min, burst.max),
      rateLimitPerMinute: minute,
    };
  }
  return {
    rateLimitPerSecond: decimal(
      env,
      'RATE_LIMIT_PER_SECOND',
      DEFAULT_RATE_LIMIT.perSecond,
      perSecond.min,
      perSecond.max,
    ),
    rateLimitBurst: integer(env, 'RATE_LIMIT_BURST', DEFAULT_RATE_LIMIT.burst, burst.min, burst.max),
    rateLimitPerMinute: undefined,
  };
}

/**
 * The upload settings must leave room for the largest file: stored (five copies, kept apart from the
 * bodies arriving) and arriving (within the room for arriving bodies and within each share), or such
 * a file could never be taken. An upload waits for room within the time its request may take.
 */
function checkUploadRoom(config: Config): void {
  const maxMib = config.attachmentMaxBytes / (1024 * 1024);
  const least = 6 * maxMib;
  if (config.attachmentUploadsInFlightMib < least) {
    throw new ConfigError(
      'ATTACHMENT_UPLOADS_IN_FLIGHT_MIB',
      `must be at least ${least} (six times ATTACHMENT_MAX_MIB, ${maxMib}): five times the largest ` +
        'file is kept for checking and storing, and the rest must hold one arriving, got ' +
        String(config.attachmentUploadsInFlightMib),
    );
  }
  for (const [name, value] of [
    ['ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB', config.attachmentUploadsPerCredentialMib],
    ['ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB', config.attachmentUploadsPerInstitutionMib],
  ] as const) {
    if (value < maxMib) {
      throw new ConfigError(
        name,
        `must be at least ATTACHMENT_MAX_MIB (${maxMib}), so that the largest file can arrive, got ${value}`,
      );
    }
  }
  if (config.attachmentUploadWaitMs > config.httpRequestTimeoutSeconds * 1000) {
    throw new ConfigError(
      'ATTACHMENT_UPLOAD_WAIT_MS',
      `must not exceed HTTP_REQUEST_TIMEOUT_SECONDS (${config.httpRequestTimeoutSeconds} s): an upload ` +
        `waits for room while its request is arriving, got ${config.attachmentUploadWaitMs}`,
    );
  }
}

function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'is not a valid URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!(values as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${values.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function auditSigningKey(env: Env): AuditSigningKey | undefined {
  const raw = read(env, 'AUDIT_SIGNING_KEY');
  if (raw === undefined) return undefined;
  try {
    return parseAuditSigningKey(raw);
  } catch (error) {
    throw new ConfigError('AUDIT_SIGNING_KEY', (error as Error).message);
  }
}

function auditPublicKeys(env: Env, signingKey: AuditSigningKey | undefined): AuditPublicKey[] | undefined {
  const raw = read(env, 'AUDIT_PUBLIC_KEYS');
  if (raw === undefined) return undefined;
  try {
    return parseAuditPublicKeys(raw, signingKey);
  } catch (error) {
    throw new ConfigError('AUDIT_PUBLIC_KEYS', (error as Error).message);
  }
}

/** A secret given in the environment; never echoed in the error, which only names the rule. */
function keyEncryptionKeys(env: Env, name: string): LocalKeyEncryptionKey[] | undefined {
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  try {
    return parseKeyEncryptionKeys(raw);
  } catch (error) {
    throw new ConfigError(name, (error as Error).message);
  }
}

/**
 * OPS_WEBHOOK_URL (https in production) and OPS_WEBHOOK_SECRET, set together; the secret is a Standard
 * Webhooks one, `whsec_` and the base64 of at least 24 bytes (`refhub webhooks` makes them of 32).
 */
function opsWebhook(env: Env, mode: Config['env']): Pick<Config, 'opsWebhookUrl' | 'opsWebhookSecret'> {
  const opsWebhookUrl = url(env, 'OPS_WEBHOOK_URL', mode === 'production' ? ['https:'] : ['http:', 'https:']);
  const opsWebhookSecret = read(env, 'OPS_WEBHOOK_SECRET');
  if (opsWebhookUrl !== undefined && opsWebhookSecret === undefined) {
    throw new ConfigError('OPS_WEBHOOK_SECRET', 'must be set with OPS_WEBHOOK_URL, to sign its events');
  }
  if (opsWebhookSecret !== undefined) {
    const key = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(opsWebhookSecret)?.[1];
    if (key === undefined || Buffer.from(key, 'base64').length < 24) {
      throw new ConfigError(
        'OPS_WEBHOOK_SECRET',
        'must be `whsec_` and the base64 of at least 24 random bytes (as a webhook secret is)',
      );
    }
  }
  return { opsWebhookUrl, opsWebhookSecret };
}

function secret(env: Env, name: string, minLength: number): string | undefined {
  const raw = read(env, name);
  if (raw !== undefined && raw.length < minLength) {
    throw new ConfigError(name, `must be at least ${minLength} characters, got ${raw.length}`);
  }
  return raw;
}

/** A comma-separated list, each entry trimmed and lower-cased (host names and IP addresses). */
function list(env: Env, name: string): ReadonlySet<string> {
  const entries = (read(env, name) ?? '').split(',').map((entry) =>
    entry
      .trim()
      .toLowerCase()
      .replace(/^\[(.*)\]$/, '$1'),
  );
  return new Set(entries.filter((entry) => entry !== ''));
}

/** An IANA time zone name this runtime knows (`Asia/Singapore`); offsets like `+08:00` are refused. */
function timeZone(env: Env, name: string, fallback: string): string {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!isDisplayTimeZone(raw)) {
    throw new ConfigError(name, `must be an IANA time zone such as Asia/Singapore, got "${raw}"`);
  }
  return raw;
}

/**
 * The fewest referrals WAIT_TIMES_MIN_REFERRALS may ask for: a figure from fewer could let a reader
 * who knows of one or two referrals tell a patient's wait.
 */
export const MIN_WAIT_TIMES_REFERRALS = 5;

/** A time of day, `HH:MM` on a 24-hour clock (`02:00`, `23:30`). */
function timeOfDay(env: Env, name: string, fallback: string): string {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  if (!/^(?:[01]\d|2[0-3]):[0-5]\d$/.test(raw)) {
    throw new ConfigError(
      name,
      `must be a time of day as HH:MM on a 24-hour clock, such as 02:00, got "${raw}"`,
    );
  }
  return raw;
}

/** A comma-separated list of durations such as `5s,5m,30m,2h`: milliseconds each. */
function durations(env: Env, name: string, fallback: readonly number[]): readonly number[] {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const units: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length > 30) throw new ConfigError(name, `may list at most 30 durations, got ${parts.length}`);
  return parts.map((part) => {
    const match = /^(\d{1,9})(ms|s|m|h)$/.exec(part);
    const unit = match?.[2] === undefined ? undefined : units[match[2]];
    if (match?.[1] === undefined || unit === undefined) {
      throw new ConfigError(name, `must be durations such as 5s,5m,30m,2h (ms, s, m or h), got "${part}"`);
    }
    const ms = Number(match[1]) * unit;
    if (ms > 7 * 24 * 3_600_000) throw new ConfigError(name, `a wait may be at most 7 days, got "${part}"`);
    return ms;
  });
}

/** Svix's schedule after the first, immediate attempt: about a day and a half of retries in all. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The queue backends (QUEUE_BACKEND): queue/backend.ts. */
export const QUEUE_BACKENDS = ['postgres', 'redis'] as const;

export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  // Anything but these three stops the start: a typo such as `prod` must not turn production into
  // development, with demo keys and the sandbox EHR.
  const mode = oneOf(env, 'NODE_ENV', ['development', 'production', 'test'] as const, 'development');
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = read(env, 'HOST') ?? '127.0.0.1';
  const publicUrl = (url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://${host}:${port}`).replace(
    /\/+$/,
    '',
  );
  const signingKey = auditSigningKey(env);
  // Six years, HIPAA's horizon for the records that document compliance (docs/operations.md, "Retention").
  const auditMonths = integer(env, 'RETENTION_AUDIT_MONTHS', 72, 72, 1200);
  const redisUrl = url(env, 'REDIS_URL', ['redis:', 'rediss:']);
  const redis = redisTopology(env, redisUrl);
  const config: Config = {
    env: mode,
    port,
    host,
    publicUrl,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databasePreparedStatements:
      oneOf(env, 'DATABASE_PREPARED_STATEMENTS', ['true', 'false'], 'true') === 'true',
    dataDir: path.resolve(cwd, read(env, 'DATA_DIR') ?? 'data'),
    dataKeys: keyEncryptionKeys(env, 'DATA_KEYS'),
    dataKeysFile: optionalPath(cwd, read(env, 'DATA_KEYS_FILE')),
    dataKeyRefreshSeconds: integer(env, 'DATA_KEY_REFRESH_SECONDS', 30, 1, 3600),
    linkTtlSeconds: integer(env, 'LINK_TTL_SECONDS', 900, 30, 86_400),
    catalogFile: optionalPath(cwd, read(env, 'CATALOG_FILE')),
    ...rateLimit(env),
    responsesInFlightMib: integer(env, 'RESPONSES_IN_FLIGHT_MIB', 32, 1, 4096),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    queueBackend: oneOf(env, 'QUEUE_BACKEND', QUEUE_BACKENDS, redis.given ? 'redis' : 'postgres'),
    redisUrl: redisUrl ?? 'redis://127.0.0.1:6379',
    redisClusterNodes: redis.clusterNodes,
    redisSentinels: redis.sentinels,
    redisSentinelName: redis.sentinelName,
    redisSentinelPassword: redis.sentinelPassword,
    queuePrefix: queuePrefix(env),
    ehrUrl: url(env, 'EHR_URL', mode === 'production' ? ['https:'] : ['http:', 'https:']),
    ehrToken: read(env, 'EHR_TOKEN'),
    ehrAllowedAddresses: list(env, 'EHR_ALLOWED_ADDRESSES'),
    ehrMaxAttempts: integer(env, 'EHR_MAX_ATTEMPTS', 10, 1, 100),
    ehrBackoffBaseMs: integer(env, 'EHR_BACKOFF_BASE_MS', 2_000, 10, 600_000),
    ehrAttemptTimeoutSeconds: integer(env, 'EHR_ATTEMPT_TIMEOUT_SECONDS', 30, 1, 600),
    ehrCircuitFailures: integer(env, 'EHR_CIRCUIT_FAILURES', 10, 0, 10_000),
    ehrCircuitWindowSeconds: integer(env, 'EHR_CIRCUIT_WINDOW_SECONDS', 60, 1, 86_400),
    ehrCircuitProbeSeconds: integer(env, 'EHR_CIRCUIT_PROBE_SECONDS', 15, 1, 600),
    ehrFormsInFlightMib: integer(env, 'EHR_FORMS_IN_FLIGHT_MIB', 32, 1, 4096),
    reminderAfterSeconds: integer(env, 'REMINDER_AFTER_SECONDS', 86_400, 1, 31_536_000),
    reminderIntervalSeconds: integer(env, 'REMINDER_INTERVAL_SECONDS', 86_400, 1, 31_536_000),
    reminderMax: integer(env, 'REMINDER_MAX', 3, 0, 100),
    triageOverdueSweepSeconds: integer(env, 'TRIAGE_OVERDUE_SWEEP_SECONDS', 300, 1, 86_400),
    reconcileIntervalSeconds: integer(env, 'RECONCILE_INTERVAL_SECONDS', 60, 1, 86_400),
    waitTimesWindowDays: integer(env, 'WAIT_TIMES_WINDOW_DAYS', 180, 1, 3650),
    waitTimesMinReferrals: integer(env, 'WAIT_TIMES_MIN_REFERRALS', 10, MIN_WAIT_TIMES_REFERRALS, 100_000),
    waitTimesAt: timeOfDay(env, 'WAIT_TIMES_AT', '02:00'),
    opsDashboardWrite: oneOf(env, 'OPS_DASHBOARD_WRITE', ['true', 'false'], 'false') === 'true',
    acceptApiKeys: oneOf(env, 'ACCEPT_API_KEYS', ['true', 'false'], 'true') === 'true',
    auditSigningKey: signingKey,
    auditPublicKeys: auditPublicKeys(env, signingKey),
    auditSealIntervalSeconds: integer(env, 'AUDIT_SEAL_INTERVAL_SECONDS', 5, 1, 3600),
    sessionSecret: secret(env, 'SESSION_SECRET', 32),
    metricsToken: secret(env, 'METRICS_TOKEN', 32),
    shutdownGraceSeconds: integer(env, 'SHUTDOWN_GRACE_SECONDS', 20, 1, 600),
    apiDocs: oneOf(
      env,
      'API_DOCS',
      ['public', 'ops', 'off'] as const,
      mode === 'production' ? 'ops' : 'public',
    ),
    displayTimeZone: timeZone(env, 'DISPLAY_TIME_ZONE', DEFAULT_DISPLAY_TIME_ZONE),
    httpRequestTimeoutSeconds: integer(env, 'HTTP_REQUEST_TIMEOUT_SECONDS', 30, 1, 600),
    httpHeadersTimeoutSeconds: integer(env, 'HTTP_HEADERS_TIMEOUT_SECONDS', 10, 1, 600),
    httpKeepAliveTimeoutSeconds: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_SECONDS', 72, 1, 3600),
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
    retentionAuditMonths: auditMonths,
    retentionEventsMonths: integer(env, 'RETENTION_EVENTS_MONTHS', 36, 1, 1200),
    retentionWebhookAttemptsMonths: integer(env, 'RETENTION_WEBHOOK_ATTEMPTS_MONTHS', 3, 1, 1200),
    retentionLedgerMonths: integer(env, 'RETENTION_LEDGER_MONTHS', auditMonths, 1, 1200),
    retentionArchiveDir: path.resolve(cwd, read(env, 'RETENTION_ARCHIVE_DIR') ?? 'archive'),
    retentionSweepSeconds: integer(env, 'RETENTION_SWEEP_SECONDS', 86_400, 60, 31 * 86_400),
    referralArchiveAfterMonths: integer(env, 'REFERRAL_ARCHIVE_AFTER_MONTHS', 18, 1, 1200),
    webhookRetryScheduleMs: durations(env, 'WEBHOOK_RETRY_SCHEDULE', DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS),
    webhookAttemptTimeoutSeconds: integer(env, 'WEBHOOK_ATTEMPT_TIMEOUT_SECONDS', 15, 1, 120),
    webhookDisableAfterSeconds: integer(env, 'WEBHOOK_DISABLE_AFTER_SECONDS', 5 * 86_400, 1, 365 * 86_400),
    webhookAllowedAddresses: list(env, 'WEBHOOK_ALLOWED_ADDRESSES'),
    ...opsWebhook(env, mode),
    incidentSweepSeconds: integer(env, 'INCIDENT_SWEEP_SECONDS', 60, 1, 3600),
    attachmentScanner: scannerAddress(env, 'ATTACHMENT_SCANNER'),
    attachmentScanTimeoutSeconds: integer(env, 'ATTACHMENT_SCAN_TIMEOUT_SECONDS', 60, 1, 600),
    attachmentsScannedElsewhere:
      oneOf(env, 'ATTACHMENT_SCANNING', ['refhub', 'elsewhere'] as const, 'refhub') === 'elsewhere',
    attachmentMaxBytes:
      integer(env, 'ATTACHMENT_MAX_MIB', 10, 1, MAX_ATTACHMENT_BYTES / (1024 * 1024)) * 1024 * 1024,
    attachmentsPerReferral: integer(env, 'ATTACHMENTS_PER_REFERRAL', 20, 1, 100),
    attachmentTypes: attachmentTypes(env, 'ATTACHMENT_TYPES'),
    attachmentUploadsInFlightMib: integer(env, 'ATTACHMENT_UPLOADS_IN_FLIGHT_MIB', 80, 1, 4096),
    attachmentUploadsPerCredentialMib: integer(env, 'ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB', 16, 1, 4096),
    attachmentUploadsPerInstitutionMib: integer(env, 'ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB', 16, 1, 4096),
    attachmentUploadWaitMs: integer(env, 'ATTACHMENT_UPLOAD_WAIT_MS', 2_000, 0, 60_000),
    qpdfPath: program(cwd, read(env, 'QPDF_PATH') ?? 'qpdf'),
  };
  checkUploadRoom(config);
  // Node refuses a headers timeout longer than the whole request's: the headers are part of it.
  if (config.httpHeadersTimeoutSeconds > config.httpRequestTimeoutSeconds) {
    throw new ConfigError(
      'HTTP_HEADERS_TIMEOUT_SECONDS',
      `must not exceed HTTP_REQUEST_TIMEOUT_SECONDS (${config.httpRequestTimeoutSeconds})`,
    );
  }
  if (config.dataKeys !== undefined && config.dataKeysFile !== undefined) {
    throw new ConfigError(
      'DATA_KEYS_FILE',
      'cannot be set with DATA_KEYS: the key ring comes from one of them',
    );
  }
  if (config.attachmentScanner !== undefined && config.attachmentsScannedElsewhere) {
    throw new ConfigError(
      'ATTACHMENT_SCANNING',
      'must not be elsewhere while ATTACHMENT_SCANNER names a scanner: choose one',
    );
  }
  if (mode === 'production') {
    const missing = productionMissing(config, env);
    if (missing.length > 1) {
      throw new ConfigError(
        missing.map((m) => m.variable).join(', '),
        `are required when NODE_ENV=production, and missing:\n${missing.map((m) => `  ${m.message}`).join('\n')}`,
      );
    }
    const [only] = missing;
    if (only !== undefined) throw only;
  }
  return Object.freeze(config);
}

/**
 * The settings production requires that are not set, every one of them: a start names them all at
 * once, not one per restart.
 */
function productionMissing(config: Config, env: Env): ConfigError[] {
  const missing: ConfigError[] = [];
  if (config.ehrUrl === undefined) {
    missing.push(new ConfigError('EHR_URL', 'is required when NODE_ENV=production (the sandbox EHR is off)'));
  }
  if (config.dataKeys === undefined && config.dataKeysFile === undefined) {
    missing.push(
      new ConfigError(
        'DATA_KEYS',
        'is required when NODE_ENV=production (or DATA_KEYS_FILE): the keys that wrap the data keys ' +
          'patient data is sealed with, kept out of the database',
      ),
    );
  }
  if (config.sessionSecret === undefined) {
    missing.push(
      new ConfigError(
        'SESSION_SECRET',
        'is required when NODE_ENV=production: at least 32 characters, the same for every API process',
      ),
    );
  }
  if (config.auditSigningKey === undefined) {
    missing.push(
      new ConfigError(
        'AUDIT_SIGNING_KEY',
        'is required when NODE_ENV=production: the private Ed25519 key (a JWK with a kid, as JSON) that ' +
          "signs the audit trail's checkpoints, kept out of the database; make one with the command in " +
          'docs/operations.md, "The audit trail"',
      ),
    );
  }
  if (config.attachmentScanner === undefined && !config.attachmentsScannedElsewhere) {
    missing.push(
      new ConfigError(
        'ATTACHMENT_SCANNER',
        'is required when NODE_ENV=production, so that no attachment is handed out unscanned; set ' +
          'ATTACHMENT_SCANNING=elsewhere only if files are scanned before they reach refhub',
      ),
    );
  }
  const redisGiven =
    read(env, 'REDIS_URL') !== undefined ||
    config.redisClusterNodes !== undefined ||
    config.redisSentinels !== undefined;
  if (!redisGiven && read(env, 'QUEUE_BACKEND') === undefined) {
    missing.push(
      new ConfigError(
        'QUEUE_BACKEND',
        'is required when NODE_ENV=production without REDIS_URL: postgres (the queues in the ' +
          'database) or redis (with REDIS_URL); nothing is chosen for production by default',
      ),
    );
  } else if (!redisGiven && config.queueBackend === 'redis') {
    missing.push(
      new ConfigError(
        'REDIS_URL',
        'is required when QUEUE_BACKEND=redis and NODE_ENV=production (or REDIS_CLUSTER_NODES, or REDIS_SENTINELS)',
      ),
    );
  }
  return missing;
}

/** A clamd address, `clamd://host:port` or `host:port`, written back as `clamd://host:port`. */
function scannerAddress(env: Env, name: string): string | undefined {
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  const address = parseClamdAddress(raw);
  if (address === undefined) {
    throw new ConfigError(name, `must be a clamd address such as clamd://clamav:3310, got "${raw}"`);
  }
  return clamdAddressText(address);
}

/** A comma-separated list of attachment types; all of them when unset. */
function attachmentTypes(env: Env, name: string): ReadonlySet<AttachmentType> {
  const raw = read(env, name);
  if (raw === undefined) return new Set(ATTACHMENT_TYPE_NAMES);
  const named = raw
    .split(',')
    .map((entry) => entry.trim().toLowerCase())
    .filter((entry) => entry !== '');
  const unknown = named.filter((entry) => !(ATTACHMENT_TYPE_NAMES as readonly string[]).includes(entry));
  if (named.length === 0 || unknown.length > 0) {
    throw new ConfigError(
      name,
      `must list one or more of ${ATTACHMENT_TYPE_NAMES.join(', ')}, comma-separated, got "${raw}"`,
    );
  }
  return new Set(named as AttachmentType[]);
}

/**
 * Where Redis is: one server (REDIS_URL), a cluster (REDIS_CLUSTER_NODES), or the primary Sentinel
 * names (REDIS_SENTINELS and REDIS_SENTINEL_NAME, with REDIS_SENTINEL_PASSWORD when the Sentinels ask
 * for one). One of the three; a setting of one that is given without the rest of it is refused.
 */
function redisTopology(
  env: Env,
  redisUrl: string | undefined,
): {
  readonly given: boolean;
  readonly clusterNodes: readonly string[] | undefined;
  readonly sentinels: readonly string[] | undefined;
  readonly sentinelName: string | undefined;
  readonly sentinelPassword: string | undefined;
} {
  const clusterNodes = hostPorts(env, 'REDIS_CLUSTER_NODES');
  const sentinels = hostPorts(env, 'REDIS_SENTINELS');
  const sentinelName = read(env, 'REDIS_SENTINEL_NAME');
  const sentinelPassword = read(env, 'REDIS_SENTINEL_PASSWORD');
  if (clusterNodes !== undefined && sentinels !== undefined) {
    throw new ConfigError(
      'REDIS_CLUSTER_NODES',
      'and REDIS_SENTINELS name two ways to reach Redis; set one of them',
    );
  }
  if (sentinels !== undefined && sentinelName === undefined) {
    throw new ConfigError(
      'REDIS_SENTINEL_NAME',
      'is required with REDIS_SENTINELS: the name the Sentinels know the primary by (sentinel monitor <name> …)',
    );
  }
  if (sentinels === undefined) {
    for (const name of ['REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_PASSWORD']) {
      if (read(env, name) !== undefined)
        throw new ConfigError(name, 'is used only with REDIS_SENTINELS, which is not set');
    }
  }
  if (sentinelName !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(sentinelName)) {
    throw new ConfigError(
      'REDIS_SENTINEL_NAME',
      `must be 1 to 64 of A-Z a-z 0-9 _ . -, got "${sentinelName}"`,
    );
  }
  if (clusterNodes !== undefined && redisUrl !== undefined) {
    const database = new URL(redisUrl).pathname.replace(/^\//, '');
    if (database !== '' && database !== '0') {
      throw new ConfigError(
        'REDIS_URL',
        `names database ${database}, but a Redis Cluster has only database 0 (REDIS_CLUSTER_NODES is set)`,
      );
    }
  }
  return {
    given: redisUrl !== undefined || clusterNodes !== undefined || sentinels !== undefined,
    clusterNodes,
    sentinels,
    sentinelName,
    sentinelPassword,
  };
}

/** A comma-separated list of `host:port` (an IPv6 address in brackets), each read as a URL's host. */
function hostPorts(env: Env, name: string): readonly string[] | undefined {
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(`redis://${entry}`);
    } catch {
      parsed = undefined;
    }
    if (
      parsed === undefined ||
      parsed.hostname === '' ||
      parsed.port === '' ||
      parsed.host.toLowerCase() !== entry.toLowerCase() ||
      parsed.pathname !== ''
    ) {
      throw new ConfigError(name, `must list host:port, comma-separated, got "${entry}"`);
    }
  }
  if (entries.length === 0) throw new ConfigError(name, `must list host:port, comma-separated, got "${raw}"`);
  return entries;
}

/** `QUEUE_PREFIX` as given, wrapped in `{…}` so that Redis Cluster keeps each queue in one slot. */
function queuePrefix(env: Env): string {
  const raw = read(env, 'QUEUE_PREFIX') ?? 'refhub';
  const bare = /^\{(.*)\}$/.exec(raw)?.[1] ?? raw;
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(bare)) {
    throw new ConfigError('QUEUE_PREFIX', `must be 1 to 64 of A-Z a-z 0-9 _ . -, got "${raw}"`);
  }
  return `{${bare}}`;
}

/** A program: a name alone is looked up in PATH when it runs; anything with a slash is a path. */
function program(cwd: string, value: string): string {
  return value.includes('/') ? path.resolve(cwd, value) : value;
}

function optionalPath(cwd: string, value: string | undefined): string | undefined {
  return value === undefined ? undefined : path.resolve(cwd, value);
}

/**
 * A setting as a running process may show it to its operators (`GET /doctor`): its variable, and
 * its effective value unless it is a secret. A secret shows only whether it is set; a URL shows
 * without its password and without the values of its query parameters (`***` in their place).
 */
export interface SettingView {
  readonly variable: string;
  readonly secret: boolean;
  /** Whether the setting has a value (its default counts). */
  readonly set: boolean;
  /** The value, for a setting that is set and not secret. */
  readonly value?: string;
}

/**
 * How a setting is shown: its value as the variable takes it (`value`, or a function for a field kept
 * in another form, so that an operator reads back what they would write), without credentials (`url`),
 * or only as set or unset (`secret`).
 */
type Shown = 'value' | 'url' | 'secret' | ((value: never) => string);

const asMib = (bytes: number): string => String(bytes / (1024 * 1024));

/**
 * Every setting, its variable and how it may be shown. Keyed by every field of Config, so that a new
 * setting does not compile until someone has said whether it is a secret.
 */
const SHOWN: {
  readonly [K in keyof Config]-?: readonly [
    variable: string,
    shown: 'value' | 'url' | 'secret' | ((value: NonNullable<Config[K]>) => string),
  ];
} = {
  env: ['NODE_ENV', 'value'],
  port: ['PORT', 'value'],
  host: ['HOST', 'value'],
  publicUrl: ['PUBLIC_URL', 'url'],
  databaseUrl: ['DATABASE_URL', 'url'],
  databasePreparedStatements: ['DATABASE_PREPARED_STATEMENTS', 'value'],
  dataDir: ['DATA_DIR', 'value'],
  dataKeys: ['DATA_KEYS', 'secret'],
  dataKeysFile: ['DATA_KEYS_FILE', 'value'],
  dataKeyRefreshSeconds: ['DATA_KEY_REFRESH_SECONDS', 'value'],
  linkTtlSeconds: ['LINK_TTL_SECONDS', 'value'],
  catalogFile: ['CATALOG_FILE', 'value'],
  rateLimitPerSecond: ['RATE_LIMIT_PER_SECOND', 'value'],
  rateLimitBurst: ['RATE_LIMIT_BURST', 'value'],
  rateLimitPerMinute: ['RATE_LIMIT_PER_MINUTE', 'value'],
  responsesInFlightMib: ['RESPONSES_IN_FLIGHT_MIB', 'value'],
  logLevel: ['LOG_LEVEL', 'value'],
  queueBackend: ['QUEUE_BACKEND', 'value'],
  redisUrl: ['REDIS_URL', 'url'],
  redisClusterNodes: ['REDIS_CLUSTER_NODES', (nodes) => nodes.join(',')],
  redisSentinels: ['REDIS_SENTINELS', (sentinels) => sentinels.join(',')],
  redisSentinelName: ['REDIS_SENTINEL_NAME', 'value'],
  redisSentinelPassword: ['REDIS_SENTINEL_PASSWORD', 'secret'],
  queuePrefix: ['QUEUE_PREFIX', 'value'],
  ehrUrl: ['EHR_URL', 'url'],
  ehrToken: ['EHR_TOKEN', 'secret'],
  ehrAllowedAddresses: ['EHR_ALLOWED_ADDRESSES', 'value'],
  ehrMaxAttempts: ['EHR_MAX_ATTEMPTS', 'value'],
  ehrBackoffBaseMs: ['EHR_BACKOFF_BASE_MS', 'value'],
  ehrAttemptTimeoutSeconds: ['EHR_ATTEMPT_TIMEOUT_SECONDS', 'value'],
  ehrCircuitFailures: ['EHR_CIRCUIT_FAILURES', 'value'],
  ehrCircuitWindowSeconds: ['EHR_CIRCUIT_WINDOW_SECONDS', 'value'],
  ehrCircuitProbeSeconds: ['EHR_CIRCUIT_PROBE_SECONDS', 'value'],
  ehrFormsInFlightMib: ['EHR_FORMS_IN_FLIGHT_MIB', 'value'],
  reminderAfterSeconds: ['REMINDER_AFTER_SECONDS', 'value'],
  reminderIntervalSeconds: ['REMINDER_INTERVAL_SECONDS', 'value'],
  reminderMax: ['REMINDER_MAX', 'value'],
  triageOverdueSweepSeconds: ['TRIAGE_OVERDUE_SWEEP_SECONDS', 'value'],
  reconcileIntervalSeconds: ['RECONCILE_INTERVAL_SECONDS', 'value'],
  waitTimesWindowDays: ['WAIT_TIMES_WINDOW_DAYS', 'value'],
  waitTimesMinReferrals: ['WAIT_TIMES_MIN_REFERRALS', 'value'],
  waitTimesAt: ['WAIT_TIMES_AT', 'value'],
  opsDashboardWrite: ['OPS_DASHBOARD_WRITE', 'value'],
  acceptApiKeys: ['ACCEPT_API_KEYS', 'value'],
  auditSigningKey: ['AUDIT_SIGNING_KEY', 'secret'],
  auditPublicKeys: ['AUDIT_PUBLIC_KEYS', 'value'],
  auditSealIntervalSeconds: ['AUDIT_SEAL_INTERVAL_SECONDS', 'value'],
  sessionSecret: ['SESSION_SECRET', 'secret'],
  metricsToken: ['METRICS_TOKEN', 'secret'],
  shutdownGraceSeconds: ['SHUTDOWN_GRACE_SECONDS', 'value'],
  apiDocs: ['API_DOCS', 'value'],
  displayTimeZone: ['DISPLAY_TIME_ZONE', 'value'],
  httpRequestTimeoutSeconds: ['HTTP_REQUEST_TIMEOUT_SECONDS', 'value'],
  httpHeadersTimeoutSeconds: ['HTTP_HEADERS_TIMEOUT_SECONDS', 'value'],
  httpKeepAliveTimeoutSeconds: ['HTTP_KEEP_ALIVE_TIMEOUT_SECONDS', 'value'],
  eventRetentionDays: ['EVENT_RETENTION_DAYS', 'value'],
  retentionAuditMonths: ['RETENTION_AUDIT_MONTHS', 'value'],
  retentionEventsMonths: ['RETENTION_EVENTS_MONTHS', 'value'],
  retentionWebhookAttemptsMonths: ['RETENTION_WEBHOOK_ATTEMPTS_MONTHS', 'value'],
  retentionLedgerMonths: ['RETENTION_LEDGER_MONTHS', 'value'],
  retentionArchiveDir: ['RETENTION_ARCHIVE_DIR', 'value'],
  retentionSweepSeconds: ['RETENTION_SWEEP_SECONDS', 'value'],
  referralArchiveAfterMonths: ['REFERRAL_ARCHIVE_AFTER_MONTHS', 'value'],
  webhookRetryScheduleMs: ['WEBHOOK_RETRY_SCHEDULE', 'value'],
  webhookAttemptTimeoutSeconds: ['WEBHOOK_ATTEMPT_TIMEOUT_SECONDS', 'value'],
  webhookDisableAfterSeconds: ['WEBHOOK_DISABLE_AFTER_SECONDS', 'value'],
  webhookAllowedAddresses: ['WEBHOOK_ALLOWED_ADDRESSES', 'value'],
  opsWebhookUrl: ['OPS_WEBHOOK_URL', 'url'],
  opsWebhookSecret: ['OPS_WEBHOOK_SECRET', 'secret'],
  incidentSweepSeconds: ['INCIDENT_SWEEP_SECONDS', 'value'],
  attachmentScanner: ['ATTACHMENT_SCANNER', 'value'],
  attachmentScanTimeoutSeconds: ['ATTACHMENT_SCAN_TIMEOUT_SECONDS', 'value'],
  attachmentsScannedElsewhere: ['ATTACHMENT_SCANNING', (elsewhere) => (elsewhere ? 'elsewhere' : 'refhub')],
  attachmentMaxBytes: ['ATTACHMENT_MAX_MIB', asMib],
  attachmentsPerReferral: ['ATTACHMENTS_PER_REFERRAL', 'value'],
  attachmentTypes: ['ATTACHMENT_TYPES', 'value'],
  attachmentUploadsInFlightMib: ['ATTACHMENT_UPLOADS_IN_FLIGHT_MIB', 'value'],
  attachmentUploadsPerCredentialMib: ['ATTACHMENT_UPLOADS_PER_CREDENTIAL_MIB', 'value'],
  attachmentUploadsPerInstitutionMib: ['ATTACHMENT_UPLOADS_PER_INSTITUTION_MIB', 'value'],
  attachmentUploadWaitMs: ['ATTACHMENT_UPLOAD_WAIT_MS', 'value'],
  qpdfPath: ['QPDF_PATH', 'value'],
};

/** A URL without what may be a credential: the password, and every query parameter's value. */
function urlWithoutSecrets(raw: string): string {
  const url = new URL(raw);
  if (url.password === '' && url.search === '' && url.hash === '') return raw;
  if (url.password !== '') url.password = '***';
  for (const name of new Set(url.searchParams.keys())) url.searchParams.set(name, '***');
  url.hash = '';
  return url.toString().replaceAll('%2A%2A%2A', '***');
}

/** Milliseconds as the WEBHOOK_RETRY_SCHEDULE syntax writes them: `300000` is `5m`. */
function duration(ms: number): string {
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

function text(value: Config[keyof Config]): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return String(value);
  if ('size' in value) return value.size === 0 ? undefined : [...value].join(',');
  // A key is shown as its ID only (it is a secret: only whether it is set is described).
  if ('kty' in value) return value.kid;
  return value
    .map((entry) =>
      typeof entry === 'number'
        ? duration(entry)
        : typeof entry === 'string'
          ? entry
          : 'kty' in entry
            ? entry.kid
            : entry.id,
    )
    .join(',');
}

/** The effective configuration, every setting in the order of Config, secrets as set or unset. */
export function describeConfig(config: Config): SettingView[] {
  return (Object.keys(SHOWN) as (keyof Config)[]).map((field) => {
    const [variable, shown] = SHOWN[field] as readonly [string, Shown];
    const raw = config[field];
    const value =
      typeof shown === 'function' && raw !== undefined
        ? (shown as (v: typeof raw) => string)(raw)
        : text(raw);
    if (value === undefined) return { variable, secret: shown === 'secret', set: false };
    if (shown === 'secret') return { variable, secret: true, set: true };
    return { variable, secret: false, set: true, value: shown === 'url' ? urlWithoutSecrets(value) : value };
  });
}

/**
 * The ops key `refhub doctor --server` presents when `--ops-key` gives none: REFHUB_OPS_KEY. An
 * operator's setting, not the service's: no refhub process reads it, so it is neither in Config nor
 * in .env.example.
 */
export function opsKeyFromEnv(env: Env = process.env): string | undefined {
  const raw = env.REFHUB_OPS_KEY?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
}
