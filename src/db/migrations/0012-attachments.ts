// Attachments: the files that travel with a referral (an ECG, a scan report, a letter) and those the
// provider sends back with its outcome. Two tables, so that reading a referral, or listing its
// attachments, never reads a file's bytes:
// - `attachments`, the metadata: the referral's own number for it (`number`, 1, 2, … in the order
//   added; it names the attachment's document at the EHR), the file's name as given, its type as
//   detected from the bytes, size and SHA-256, the scan's state (`pending-scan` until the scanner
//   has answered, then `available` or `rejected` with the signature it found, kept for operators;
//   `not-scanned` where no scanner is configured, outside production), and who added it, as notes
//   record their author.
// - `attachment_contents`, the bytes, one row per attachment, removed with it. Stored uncompressed
//   out of line (STORAGE EXTERNAL): most of these files are compressed already, and a piece of an
//   uncompressed value is read without the rest, so a file is scanned and sent a piece at a time.
// Both are in the database, so a backup of it holds them, and neither is ever in Redis or a job.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE attachments (
      id                          uuid PRIMARY KEY,
      referral_id                 uuid NOT NULL REFERENCES referrals (id),
      number                      integer NOT NULL CHECK (number > 0),
      file_name                   text NOT NULL,
      media_type                  text NOT NULL,
      size_bytes                  integer NOT NULL CHECK (size_bytes > 0),
      sha256                      text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
      scan_state                  text NOT NULL
        CHECK (scan_state IN ('pending-scan', 'available', 'rejected', 'not-scanned')),
      scan_signature              text,
      scanned_at                  timestamptz,
      added_by                    text NOT NULL CHECK (added_by IN ('sender', 'provider')),
      author_institution_id_type  text NOT NULL,
      author_institution_id       text NOT NULL,
      requester_identifier        text,
      system                      text NOT NULL REFERENCES systems (name),
      created_at                  timestamptz NOT NULL,
      UNIQUE (referral_id, number),
      CHECK ((scan_state = 'rejected') = (scan_signature IS NOT NULL)),
      CHECK ((scan_state IN ('available', 'rejected')) = (scanned_at IS NOT NULL))
    );
    CREATE INDEX attachments_pending_scan ON attachments (created_at) WHERE scan_state = 'pending-scan';

    CREATE TABLE attachment_contents (
      attachment_id  uuid PRIMARY KEY REFERENCES attachments (id) ON DELETE CASCADE,
      content        bytea NOT NULL
    );
    ALTER TABLE attachment_contents ALTER COLUMN content SET STORAGE EXTERNAL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE attachment_contents, attachments;`.execute(db);
}
