// The only reader of process.env. Every setting is parsed and validated once at start; a bad or
// missing value stops the process with a message that names the variable (contract §12).
import path from 'node:path';

export interface Config {
  readonly env: 'production' | 'development' | 'test';
  readonly port: number;
  readonly host: string;
  readonly publicUrl: string;
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly linkTtlSeconds: number;
  readonly catalogFile: string | undefined;
  readonly rateLimitPerMinute: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  const nodeEnv = read(env, 'NODE_ENV');
  const mode: Config['env'] =
    nodeEnv === 'production' ? 'production' : nodeEnv === 'test' ? 'test' : 'development';
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = read(env, 'HOST') ?? '127.0.0.1';
  const publicUrl = (url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://${host}:${port}`).replace(
    /\/+$/,
    '',
  );
  const config: Config = {
    env: mode,
    port,
    host,
    publicUrl,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    dataDir: path.resolve(cwd, read(env, 'DATA_DIR') ?? 'data'),
    linkTtlSeconds: integer(env, 'LINK_TTL_SECONDS', 900, 30, 86_400),
    catalogFile: optionalPath(cwd, read(env, 'CATALOG_FILE')),
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 1200, 1, 1_000_000),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
  };
  return Object.freeze(config);
}

function optionalPath(cwd: string, value: string | undefined): string | undefined {
  return value === undefined ? undefined : path.resolve(cwd, value);
}
