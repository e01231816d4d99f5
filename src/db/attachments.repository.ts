// A referral's attachments (migration 0012): the metadata, and the bytes in a table of their own that
// only a read of the content touches. Each is read and written only after the referral passed the
// tenancy check, as the referral's other parts are.
//
// The file's name is sealed as the referral's fields are; its bytes are sealed in chunks
// (domain/data-keys.ts) so that a read still takes them a piece at a time, each piece whole chunks
// read at offsets computed from the file's size. Bytes stored before field encryption have no header
// and are read as they are, until the sweep seals them (`resealContent`).
import { sql, type Compilable, type Selectable } from 'kysely';
import type { FormAttachment } from '../domain/attachments.ts';
import { OUTBOX_TOPICS } from '../domain/lifecycle.ts';
import {
  FieldTamperedError,
  sealedBytesHeader,
  sealedBytesLayout,
  sealedBytesLength,
  sealedChunkCount,
  sealedChunkLength,
  sealedChunkOffset,
  SEALED_BYTES_HEADER_MAX,
  type FieldCipher,
  type FieldPlace,
  type SealedBytesLayout,
} from '../domain/data-keys.ts';
import { openColumns, sealColumns, type DataKeys } from './data-keys/data-keys.repository.ts';
import type { AttachmentScanState, AttachmentsTable } from './schema.ts';
import type { Executor } from './executor.ts';

/** Where an attachment's bytes live: the additional data of each of their chunks. */
function contentPlace(attachmentId: string): FieldPlace {
  return { table: 'attachment_contents', column: 'content', row: attachmentId };
}

/** How much of the stored bytes a sweep compares before it writes them sealed again (header and IV). */
const RESEAL_WATCHED_BYTES = SEALED_BYTES_HEADER_MAX + 16;

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

/** A file a redirect's successor carries: the predecessor's attachment `from`, as the attachment `id`. */
export interface CarriedAttachment {
  readonly id: string;
  readonly from: string;
  /** Its name, opened (it is sealed again for the new attachment). */
  readonly fileName: string;
}

/** An attachment as a change's statement adds it: numbered by the change, which read the others. */
export interface NumberedAttachment extends NewAttachment {
  readonly number: number;
}

/**
 * An attachment's rows as parts of a change's statement (db/referrals/change.ts): written only
 * with the referral's compare-and-set, so the number and the count the change read still hold.
 */
export const attachmentWrites = {
  insert(
    db: Executor,
    cipher: FieldCipher,
    attachment: NumberedAttachment,
    content: Uint8Array,
  ): Compilable[] {
    const { file_name } = sealColumns(
      'attachments',
      { id: attachment.id },
      { file_name: attachment.fileName },
      cipher,
    );
    return [
      db.insertInto('attachments').values({
        id: attachment.id,
        referral_id: attachment.referralId,
        number: attachment.number,
        file_name,
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
        content: cipher.sealBytes(content, contentPlace(attachment.id)),
      }),
    ];
  },

  /**
   * The files a redirect's successor carries (db/referrals/change.ts): for each, the predecessor's
   * attachment as it is when the statement runs (its number, type, size, digest and scan, its author),
   * under its own ID and with its name sealed for it, reading the bytes the first of them stored
   * (`content_of`): no file is copied, and none sealed again.
   */
  carry(
    db: Executor,
    cipher: FieldCipher,
    fromReferralId: string,
    toReferralId: string,
    files: readonly CarriedAttachment[],
  ): Compilable {
    const ids = files.map((f) => f.id);
    const froms = files.map((f) => f.from);
    const names = files.map(
      (f) => sealColumns('attachments', { id: f.id }, { file_name: f.fileName }, cipher).file_name,
    );
    return db
      .insertInto('attachments')
      .columns([
        'id',
        'referral_id',
        'number',
        'file_name',
        'media_type',
        'size_bytes',
        'sha256',
        'scan_state',
        'scan_signature',
        'scanned_at',
        'added_by',
        'author_institution_id_type',
        'author_institution_id',
        'requester_identifier',
        'system',
        'created_at',
        'content_of',
      ])
      .expression(
        sql`select c.id, ${toReferralId}::uuid, a.number, c.file_name, a.media_type, a.size_bytes, a.sha256,
            a.scan_state, a.scan_signature, a.scanned_at, a.added_by, a.author_institution_id_type,
            a.author_institution_id, a.requester_identifier, a.system, a.created_at,
            coalesce(a.content_of, a.id)
          from attachments a
          join unnest(${ids}::uuid[], ${froms}::uuid[], ${names}::text[]) as c (id, from_id, file_name)
            on c.from_id = a.id
          where a.referral_id = ${fromReferralId}`,
      );
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
 * Attachments waiting for a scan since before `before`, with no scan outbox row of their
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
            .where('o.topic', '=', OUTBOX_TOPICS.attachmentScan)
            .where('o.processed_at', 'is', null),
        ),
      ),
    );
}

