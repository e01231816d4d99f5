// Signed client credentials (migration 0015): clients, the public keys their assertions are checked
// with, the assertions accepted (each `jti` once), and the access tokens issued, by their SHA-256.
// A client is a row of `api_keys` of kind `client`, so that it is named as a key is everywhere.
import type { InstitutionRef } from '../domain/access.ts';
import type { Scope } from '../domain/client-credentials.ts';
import type { Role } from '../domain/statuses.ts';
import { rateLimitOf, type ApiKeyRecord } from './api-key.repository.ts';
import type { Executor } from './executor.ts';

/** Where a client's public keys come from: a JWKS given at registration, or a URL refhub fetches. */
export type ClientKeySource =
  | { readonly kind: 'inline'; readonly jwks: { readonly keys: readonly unknown[] } }
  | { readonly kind: 'url'; readonly url: string };

export interface ClientRecord extends ApiKeyRecord {
  readonly keys: ClientKeySource;
}

export interface NewClient {
  readonly id: string;
  readonly system: string;
  readonly role: Role;
  readonly label: string | null;
  readonly institution: InstitutionRef;
  readonly keys: ClientKeySource;
  readonly now: Date;
}

/** An active access token: its client, as a key, for the one institution it was issued for. */
export interface TokenRecord extends ApiKeyRecord {
  readonly scopes: readonly Scope[];
  readonly expiresAt: Date;
}

interface ClientRow {
  id: string;
  prefix: string;
  system: string;
  role: string;
  label: string | null;
  created_at: Date;
  revoked_at: Date | null;
  rate_limit_per_second: number | null;
  rate_limit_burst: number | null;
  institution_id_type: string;
  institution_id: string;
  jwks: { keys: unknown[] } | null;
  jwks_url: string | null;
}

function toClient(row: ClientRow): ClientRecord {
  return {
    id: row.id,
    kind: 'client',
    prefix: row.prefix,
    system: row.system,
    role: row.role as Role,
    label: row.label,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    rateLimit: rateLimitOf(row),
    institutions: [{ idType: row.institution_id_type, id: row.institution_id }],
    keys:
      row.jwks_url === null
        ? { kind: 'inline', jwks: row.jwks ?? { keys: [] } }
        : { kind: 'url', url: row.jwks_url },
  };
}

const keySourceColumns = (keys: ClientKeySource) =>
  keys.kind === 'inline'
    ? { jwks: JSON.stringify(keys.jwks), jwks_url: null }
    : { jwks: null, jwks_url: keys.url };

export function clientCredentialsRepository(db: Executor) {
  const clients = () =>
    db
      .selectFrom('api_keys as k')
      .innerJoin('client_keys as c', 'c.api_key_id', 'k.id')
      .innerJoin('api_key_institutions as i', 'i.api_key_id', 'k.id')
      .select([
        'k.id',
        'k.prefix',
        'k.system',
        'k.role',
        'k.label',
        'k.created_at',
        'k.revoked_at',
        'k.rate_limit_per_second',
        'k.rate_limit_burst',
        'i.institution_id_type',
        'i.institution_id',
        'c.jwks',
        'c.jwks_url',
      ])
      .where('k.kind', '=', 'client');

  return {
    /** Registers a client: its credential row, its one institution and its keys. */
    async insertClient(client: NewClient): Promise<void> {
      await db
        .insertInto('api_keys')
        .values({
          id: client.id,
          kind: 'client',
          prefix: `client_${client.id.slice(0, 8)}`,
          secret_hash: null,
          system: client.system,
          role: client.role,
          label: client.label,
          revoked_at: null,
        })
        .execute();
      await db
        .insertInto('api_key_institutions')
        .values({
          api_key_id: client.id,
          institution_id_type: client.institution.idType,
          institution_id: client.institution.id,
        })
        .execute();
      await db
        .insertInto('client_keys')
        .values({ api_key_id: client.id, ...keySourceColumns(client.keys), updated_at: client.now })
        .execute();
    },

    /** The client with this ID, revoked or not. */
    async findClient(id: string): Promise<ClientRecord | undefined> {
      const row = await clients().where('k.id', '=', id).executeTakeFirst();
      return row && toClient(row);
    },

    async listClients(): Promise<ClientRecord[]> {
      const rows = await clients().orderBy('k.created_at').orderBy('k.id').execute();
      return rows.map(toClient);
    },

    /** Replaces an active client's keys (a rotation); false when there is no such client. */
    async setKeys(id: string, keys: ClientKeySource, now: Date): Promise<boolean> {
      const result = await db
        .updateTable('client_keys')
        .set({ ...keySourceColumns(keys), updated_at: now })
        .where('api_key_id', '=', id)
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('api_keys')
              .select('id')
              .where('id', '=', id)
              .where('kind', '=', 'client')
              .where('revoked_at', 'is', null),
          ),
        )
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },

    /**
     * Records an assertion's `jti` for the client until the assertion expires: false when it was
     * recorded already (a replay), whether by this request or by another at the same moment.
     */
    async acceptAssertion(clientId: string, jti: string, expiresAt: Date): Promise<boolean> {
      const row = await db
        .insertInto('client_assertions')
        .values({ api_key_id: clientId, jti, expires_at: expiresAt })
        .onConflict((oc) => oc.columns(['api_key_id', 'jti']).doNothing())
        .returning('jti')
        .executeTakeFirst();
      return row !== undefined;
    },

    async insertToken(token: {
      readonly hash: string;
      readonly clientId: string;
      readonly institution: InstitutionRef;
      readonly scopes: readonly Scope[];
      readonly issuedAt: Date;
      readonly expiresAt: Date;
    }): Promise<void> {
      await db
        .insertInto('access_tokens')
        .values({
          token_hash: token.hash,
          api_key_id: token.clientId,
          institution_id_type: token.institution.idType,
          institution_id: token.institution.id,
          scopes: [...token.scopes],
          issued_at: token.issuedAt,
          expires_at: token.expiresAt,
        })
        .execute();
    },

    /** The token with this hash, if it has not expired at `now` and its client is not revoked. */
    async findActiveToken(hash: string, now: Date): Promise<TokenRecord | undefined> {
      const row = await db
        .selectFrom('access_tokens as t')
        .innerJoin('api_keys as k', 'k.id', 't.api_key_id')
        .select([
          'k.id',
          'k.prefix',
          'k.system',
          'k.role',
          'k.label',
          'k.created_at',
          'k.rate_limit_per_second',
          'k.rate_limit_burst',
          't.institution_id_type',
          't.institution_id',
          't.scopes',
          't.expires_at',
        ])
        .where('t.token_hash', '=', hash)
        .where('t.expires_at', '>', now)
        .where('k.revoked_at', 'is', null)
        .executeTakeFirst();
      return (
        row && {
          id: row.id,
          kind: 'client',
          prefix: row.prefix,
          system: row.system,
          role: row.role as Role,
          label: row.label,
          createdAt: row.created_at,
          revokedAt: null,
          rateLimit: rateLimitOf(row),
          institutions: [{ idType: row.institution_id_type, id: row.institution_id }],
          scopes: row.scopes as Scope[],
          expiresAt: row.expires_at,
        }
      );
    },
  };
}

export type ClientCredentialsRepository = ReturnType<typeof clientCredentialsRepository>;
