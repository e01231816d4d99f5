// `refhub clients create|list|keys|revoke`: clients with signed credentials, which get access tokens
// at the token URL with a JWT signed by their private key. refhub keeps only public keys: a JWK or
// JWKS from a file, or the URL the client publishes its JWKS at. A new client's ID, which it names
// as the `iss` and `sub` of its assertions, is printed alone on the last line, so a script can take
// it with `tail -n 1`; nothing printed here is secret.
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from 'commander';
import type { Config } from '../config.ts';
import type { ClientKeySource, ClientRecord } from '../db/client-credentials.repository.ts';
import type { InstitutionRef } from '../domain/access.ts';
import { SCOPES, TOKEN_PATH } from '../domain/client-credentials.ts';
import type { DisplayTime } from '../domain/display-time.ts';
import { ValidationError } from '../errors.ts';
import type { ClientCredentials } from '../services/client-credentials/client-credentials.service.ts';
import { toStdout, type Output } from './output.ts';
import { plural } from './plural.ts';

export type ClientRole = 'sender' | 'provider';

export interface ClientCommandDeps {
  readonly config: Pick<Config, 'env' | 'publicUrl'>;
  readonly clientCredentials: Pick<ClientCredentials, 'register' | 'list' | 'setKeys' | 'revoke'>;
  /** Where it prints: the terminal unless given. */
  readonly out?: Output;
}

/** Where the public keys come from: exactly one of the two. */
export interface KeySourceOptions {
  readonly jwksUrl?: string;
  readonly jwkFile?: string;
}

export interface CreateClientOptions extends KeySourceOptions {
  readonly system: string;
  readonly role: ClientRole;
  /** Exactly one; commander gathers every `--institution` given, so that a second is refused, not dropped. */
  readonly institution?: InstitutionRef[];
  readonly label?: string;
}

/** The file the keys were read from, and whether it held one JWK rather than a JWKS. */
interface KeyFile {
  readonly path: string;
  readonly single: boolean;
}

/** The public keys the options name: a JWKS URL, or the JWK or JWKS in a file. */
async function keySourceOf(
  deps: Pick<ClientCommandDeps, 'config'>,
  options: KeySourceOptions,
): Promise<{ readonly keys: ClientKeySource; readonly file?: KeyFile }> {
  const { jwksUrl, jwkFile } = options;
  if (jwksUrl !== undefined && jwkFile !== undefined)
    throw new InvalidArgumentError('give the public keys once: --jwks-url or --jwk-file, not both');
  if (jwksUrl !== undefined) return { keys: { kind: 'url', url: checkedJwksUrl(deps, jwksUrl) } };
  if (jwkFile !== undefined) {
    const { jwks, single } = await readJwkFile(jwkFile);
    return { keys: { kind: 'inline', jwks }, file: { path: jwkFile, single } };
  }
  throw new InvalidArgumentError(
    "the client's public keys are required: --jwks-url URL (where the client publishes its JWKS) or " +
      '--jwk-file FILE (a public JWK or JWKS)',
  );
}

/** A JWKS URL refhub may fetch: https, or plain http outside production (as the fetch itself requires). */
function checkedJwksUrl(deps: Pick<ClientCommandDeps, 'config'>, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidArgumentError(`--jwks-url: ${raw} is not a URL`);
  }
  const production = deps.config.env === 'production';
  if (url.protocol !== 'https:' && (production || url.protocol !== 'http:')) {
    throw new InvalidArgumentError(
      production ? '--jwks-url: expected an https URL' : '--jwks-url: expected an https (or http) URL',
    );
  }
  return url.toString();
}

/**
 * The file's keys as a JWKS: a JWKS as it is, or one JWK as a set of one. Whether each key may be
 * registered (public, asymmetric, with a kid) is the service's to check.
 */
async function readJwkFile(
  file: string,
): Promise<{ readonly jwks: { readonly keys: readonly unknown[] }; readonly single: boolean }> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (error) {
    throw new ValidationError([{ path: file, message: `cannot be read: ${(error as Error).message}` }]);
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    if ('keys' in value) return { jwks: value as { keys: unknown[] }, single: false };
    if ('kty' in value) return { jwks: { keys: [value] }, single: true };
  }
  throw new ValidationError([
    { path: file, message: 'must hold a JWK (an object with "kty") or a JWKS (an object with "keys")' },
  ]);
}

