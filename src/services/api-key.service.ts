// API keys (contract §2): `rfh_live_` or `rfh_test_` followed by 43 base62 characters (256 bits).
// The key is shown once, when created; only its SHA-256 and an 8-character display prefix are kept.
import { createHash, randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { InstitutionRef } from '../domain/access.ts';
import type { Clock } from '../domain/clock.ts';
import type { Role } from '../domain/statuses.ts';
import { ValidationError, NotFoundError } from '../errors.ts';
import { apiKeyRepository, type ApiKeyRecord } from '../db/api-key.repository.ts';
import { catalogRepository } from '../db/catalog.repository.ts';
import type { Database } from '../db/schema.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_PATTERN = /^rfh_(live|test)_[0-9A-Za-z]{43}$/;

export type KeyEnvironment = 'live' | 'test';

export interface NewKeyRequest {
  readonly system: string;
  readonly role: Role;
  readonly institutions: readonly InstitutionRef[];
  readonly label?: string | undefined;
  readonly environment: KeyEnvironment;
}

export interface CreatedKey {
  readonly key: string;
  readonly record: ApiKeyRecord;
}

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(64)) {
      // 248 = 4 × 62: rejecting larger bytes keeps every character equally likely.
      if (byte < 248 && out.length < length) out += BASE62.charAt(byte % 62);
    }
  }
  return out;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Creates a key inside the caller's transaction; the key itself is returned once, here. */
export async function createApiKeyIn(
  trx: Transaction<Database>,
  request: NewKeyRequest,
): Promise<CreatedKey> {
  const catalog = catalogRepository(trx);
  const errors: { path: string; message: string }[] = [];
  if (!(await catalog.listSystems()).includes(request.system)) {
    errors.push({ path: 'system', message: `${request.system} is not a system in the catalog` });
  }
  if (request.role !== 'ops' && request.institutions.length === 0) {
    errors.push({
      path: 'institution',
      message: `a ${request.role} key needs at least one institution`,
    });
  }
  for (const institution of request.institutions) {
    if (!(await catalog.findInstitution(institution))) {
      errors.push({
        path: 'institution',
        message: `${institution.idType}:${institution.id} is not an institution in the catalog`,
      });
    }
  }
  if (errors.length > 0) throw new ValidationError(errors);
  const secret = randomBase62(43);
  const key = `rfh_${request.environment}_${secret}`;
  const id = uuidv7();
  await apiKeyRepository(trx).insert({
    id,
    prefix: `rfh_${request.environment}_${secret.slice(0, 8)}`,
    secretHash: hashApiKey(key),
    system: request.system,
    role: request.role,
    label: request.label ?? null,
    institutions: request.institutions,
  });
  const [record] = await apiKeyRepository(trx).findActiveByIdOrPrefix(id);
  if (!record) throw new Error(`API key ${id} vanished while it was created`);
  return { key, record };
}

export function createApiKeyService(deps: { db: Kysely<Database>; clock: Clock }) {
  return {
    create(request: NewKeyRequest): Promise<CreatedKey> {
      return deps.db.transaction().execute((trx) => createApiKeyIn(trx, request));
    },

    /** The active key for a presented secret, or undefined. */
    async authenticate(presented: string): Promise<ApiKeyRecord | undefined> {
      if (!KEY_PATTERN.test(presented)) return undefined;
      return apiKeyRepository(deps.db).findActiveByHash(hashApiKey(presented));
    },

    list: () => apiKeyRepository(deps.db).list(),

    async revoke(idOrPrefix: string): Promise<ApiKeyRecord> {
      return deps.db.transaction().execute(async (trx) => {
        const repo = apiKeyRepository(trx);
        const [match, ...others] = await repo.findActiveByIdOrPrefix(idOrPrefix);
        if (!match) throw new NotFoundError(`No active API key has the ID or prefix ${idOrPrefix}.`);
        if (others.length > 0) {
          throw new ValidationError([
            { path: 'id', message: `prefix ${idOrPrefix} matches several keys; use the ID` },
          ]);
        }
        await repo.revoke(match.id, deps.clock.now());
        return match;
      });
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
