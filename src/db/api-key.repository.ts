// API keys. Only the SHA-256 of a key and an 8-character display prefix are stored (contract §2).
import { sql } from 'kysely';
import type { InstitutionRef } from '../domain/access.ts';
import { isUuid } from '../domain/ids.ts';
import type { RateLimitPolicy } from '../domain/rate-limits.ts';
import type { Role } from '../domain/statuses.ts';
import type { Executor } from './executor.ts';

export interface ApiKeyRecord {
  readonly id: string;
  /** `api-key`, or `client` for signed client credentials (client-credentials.repository.ts). */
  readonly kind: 'api-key' | 'client';
  readonly prefix: string;
  readonly system: string;
  readonly role: Role;
  readonly label: string | null;
  readonly institutions: readonly InstitutionRef[];
  readonly createdAt: Date;
  readonly revokedAt: Date | null;
  /** The credential's own rate limit, set by the operator; null: the installation's default. */
  readonly rateLimit: RateLimitPolicy | null;
}

/** The rate limit of a row's two columns: both set, or the installation's default (null). */
export function rateLimitOf(row: {
  readonly rate_limit_per_second: number | null;
  readonly rate_limit_burst: number | null;
}): RateLimitPolicy | null {
  return row.rate_limit_per_second === null || row.rate_limit_burst === null
    ? null
    : { perSecond: row.rate_limit_per_second, burst: row.rate_limit_burst };
}

export interface NewApiKey {
  readonly id: string;
  readonly prefix: string;
  readonly secretHash: string;
  readonly system: string;
  readonly role: Role;
  readonly label: string | null;
  readonly institutions: readonly InstitutionRef[];
}

export function apiKeyRepository(db: Executor) {
  async function withInstitutions(
    rows: readonly {
      id: string;
      kind: 'api-key' | 'client';
      prefix: string;
      system: string;
      role: string;
      label: string | null;
      created_at: Date;
      revoked_at: Date | null;
      rate_limit_per_second: number | null;
      rate_limit_burst: number | null;
    }[],
  ): Promise<ApiKeyRecord[]> {
    if (rows.length === 0) return [];
    const links = await db
      .selectFrom('api_key_institutions')
      .select(['api_key_id', 'institution_id_type', 'institution_id'])
      .where(
        'api_key_id',
        'in',
        rows.map((r) => r.id),
      )
      .orderBy('institution_id_type')
      .orderBy('institution_id')
      .execute();
    return rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      prefix: r.prefix,
      system: r.system,
      role: r.role as Role,
      label: r.label,
      createdAt: r.created_at,
      revokedAt: r.revoked_at,
      rateLimit: rateLimitOf(r),
      institutions: links
        .filter((l) => l.api_key_id === r.id)
        .map((l) => ({ idType: l.institution_id_type, id: l.institution_id })),
    }));
  }

  const columns = [
    'id',
    'kind',
    'prefix',
    'system',
    'role',
    'label',
    'created_at',
    'revoked_at',
    'rate_limit_per_second',
    'rate_limit_burst',
  ] as const;

  return {
    async insert(key: NewApiKey): Promise<void> {
      await db
        .insertInto('api_keys')
        .values({
          id: key.id,
          prefix: key.prefix,
          secret_hash: key.secretHash,
          system: key.system,
          role: key.role,
          label: key.label,
          revoked_at: null,
        })
        .execute();
      if (key.institutions.length > 0) {
        await db
          .insertInto('api_key_institutions')
          .values(
            key.institutions.map((i) => ({
              api_key_id: key.id,
              institution_id_type: i.idType,
              institution_id: i.id,
            })),
          )
          .execute();
      }
    },

    /**
     * The active (not revoked) key with this secret hash. Every API request asks this, so the key and
     * its institutions come back in one statement, not two.
     */
    async findActiveByHash(secretHash: string): Promise<ApiKeyRecord | undefined> {
      const row = await db
        .selectFrom('api_keys as k')
        .select(columns.map((c) => `k.${c}` as const))
        .select(
          sql<InstitutionRef[]>`(
            select coalesce(json_agg(json_build_object('idType', i.institution_id_type, 'id', i.institution_id)
                                     order by i.institution_id_type, i.institution_id), '[]'::json)
              from api_key_institutions i where i.api_key_id = k.id)`.as('institutions'),
        )
        .where('k.secret_hash', '=', secretHash)
        .where('k.revoked_at', 'is', null)
        .executeTakeFirst();
      return (
        row && {
          id: row.id,
          kind: row.kind,
          prefix: row.prefix,
          system: row.system,
          role: row.role as Role,
          label: row.label,
          createdAt: row.created_at,
          revokedAt: row.revoked_at,
          rateLimit: rateLimitOf(row),
          institutions: row.institutions,
        }
      );
    },

    /** The credentials of `kind`, oldest first. */
    async list(kind: ApiKeyRecord['kind'] = 'api-key'): Promise<ApiKeyRecord[]> {
      const rows = await db
        .selectFrom('api_keys')
        .select(columns)
        .where('kind', '=', kind)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return withInstitutions(rows);
    },

    /**
     * Active credentials of `kind` whose ID or display prefix is `idOrPrefix` (several only for an
     * ambiguous prefix).
     */
    async findActiveByIdOrPrefix(
      idOrPrefix: string,
      kind: ApiKeyRecord['kind'] = 'api-key',
    ): Promise<ApiKeyRecord[]> {
      const byId = isUuid(idOrPrefix);
      const rows = await db
        .selectFrom('api_keys')
        .select(columns)
        .where('kind', '=', kind)
        .where(byId ? 'id' : 'prefix', '=', idOrPrefix)
        .where('revoked_at', 'is', null)
        .execute();
      return withInstitutions(rows);
    },

    async revoke(id: string, at: Date): Promise<void> {
      await db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).execute();
    },

    /** Sets a credential's own rate limit, or gives it the installation's default again (null). */
    async setRateLimit(id: string, limit: RateLimitPolicy | null): Promise<void> {
      await db
        .updateTable('api_keys')
        .set({ rate_limit_per_second: limit?.perSecond ?? null, rate_limit_burst: limit?.burst ?? null })
        .where('id', '=', id)
        .execute();
    },
  };
}

export type ApiKeyRepository = ReturnType<typeof apiKeyRepository>;
