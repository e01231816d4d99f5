// A referral's attachments (migration 0012): the metadata, and the bytes in a table of their own that
// only a read of the content touches. Each is read and written only after the referral passed the
// tenancy check, as the referral's other parts are.
import { sql, type Compilable, type Selectable } from 'kysely';
import type { FormAttachment } from '../domain/attachments.ts';
import type { AttachmentScanState, AttachmentsTable } from './schema.ts';
import type { Executor } from './executor.ts';

export interface NewAttachment {
  readonly id: string;
  readonly referralId: string;
  readonly fileName: string;
  readonly mediaType: string;
  readonly sizeBytes: number;
  readonly sha256: string;
  /** `pending-scan` where a scanner will answer; `not-scanned` where none is configured. */
  readonly scanState: Extract<AttachmentScanState, 'pending-scan' | 'not-scanned'>;
  readonly addedBy: 'sender' | 'provider';
  readonly authorInstitution: { readonly idType: string; readonly id: string };
  readonly requesterIdentifier: string | null;
  readonly system: string;
  readonly createdAt: Date;
}

export interface AttachmentRecord extends Omit<NewAttachment, 'scanState'> {
  /** The referral's own number for it: 1, 2, … in the order attachments were added. */
  readonly number: number;
  readonly scanState: AttachmentScanState;
  /** What the scanner found in a rejected file: for operators, never shown to patients. */
  readonly scanSignature: string | null;
  readonly scannedAt: Date | null;
}

/** An attachment as a change's statement adds it: numbered by the change, which read the others. */
export interface NumberedAttachment extends NewAttachment {
  readonly number: number;
}

/**
 * An attachment's rows as parts of a change's statement (db/change-log.repository.ts): written only
 * with the referral's compare-and-set, so the number and the count the change read still hold.
 */
export const attachmentWrites = {
  insert(db: Executor, attachment: NumberedAttachment, content: Uint8Array): Compilable[] {
    return [
      db.insertInto('attachments').values({
        id: attachment.id,
        referral_id: attachment.referralId,
        number: attachment.number,
        file_name: attachment.fileName,
        media_type: attachment.mediaType,
        size_bytes: attachment.sizeBytes,
        sha256: attachment.sha256,
        scan_state: attachment.scanState,
        added_by: attachment.addedBy,
        author_institution_id_type: attachment.authorInstitution.idType,
        author_institution_id: attachment.authorInstitution.id,
        requester_identifier: attachment.requesterIdentifier,
        system: attachment.system,
        created_at: attachment.createdAt,
      }),
      db.insertInto('attachment_contents').values({
        attachment_id: attachment.id,
        content: Buffer.from(content.buffer, content.byteOffset, content.byteLength),
      }),
    ];
  },

  /** Removes the attachment; its bytes go with it (ON DELETE CASCADE). */
  remove(db: Executor, referralId: string, id: string): Compilable {
    return db.deleteFrom('attachments').where('referral_id', '=', referralId).where('id', '=', id);
  },
};

export type ScanResult =
  { readonly kind: 'clean' } | { readonly kind: 'infected'; readonly signature: string };

function toRecord(row: Selectable<AttachmentsTable>): AttachmentRecord {
  return {
    id: row.id,
    referralId: row.referral_id,
    number: row.number,
    fileName: row.file_name,
    mediaType: row.media_type,
    sizeBytes: row.size_bytes,
    sha256: row.sha256,
    scanState: row.scan_state,
    scanSignature: row.scan_signature,
    scannedAt: row.scanned_at,
    addedBy: row.added_by,
    authorInstitution: { idType: row.author_institution_id_type, id: row.author_institution_id },
    requesterIdentifier: row.requester_identifier,
    system: row.system,
    createdAt: row.created_at,
  };
}

/**
 * Attachments waiting for a scan since before `before`, with no `attachment-scan` outbox row of their
 * referral left to dispatch: the relay queues the scans of such a referral's files itself.
 */
function awaitingScanQuery(db: Executor, before: Date) {
  return db
    .selectFrom('attachments as a')
    .select(['a.id', 'a.referral_id'])
    .where('a.scan_state', '=', 'pending-scan')
    .where('a.created_at', '<', before)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('outbox as o')
            .select('o.id')
            .whereRef('o.referral_id', '=', 'a.referral_id')
            .where('o.topic', '=', 'attachment-scan')
            .where('o.processed_at', 'is', null),
        ),
      ),
    );
}

