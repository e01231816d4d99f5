// Keyed writes claim their Idempotency-Key inside their own transaction, so a committed record always
// holds its response. A claim left `in-progress` by an earlier release belonged to a request whose
// process can no longer finish it: forget it, so that the client's retry runs instead of waiting.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM idempotency_keys WHERE state = 'in-progress' OR response_body IS NULL`.execute(db);
}

export async function down(): Promise<void> {
  // Nothing to undo: the rows removed were claims no process could complete.
}
