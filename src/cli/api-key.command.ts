// `refhub keys create|list|revoke`: API keys for the operator. A new key is printed once, alone on
// the last line, so a script can take it with `tail -n 1`; a listing shows display prefixes only.
import { InvalidArgumentError } from 'commander';
import type { Config } from '../config.ts';
import type { InstitutionRef } from '../domain/access.ts';
import type { Role } from '../domain/statuses.ts';
import type { ApiKeyService } from '../services/api-key.service.ts';

export interface ApiKeyCommandDeps {
  readonly config: Pick<Config, 'env'>;
  readonly apiKeys: Pick<ApiKeyService, 'create' | 'list' | 'revoke'>;
}

export interface CreateKeyOptions {
  readonly system: string;
  readonly role: Role;
  readonly institution: InstitutionRef[];
  readonly label?: string;
  readonly environment?: string;
}

export async function createKey(deps: ApiKeyCommandDeps, options: CreateKeyOptions): Promise<void> {
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
  const where = record.institutions.map((i) => `${i.idType}:${i.id}`).join(', ') || 'no institutions';
  process.stdout.write(
    `Created ${record.role} key ${record.id} (${record.prefix}…) for ${record.system}, acting for ${where}.\n`,
  );
  process.stdout.write('Store it now: it is not shown again.\n');
  process.stdout.write(`${key}\n`);
}

export async function listKeys(deps: Pick<ApiKeyCommandDeps, 'apiKeys'>): Promise<void> {
  for (const k of await deps.apiKeys.list()) {
    const where = k.institutions.map((i) => `${i.idType}:${i.id}`).join(',') || '-';
    const state = k.revokedAt === null ? 'active' : `revoked ${k.revokedAt.toISOString()}`;
    process.stdout.write(
      [k.id, `${k.prefix}…`, k.role, k.system, where, state, k.label ?? ''].join('\t') + '\n',
    );
  }
}

export async function revokeKey(deps: Pick<ApiKeyCommandDeps, 'apiKeys'>, idOrPrefix: string): Promise<void> {
  const revoked = await deps.apiKeys.revoke(idOrPrefix);
  process.stdout.write(`Revoked key ${revoked.id} (${revoked.prefix}…).\n`);
}