export function attachmentRepository(db: Executor) {
  return {
    /** The referral's attachments, in the order they were added. */
    async list(referralId: string): Promise<AttachmentRecord[]> {
      const rows = await db
        .selectFrom('attachments')
        .selectAll()
        .where('referral_id', '=', referralId)
        .orderBy('number')
        .execute();
      return rows.map(toRecord);
    },

    async find(referralId: string, id: string): Promise<AttachmentRecord | undefined> {
      const row = await db
        .selectFrom('attachments')
        .selectAll()
        .where('referral_id', '=', referralId)
        .where('id', '=', id)
        .executeTakeFirst();
      return row && toRecord(row);
    },

    /**
     * The attachment's bytes, `chunkBytes` at a time, each read by a statement of its own: what holds
     * them (a scan, an answer) holds one piece at once. The content is stored uncompressed, so a
     * piece is read without the rest.
     */
    async *content(id: string, sizeBytes: number, chunkBytes = 1024 * 1024): AsyncGenerator<Buffer> {
      for (let offset = 0; offset < sizeBytes; offset += chunkBytes) {
        const row = await db
          .selectFrom('attachment_contents')
          .select(sql<Buffer>`substring(content from ${offset + 1} for ${chunkBytes})`.as('piece'))
          .where('attachment_id', '=', id)
          .executeTakeFirst();
        if (row === undefined) throw new Error('attachment_content_missing');
        yield row.piece;
      }
    },

    /**
     * Records what the scan found, if the attachment still waits for it; returns the updated record,
     * or undefined when it was scanned already or is gone (a scan repeated after a crash changes
     * nothing).
     */
    async recordScan(id: string, result: ScanResult, now: Date): Promise<AttachmentRecord | undefined> {
      const row = await db
        .updateTable('attachments')
        .set({
          scan_state: result.kind === 'clean' ? 'available' : 'rejected',
          scan_signature: result.kind === 'clean' ? null : result.signature,
          scanned_at: now,
        })
        .where('id', '=', id)
        .where('scan_state', '=', 'pending-scan')
        .returningAll()
        .executeTakeFirst();
      return row && toRecord(row);
    },

    /**
     * Attachments waiting for a scan since before `before`, oldest first (for the reconciler); those
     * of a referral with an `attachment-scan` outbox row still to dispatch are the relay's, and left out.
     */
    async pendingScan(before: Date, limit: number): Promise<{ id: string; referralId: string }[]> {
      const rows = await awaitingScanQuery(db, before).orderBy('a.created_at').limit(limit).execute();
      return rows.map((r) => ({ id: r.id, referralId: r.referral_id }));
    },

    /**
     * `pendingScan` for one attachment, read again: the reconciler asks it after finding no live scan
     * job, so a scan a worker recorded, or a relay is queueing, since the page was read is not lost.
     */
    async awaitsScan(id: string, before: Date): Promise<boolean> {
      const row = await awaitingScanQuery(db, before).where('a.id', '=', id).executeTakeFirst();
      return row !== undefined;
    },

    /** The referral's attachments that wait for a scan, for the scan queue. */
    async pendingScanOf(referralId: string): Promise<{ attachmentId: string; referralId: string }[]> {
      const rows = await db
        .selectFrom('attachments')
        .select('id')
        .where('referral_id', '=', referralId)
        .where('scan_state', '=', 'pending-scan')
        .orderBy('number')
        .execute();
      return rows.map((r) => ({ attachmentId: r.id, referralId }));
    },

    /** The referral's files that may be read (scanned clean, or kept where nothing scans), in order. */
    async readable(referralId: string): Promise<FormAttachment[]> {
      return db
        .selectFrom('attachments')
        .select([
          'id',
          'number',
          'file_name as fileName',
          'media_type as mediaType',
          'size_bytes as sizeBytes',
          'sha256',
        ])
        .where('referral_id', '=', referralId)
        .where('scan_state', 'in', ['available', 'not-scanned'])
        .orderBy('number')
        .execute();
    },
  };
}

export type AttachmentRepository = ReturnType<typeof attachmentRepository>;