/** What a scan recorded. */
export interface RecordedScan {
  readonly scanState: AttachmentScanState;
  readonly scanSignature: string | null;
  readonly scannedAt: Date | null;
}

/** The scan bookkeeping, which reads no patient data (what the reconciler and the scan worker ask). */
function scanQueue(db: Executor) {
  return {
    /**
     * Records what the scan found, if the attachment still waits for it; returns the scan as
     * recorded, or undefined when it was scanned already or is gone (a scan repeated after a crash
     * changes nothing).
     */
    async recordScan(id: string, result: ScanResult, now: Date): Promise<RecordedScan | undefined> {
      const row = await db
        .updateTable('attachments')
        .set({
          scan_state: result.kind === 'clean' ? 'available' : 'rejected',
          scan_signature: result.kind === 'clean' ? null : result.signature,
          scanned_at: now,
        })
        .where('id', '=', id)
        .where('scan_state', '=', 'pending-scan')
        .returning(['scan_state', 'scan_signature', 'scanned_at'])
        .executeTakeFirst();
      return (
        row && { scanState: row.scan_state, scanSignature: row.scan_signature, scannedAt: row.scanned_at }
      );
    },

    /**
     * Attachments waiting for a scan since before `before`, oldest first (for the reconciler); those
     * of a referral with a scan outbox row still to dispatch are the relay's, and left out.
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
  };
}

export type AttachmentScanQueue = ReturnType<typeof scanQueue>;

/**
 * A piece of an attachment's stored bytes, with what shows they changed since an earlier piece: their
 * whole length, and their first `headBytes` (a sealed value's header), as the same statement saw them;
 * and the attachment they were stored for (`contentId`), whose place they are sealed under.
 */
async function storedPiece(db: Executor, id: string, offset: number, bytes: number, headBytes = 0) {
  const row = await db
    .selectFrom('attachment_contents')
    .select([
      sql<Buffer>`substring(content from ${offset + 1} for ${bytes})`.as('piece'),
      // The length of a value stored uncompressed is known without reading it.
      sql<number>`octet_length(content)`.as('length'),
      sql<Buffer>`substring(content from 1 for ${headBytes})`.as('head'),
    ])
    // A successor's file reads the bytes its predecessor's stored (`content_of`); any other, its own.
    .where(
      'attachment_id',
      '=',
      sql<string>`(select coalesce(a.content_of, a.id) from attachments a where a.id = ${id})`,
    )
    .select('attachment_id as contentId')
    .executeTakeFirst();
  if (row === undefined) throw new Error(`attachment_content_missing: ${id}`);
  return row;
}

/** Thrown when an attachment's bytes were written again while they were read a piece at a time. */
function changedMidway(id: string): Error {
  return new Error(`attachment_content_changed: ${id}`);
}

/**
 * An attachment's repository. With the data keys, all of it; without them, only the scan bookkeeping,
 * which reads no patient data.
 */
export function attachmentRepository(db: Executor): AttachmentScanQueue;
export function attachmentRepository(db: Executor, keys: DataKeys): AttachmentRepository;
export function attachmentRepository(
  db: Executor,
  keys?: DataKeys,
): AttachmentScanQueue | AttachmentRepository {
  return keys === undefined ? scanQueue(db) : withKeys(db, keys);
}

function withKeys(db: Executor, keys: DataKeys) {
  const records = (rows: Selectable<AttachmentsTable>[]) =>
    keys.reading(db, (cipher) => rows.map((row) => toRecord(openColumns('attachments', row, cipher))));

  /** The bytes of a sealed content, whole chunks at a time; `first` holds the header and what followed. */
  async function* openedChunks(
    id: string,
    sizeBytes: number,
    layout: SealedBytesLayout,
    first: { piece: Buffer; length: number },
    pieceBytes: number,
  ): AsyncGenerator<Buffer> {
    const place = contentPlace(id);
    const count = sealedChunkCount(layout, sizeBytes);
    const perRead = Math.max(1, Math.floor(pieceBytes / layout.chunkBytes));
    let header = first.piece.subarray(0, layout.headerBytes);
    let under = layout;
    let held = first.piece.subarray(layout.headerBytes);
    let index = 0;
    while (index < count) {
      // The whole chunks in hand; a chunk cut off at the end of a read is read again whole.
      const chunks: { index: number; last: boolean; sealed: Buffer }[] = [];
      for (let size = sealedChunkLength(layout, sizeBytes, index); index < count && held.length >= size;) {
        chunks.push({ index, last: index === count - 1, sealed: held.subarray(0, size) });
        held = held.subarray(size);
        index += 1;
        size = sealedChunkLength(layout, sizeBytes, index);
      }
      if (chunks.length === 0) {
        const next = await storedPiece(
          db,
          id,
          sealedChunkOffset(layout, index),
          sealedChunkOffset(layout, perRead) - layout.headerBytes,
          layout.headerBytes,
        );
        if (next.length !== first.length) throw changedMidway(id);
        if (!next.head.equals(header)) {
          // Sealed again by a rotation's sweep since the last piece: the same plaintext, laid out
          // alike, so the chunks still to read are the new seal's, and open under its key.
          const again = sealedBytesLayout(next.head);
          if (again?.headerBytes !== layout.headerBytes || again.chunkBytes !== layout.chunkBytes) {
            throw changedMidway(id);
          }
          header = next.head;
          under = again;
        }
        if (next.piece.length < sealedChunkLength(layout, sizeBytes, index)) {
          throw new FieldTamperedError(place);
        }
        held = next.piece;
        continue;
      }
      const layoutOfChunks = under;
      const opened = await keys.reading(db, (cipher) =>
        chunks.map((c) => cipher.openChunk(layoutOfChunks, c.index, c.last, c.sealed, place)),
      );
      yield* opened;
    }
  }

  /**
   * The attachment's plaintext bytes, about `pieceBytes` at a time, each piece read by a statement
   * of its own: what holds them (a scan, an answer) holds one piece at once. The content is stored
   * uncompressed, so a piece is read without the rest: the first read finds the header, and each
   * later one reads whole chunks from where the header and the file's size say they start. Each
   * chunk is handed out only once it opened.
   */
  async function* content(id: string, sizeBytes: number, pieceBytes = 1024 * 1024): AsyncGenerator<Buffer> {
    if (sizeBytes === 0) return;
    const first = await storedPiece(db, id, 0, Math.max(pieceBytes, SEALED_BYTES_HEADER_MAX));
    // The bytes are those of the attachment that stored them: the same one, or a predecessor's.
    const stored = first.contentId;
    const layout = sealedBytesLayout(first.piece);
    if (layout !== undefined && first.length === sealedBytesLength(layout, sizeBytes)) {
      yield* openedChunks(stored, sizeBytes, layout, first, pieceBytes);
      return;
    }
    // A header over bytes of another length: chunks were cut off, or added.
    if (layout !== undefined && first.length !== sizeBytes) {
      throw new FieldTamperedError(contentPlace(stored));
    }
    // Stored before field encryption: read as it is.
    yield first.piece.subarray(0, pieceBytes);
    for (let offset = pieceBytes; offset < sizeBytes; offset += pieceBytes) {
      const next = await storedPiece(db, stored, offset, pieceBytes);
      // Sealed by the sweep since the first piece: what follows is no longer the plaintext.
      if (next.length !== first.length) throw changedMidway(id);
      yield next.piece;
    }
  }

  return {
    ...scanQueue(db),
    content,

    /** The referral's attachments, in the order they were added. */
    async list(referralId: string): Promise<AttachmentRecord[]> {
      const rows = await db
        .selectFrom('attachments')
        .selectAll()
        .where('referral_id', '=', referralId)
        .orderBy('number')
        .execute();
      return records(rows);
    },

    async find(referralId: string, id: string): Promise<AttachmentRecord | undefined> {
      const row = await db
        .selectFrom('attachments')
        .selectAll()
        .where('referral_id', '=', referralId)
        .where('id', '=', id)
        .executeTakeFirst();
      return row && (await records([row]))[0];
    },

    /** The referral's files that may be read (scanned clean, or kept where nothing scans), in order. */
    async readable(referralId: string): Promise<FormAttachment[]> {
      const rows = await db
        .selectFrom('attachments')
        .select(['id', 'number', 'file_name', 'media_type', 'size_bytes', 'sha256'])
        .where('referral_id', '=', referralId)
        .where('scan_state', 'in', ['available', 'not-scanned'])
        .orderBy('number')
        .execute();
      return keys.reading(db, (cipher) =>
        rows.map((row) => ({
          id: row.id,
          number: row.number,
          fileName: openColumns('attachments', row, cipher).file_name,
          mediaType: row.media_type,
          sizeBytes: row.size_bytes,
          sha256: row.sha256,
        })),
      );
    },

    /**
     * Up to `limit` attachments after `after` (in ID order) whose bytes are not sealed under `keyId`:
     * in the clear, or under an older key. Only the header is compared.
     */
    async staleContents(
      keyId: string,
      after: string | undefined,
      limit: number,
    ): Promise<{ id: string; sizeBytes: number }[]> {
      const rows = await db
        .selectFrom('attachment_contents as c')
        .innerJoin('attachments as a', 'a.id', 'c.attachment_id')
        .select(['a.id', 'a.size_bytes'])
        .where(staleContent(keyId))
        .$if(after !== undefined, (qb) => qb.where('c.attachment_id', '>', after as string))
        .orderBy('c.attachment_id')
        .limit(limit)
        .execute();
      return rows.map((r) => ({ id: r.id, sizeBytes: r.size_bytes }));
    },

    /** How many attachments' bytes are not sealed under `keyId`. */
    async staleContentCount(keyId: string): Promise<number> {
      const row = await db
        .selectFrom('attachment_contents as c')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .where(staleContent(keyId))
        .executeTakeFirst();
      return Number(row?.n ?? 0);
    },

    /**
     * Seals an attachment's bytes again with `cipher` (read a piece at a time and opened with the keys
     * they are under), and writes them only if the stored bytes are still those read: their length,
     * header and first IV, which any other seal changes (the bytes are never otherwise rewritten).
     * False when they changed or the attachment is gone.
     */
    async resealContent(id: string, sizeBytes: number, cipher: FieldCipher): Promise<boolean> {
      const before = await db
        .selectFrom('attachment_contents')
        .select([
          sql<Buffer>`substring(content from 1 for ${RESEAL_WATCHED_BYTES})`.as('head'),
          sql<number>`octet_length(content)`.as('length'),
        ])
        .where('attachment_id', '=', id)
        .executeTakeFirst();
      if (before === undefined) return false;
      const sealer = cipher.bytesSealer(contentPlace(id));
      const sealed = [sealer.header];
      try {
        for await (const piece of content(id, sizeBytes)) sealed.push(...sealer.push(piece));
      } catch (error) {
        // Changed (or removed) while it was read: the write below would not have been made either.
        if (error instanceof Error && /^attachment_content_(changed|missing)/.test(error.message))
          return false;
        throw error;
      }
      sealed.push(sealer.end());
      const result = await db
        .updateTable('attachment_contents')
        .set({ content: Buffer.concat(sealed) })
        .where('attachment_id', '=', id)
        .where(sql<boolean>`octet_length(content) = ${before.length}`)
        .where(sql<boolean>`substring(content from 1 for ${RESEAL_WATCHED_BYTES}) = ${before.head}`)
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },
  };
}

/** Bytes of `c` (attachment_contents) that do not begin with the header of the key `keyId`. */
function staleContent(keyId: string) {
  const header = sealedBytesHeader(keyId);
  return sql<boolean>`substring(c.content from 1 for ${header.length}) <> ${header}`;
}

export type AttachmentRepository = ReturnType<typeof withKeys>;
