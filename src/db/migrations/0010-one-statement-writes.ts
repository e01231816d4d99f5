// A write of the API is one statement (db/change-log.repository.ts): the referral's compare-and-set and
// everything the change leaves behind, as common table expressions. When the compare-and-set finds the
// row changed since it was read, the statement must leave nothing behind, so it ends by calling this
// function, which raises and rolls the whole statement back. The error's SQLSTATE is refhub's own
// (`RH409`), so the code that sent the statement can tell a lost race from any other failure.
// PL/pgSQL, as in 0009: the same on PostgreSQL and PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION refhub_abort(reason text) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION USING ERRCODE = 'RH409', MESSAGE = reason;
    END $$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION refhub_abort(text);`.execute(db);
}