/** The service names the keys it refuses `jwk/keys/N`; the operator gave a file, so name the file. */
async function namingFile<T>(file: KeyFile | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (file === undefined || !(error instanceof ValidationError) || error.errors === undefined) throw error;
    const where = (path: string) =>
      file.single && /^jwk\/keys\/0(\/|$)/.test(path)
        ? `${file.path}${path.slice('jwk/keys/0'.length)}`
        : `${file.path}${path.slice('jwk'.length)}`;
    throw new ValidationError(
      error.errors.map((e) => (/^jwk(\/|$)/.test(e.path) ? { ...e, path: where(e.path) } : e)),
    );
  }
}

/** How a client's keys are held, as the listing and the commands show them. */
export function keysOf(client: Pick<ClientRecord, 'keys'>): string {
  if (client.keys.kind === 'url') return `url ${client.keys.url}`;
  const kids = client.keys.jwks.keys.map((k) => {
    const kid = (k as { kid?: unknown }).kid;
    return typeof kid === 'string' ? kid : '?';
  });
  return `inline ${plural(kids.length, 'key')} (${kids.join(', ')})`;
}

const institutionOf = (client: Pick<ClientRecord, 'institutions'>) =>
  client.institutions.map((i) => `${i.idType}:${i.id}`).join(',') || '-';

export async function createClient(deps: ClientCommandDeps, options: CreateClientOptions): Promise<void> {
  const out = deps.out ?? toStdout;
  const [institution, ...others] = options.institution ?? [];
  if (institution === undefined)
    throw new InvalidArgumentError('--institution is required: the one institution the client acts for');
  if (others.length > 0)
    throw new InvalidArgumentError('--institution: a client acts for exactly one institution; give it once');
  const { keys, file } = await keySourceOf(deps, options);
  const client = await namingFile(file, () =>
    deps.clientCredentials.register({
      system: options.system,
      role: options.role,
      institution,
      label: options.label,
      keys,
    }),
  );
  out(
    `Registered ${client.role} client ${client.id} for ${client.system}, acting for ${institutionOf(client)}, ` +
      `with keys: ${keysOf(client)}.\n`,
  );
  out(`Token URL (the aud of its assertions): ${deps.config.publicUrl}${TOKEN_PATH}\n`);
  out(`Scopes: ${SCOPES.join(' ')}\n`);
  out('Client ID (the iss and sub of its assertions):\n');
  out(`${client.id}\n`);
}

/** The listing's first line: the names of its tab-separated columns. */
export const CLIENTS_HEADER = ['ID', 'ROLE', 'SYSTEM', 'INSTITUTION', 'KEYS', 'STATE', 'LABEL'].join('\t');

/** A listing writes times as the pages do: in the display zone, with the zone named. */
export async function listClients(
  deps: Pick<ClientCommandDeps, 'clientCredentials' | 'out'> & {
    readonly displayTime: Pick<DisplayTime, 'dateTime'>;
  },
): Promise<void> {
  const out = deps.out ?? toStdout;
  const clients = await deps.clientCredentials.list();
  if (clients.length === 0) {
    out('No clients.\n');
    return;
  }
  out(`${CLIENTS_HEADER}\n`);
  for (const c of clients) {
    const state = c.revokedAt === null ? 'active' : `revoked ${deps.displayTime.dateTime(c.revokedAt)}`;
    out([c.id, c.role, c.system, institutionOf(c), keysOf(c), state, c.label ?? ''].join('\t') + '\n');
  }
}

/** Replaces a client's keys: an inline JWKS rotates here; a URL's keys rotate at the URL. */
export async function setClientKeys(
  deps: ClientCommandDeps,
  id: string,
  options: KeySourceOptions,
): Promise<void> {
  const out = deps.out ?? toStdout;
  const { keys, file } = await keySourceOf(deps, options);
  const client = await namingFile(file, () => deps.clientCredentials.setKeys(id, keys));
  out(`Replaced the keys of client ${client.id}: ${keysOf(client)}.\n`);
  if (client.keys.kind === 'url')
    out('refhub fetches its keys from that URL: the client rotates them by publishing there.\n');
}

export async function revokeClient(
  deps: Pick<ClientCommandDeps, 'clientCredentials' | 'out'>,
  id: string,
): Promise<void> {
  const out = deps.out ?? toStdout;
  const revoked = await deps.clientCredentials.revoke(id);
  out(
    `Revoked client ${revoked.id} (${revoked.system}, ${institutionOf(revoked)}): its access tokens stop working at once.\n`,
  );
}
