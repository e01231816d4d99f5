// Signed client credentials. A client is a credential like an API key, in the same table, so that
// everything that names a key (the audit trail, Idempotency-Key records, one-time links) names the
// client the same way; it has no secret, only the public keys its assertions are checked with:
// - `api_keys.kind`: `api-key` (a secret, whose SHA-256 is kept) or `client` (no secret);
// - `client_keys`: a client's JWKS, given inline (`jwks`) or fetched from its URL (`jwks_url`);
// - `client_assertions`: the `jti` of every assertion accepted, until it expires, so that none is
//   accepted twice;
// - `access_tokens`: the tokens issued, by their SHA-256, each for the client's one institution, with
//   its scopes and its expiry.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE api_keys ADD COLUMN kind text NOT NULL DEFAULT 'api-key' CHECK (kind IN ('api-key', 'client'));
    ALTER TABLE api_keys ALTER COLUMN secret_hash DROP NOT NULL;
    ALTER TABLE api_keys ADD CONSTRAINT api_keys_secret_of_kind CHECK ((kind = 'api-key') = (secret_hash IS NOT NULL));

    CREATE TABLE client_keys (
      api_key_id  uuid PRIMARY KEY REFERENCES api_keys (id),
      jwks        jsonb,
      jwks_url    text,
      updated_at  timestamptz NOT NULL,
      CHECK ((jwks IS NULL) <> (jwks_url IS NULL))
    );

    CREATE TABLE client_assertions (
      api_key_id  uuid NOT NULL REFERENCES api_keys (id),
      jti         text NOT NULL,
      expires_at  timestamptz NOT NULL,
      PRIMARY KEY (api_key_id, jti)
    );
    CREATE INDEX client_assertions_expiry ON client_assertions (expires_at);

    CREATE TABLE access_tokens (
      token_hash           text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
      api_key_id           uuid NOT NULL REFERENCES api_keys (id),
      institution_id_type  text NOT NULL,
      institution_id       text NOT NULL,
      scopes               text[] NOT NULL,
      issued_at            timestamptz NOT NULL,
      expires_at           timestamptz NOT NULL,
      FOREIGN KEY (institution_id_type, institution_id) REFERENCES institutions (id_type, id)
    );
    CREATE INDEX access_tokens_expiry ON access_tokens (expires_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE access_tokens, client_assertions, client_keys;
    DELETE FROM api_keys WHERE kind = 'client';
    ALTER TABLE api_keys DROP CONSTRAINT api_keys_secret_of_kind;
    ALTER TABLE api_keys ALTER COLUMN secret_hash SET NOT NULL;
    ALTER TABLE api_keys DROP COLUMN kind;
  `.execute(db);
}
