// What an operator reads when the store cannot be opened, its schema is behind, or a migration fails:
// one line that names the place (host, port, database and user; never the password) and says what to
// do. PostgreSQL reports the usual mistakes by SQLSTATE (3D000 no such database, 28P01 wrong
// password, 28000 a role that may not connect) and Node by errno (ECONNREFUSED, ENOTFOUND, …); each
// gets its own advice. An error not recognised here is left to its caller, which throws it on: it is
// a defect, and its stack is wanted.

/** Where the store was to be opened: PostgreSQL at a URL, or embedded PGlite in a data directory. */
export type StorePlace =
  | { readonly engine: 'postgres'; readonly url: string }
  | { readonly engine: 'pglite'; readonly dataDir: string | undefined };

/** The store cannot be opened: the database, the server or the data directory is not as configured. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  /** The SQLSTATE or errno that told what went wrong (`3D000`, `ECONNREFUSED`, …), or `timeout`. */
  readonly code: string;
  constructor(message: string, code: string, cause: unknown) {
    super(message, { cause });
    this.code = code;
  }
}

/** The schema has migrations this refhub needs and the database has not: only `refhub migrate` adds them. */
export class SchemaBehindError extends Error {
  override readonly name = 'SchemaBehindError';
  readonly code = 'schema_behind';
  readonly pending: readonly string[];
  /** `pending` of the `known` migrations have not been applied. */
  constructor(pending: readonly string[], known: number) {
    const which = pending.length <= 3 ? pending.join(', ') : `${pending[0]} … ${pending[pending.length - 1]}`;
    const state =
      pending.length === known
        ? 'the database has no refhub schema yet'
        : `the database schema is behind this refhub: ${pending.length === 1 ? '1 migration is' : `${pending.length} migrations are`} pending (${which})`;
    super(
      `${state}. Run \`refhub migrate\` first (\`refhub all\`, \`api\` and \`worker\` also apply migrations as they start).`,
    );
    this.pending = pending;
  }
}

/**
 * A migration failed, and the run was rolled back (every pending migration runs in one transaction).
 * `byDatabase` says whether the database refused it (a SQLSTATE or a lost connection: the operator's
 * to fix) or refhub's own code threw (a defect, whose stack is wanted).
 */
export class MigrationFailedError extends Error {
  override readonly name = 'MigrationFailedError';
  readonly code = 'migration_failed';
  readonly migration: string | undefined;
  readonly byDatabase: boolean;
  constructor(migration: string | undefined, cause: unknown, place?: StorePlace) {
    const { code, message } = codeAndMessage(cause);
    const byDatabase = (code !== undefined && (SQLSTATE.test(code) || code in NETWORK)) || LOST.test(message);
    const what =
      migration === undefined ? 'migrating failed before any migration ran' : `migration ${migration} failed`;
    const owner = place?.engine === 'postgres' ? postgresPlace(place.url) : undefined;
    const advice =
      code === '42501' && owner !== undefined
        ? `: the user in DATABASE_URL may not change the schema; make it the database's owner (\`ALTER DATABASE ${quoted(owner.database)} OWNER TO ${quoted(owner.user ?? 'USER')}\`)`
        : /^corrupted migrations/.test(message)
          ? ': the database was migrated by another version of refhub; run that version, or a newer one'
          : '';
    super(
      `${what}: ${message}${code === undefined ? '' : ` (${code})`}${advice}. ` +
        'The run was rolled back: the schema is as it was before.',
      { cause },
    );
    this.migration = migration;
    this.byDatabase = byDatabase || advice !== '';
  }
}

const SQLSTATE = /^[0-9A-Z]{5}$/;
/** node-postgres tells of a connection lost or never made by its message alone. */
const LOST = /^(Connection terminated|timeout exceeded when trying to connect)/;

/** Node's errno codes of a connection that could not be made, and what they mean for the operator. */
const NETWORK: Readonly<Partial<Record<string, (at: string, host: string) => string>>> = {
  ECONNREFUSED: (at) =>
    `nothing accepts connections at ${at} (ECONNREFUSED): start PostgreSQL there, or correct the host and port in DATABASE_URL`,
  ENOTFOUND: (_at, host) =>
    `the host "${host}" of DATABASE_URL cannot be resolved (ENOTFOUND): correct the host, or check DNS`,
  EAI_AGAIN: (_at, host) =>
    `the host "${host}" of DATABASE_URL cannot be resolved now (EAI_AGAIN): check DNS, then try again`,
  EHOSTUNREACH: (at) =>
    `there is no route to ${at} (EHOSTUNREACH): check the network, or the host in DATABASE_URL`,
  ENETUNREACH: (at) =>
    `the network of ${at} is unreachable (ENETUNREACH): check the network, or the host in DATABASE_URL`,
  ETIMEDOUT: (at) => noAnswer(at, 'ETIMEDOUT'),
  ECONNRESET: (at) => ended(at, 'ECONNRESET'),
  EPIPE: (at) => ended(at, 'EPIPE'),
};

function noAnswer(at: string, code: string): string {
  return (
    `PostgreSQL at ${at} did not answer in time (${code}): check that it runs, that the host and port ` +
    'in DATABASE_URL are right, and that no firewall drops the connection'
  );
}

