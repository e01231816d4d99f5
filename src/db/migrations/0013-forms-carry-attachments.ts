// The files a form was sent with. A referral version's form is kept the first time it is sent
// (`ehr_forms`), and every retry of its message sends those bytes; the files listed in it go with it,
// each as a document of its own. So the list is kept with the form, in the same row: a retry sends
// exactly the files the kept form lists, even if a scan has cleared another file since, and the
// ledger's proof of an attempt names them (number, SHA-256, size and type; the name is the form's
// and the attachment's). Forms kept before this migration were sent without files.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE ehr_forms ADD COLUMN attachments jsonb NOT NULL DEFAULT '[]'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE ehr_forms DROP COLUMN attachments`.execute(db);
}
