// Secrets an installation generates for itself when the operator gives none: outside production,
// the web form's session secret (SESSION_SECRET unset), so that `npm start` needs no setup and every
// process on one database signs sessions with the same key. Plain SQL, identical on PostgreSQL and
// PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE installation_secrets (
      name        text PRIMARY KEY,
      value       text NOT NULL CHECK (length(value) >= 32),
      created_at  timestamptz NOT NULL DEFAULT now()
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE installation_secrets;`.execute(db);
}