function ended(at: string, code: string): string {
  return (
    `the connection to ${at} ended before PostgreSQL answered (${code}): check that PostgreSQL listens ` +
    'on that port, and its log; a server that requires TLS needs sslmode in DATABASE_URL'
  );
}

/** Filesystem errno codes that mean DATA_DIR is not a directory refhub may use. */
const DATA_DIR_CODES = new Set(['EEXIST', 'ENOTDIR', 'EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'EISDIR']);

interface PostgresPlace {
  readonly host: string;
  readonly port: string;
  readonly database: string;
  readonly user: string | undefined;
  readonly password: string;
}

/** The parts of DATABASE_URL an operator needs to find the server, as node-postgres reads them. */
function postgresPlace(url: string): PostgresPlace {
  const u = new URL(url);
  const user = u.username === '' ? undefined : decodeURIComponent(u.username);
  const path = decodeURIComponent(u.pathname.replace(/^\//, ''));
  return {
    // A Unix socket is named by the `host` parameter, as libpq and node-postgres take it.
    host: u.searchParams.get('host') ?? (u.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost'),
    port: u.port || '5432',
    database: path === '' ? (user ?? 'postgres') : path,
    user,
    password: decodeURIComponent(u.password),
  };
}

/** A name as SQL and the shell both take it: bare when it is a plain identifier, else double-quoted. */
function quoted(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}

function codeAndMessage(error: unknown): { code: string | undefined; message: string } {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const { code } = e as { code?: unknown };
    if (typeof code === 'string') return { code, message: String((e as { message?: unknown }).message) };
  }
  return { code: undefined, message: error instanceof Error ? error.message : String(error) };
}

function postgresAdvice(error: unknown, place: PostgresPlace): { code: string; text: string } | undefined {
  const { code, message } = codeAndMessage(error);
  const at = `${place.host}:${place.port}`;
  const who = place.user === undefined ? 'the default user' : `user "${place.user}"`;
  if (code === '3D000') {
    const createdb = [
      'createdb',
      `-h ${place.host}`,
      `-p ${place.port}`,
      ...(place.user === undefined ? [] : [`-U ${quoted(place.user)}`]),
      quoted(place.database),
    ].join(' ');
    return {
      code,
      text: `database "${place.database}" does not exist on PostgreSQL at ${at}: create it with \`${createdb}\`, then run \`refhub migrate\``,
    };
  }
  if (code === '28P01')
    return {
      code,
      text: `PostgreSQL at ${at} refused the password of ${who} (28P01): correct the user or password in DATABASE_URL`,
    };
  if (code === '28000')
    return {
      code,
      text: `PostgreSQL at ${at} turned ${who} away: ${message} (28000): create the role, allow it in pg_hba.conf, or correct the user in DATABASE_URL`,
    };
  if (code === '57P03')
    return {
      code,
      text: `PostgreSQL at ${at} is starting up or shutting down (57P03): try again once it is up`,
    };
  if (code === '53300')
    return {
      code,
      text: `PostgreSQL at ${at} has no connection slot left (53300): close idle clients, or raise max_connections`,
    };
  const network = code === undefined ? undefined : NETWORK[code];
  if (code !== undefined && network !== undefined) return { code, text: network(at, place.host) };
  if (/^timeout exceeded when trying to connect|connection timeout/i.test(message))
    return { code: 'timeout', text: noAnswer(at, 'timeout') };
  if (/^Connection terminated/.test(message)) return { code: 'terminated', text: ended(at, 'terminated') };
  if (/client password must be a string/.test(message))
    return {
      code: 'password',
      text: `PostgreSQL at ${at} asks ${who} for a password, and DATABASE_URL has none: put it in the URL (postgres://USER:PASSWORD@HOST/DATABASE)`,
    };
  if (/\b(SSL|TLS|certificate)\b/i.test(message))
    return {
      code: code ?? 'tls',
      text: `TLS to PostgreSQL at ${at} failed: ${message}: set sslmode (and sslrootcert) in DATABASE_URL to what the server offers`,
    };
  if (code !== undefined && SQLSTATE.test(code))
    return {
      code,
      text: `PostgreSQL at ${at} refused to open database "${place.database}": ${message} (${code})`,
    };
  return undefined;
}

/**
 * The one-line error for a store that could not be opened, or undefined when `error` is not a
 * problem with the configured database or data directory (it is then a defect, thrown on as it is).
 */
export function storeUnavailable(error: unknown, place: StorePlace): StoreUnavailableError | undefined {
  if (place.engine === 'pglite') {
    const { code, message } = codeAndMessage(error);
    if (code === undefined || !DATA_DIR_CODES.has(code) || place.dataDir === undefined) return undefined;
    return new StoreUnavailableError(
      `DATA_DIR ${place.dataDir} cannot be used for the embedded database: ${message}. ` +
        'Set DATA_DIR to a directory refhub may create and write, or set DATABASE_URL to use PostgreSQL.',
      code,
      error,
    );
  }
  const target = postgresPlace(place.url);
  const advice = postgresAdvice(error, target);
  if (advice === undefined) return undefined;
  // Servers and drivers do not quote passwords, but a message that did would never reach a terminal.
  const text = target.password === '' ? advice.text : advice.text.replaceAll(target.password, '***');
  return new StoreUnavailableError(text, advice.code, error);
}
