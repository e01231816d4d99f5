// `refhub keys create|list|revoke`: API keys for the operator. A new key is printed once, alone on
// the last line, so a script can take it with `tail -n 1`; a listing shows display prefixes only.
// An ops key belongs to refhub's operators, not to a clinic's or hospital's system: the system it
// was created under is kept (every key row names one) but shown as `operators`.
import type { ApiKeyRecord } from '../db/api-key.repository.ts';
import { InvalidArgumentError } from 'commander';
import type { Config } from '../config.ts';
import type { InstitutionRef } from '../domain/access.ts';
import type { DisplayTime } from '../domain/display-time.ts';
import type { Role } from '../domain/statuses.ts';
import type { ApiKeyService } from '../services/api-key.service.ts';
import { toStdout, type Output } from './output.ts';

export interface ApiKeyCommandDeps {
  readonly config: Pick<Config, 'env'>;
  readonly apiKeys: Pick<ApiKeyService, 'create' | 'list' | 'revoke'>;
  /** Where it prints: the terminal unless given. */
  readonly out?: Output;
}

export interface CreateKeyOptions {
  readonly system: string;
  readonly role: Role;
  readonly institution: InstitutionRef[];
  readonly label?: string;
  readonly environment?: string;
}

export async function createKey(deps: ApiKeyCommandDeps, options: CreateKeyOptions): Promise<void> {
  const out = deps.out ?? toStdout;
  const environment = options.environment ?? (deps.config.env === 'production' ? 'live' : 'test');
  if (environment !== 'live' && environment !== 'test')
    throw new InvalidArgumentError('--environment: live or test');
  const { key, record } = await deps.apiKeys.create({
    system: options.system,
    role: options.role,
    institutions: options.institution,
    label: options.label,
    environment,
  });
  const where = record.institutions.map((i) => `${i.idType}:${i.id}`).join(', ');
  out(
    record.role === 'ops'
      ? `Created ops key ${record.id} (${record.prefix}…) for refhub's operators.\n`
      : `Created ${record.role} key ${record.id} (${record.prefix}…) for ${record.system}, acting for ${where}.\n`,
  );
  out('Store it now: it is not shown again.\n');
  out(`${key}\n`);
}

/** The listing's first line: the names of its tab-separated columns. */
export const KEYS_HEADER = ['ID', 'PREFIX', 'ROLE', 'SYSTEM', 'INSTITUTIONS', 'STATE', 'LABEL'].join('\t');

/** Who holds a key, as the listing shows it: a clinic's or hospital's system, or refhub's operators. */
export function holderOf(key: Pick<ApiKeyRecord, 'role' | 'system'>): string {
  return key.role === 'ops' ? 'operators' : key.system;
}

/** A listing writes times as the pages do: in the display zone, with the zone named. */
export async function listKeys(
  deps: Pick<ApiKeyCommandDeps, 'apiKeys' | 'out'> & { readonly displayTime: Pick<DisplayTime, 'dateTime'> },
): Promise<void> {
  const out = deps.out ?? toStdout;
  const keys = await deps.apiKeys.list();
  if (keys.length === 0) {
    out('No API keys.\n');
    return;
  }
  out(`${KEYS_HEADER}\n`);
  for (const k of keys) {
    const where = k.institutions.map((i) => `${i.idType}:${i.id}`).join(',') || '-';
    const state = k.revokedAt === null ? 'active' : `revoked ${deps.displayTime.dateTime(k.revokedAt)}`;
    out([k.id, `${k.prefix}…`, k.role, holderOf(k), where, state, k.label ?? ''].join('\t') + '\n');
  }
}

export async function revokeKey(
  deps: Pick<ApiKeyCommandDeps, 'apiKeys' | 'out'>,
  idOrPrefix: string,
): Promise<void> {
  const out = deps.out ?? toStdout;
  const revoked = await deps.apiKeys.revoke(idOrPrefix);
  out(`Revoked key ${revoked.id} (${revoked.prefix}…).\n`);
}
