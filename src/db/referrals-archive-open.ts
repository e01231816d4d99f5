// Archiving referrals: an archive's lines opened again (services/retention/referrals-archive.ts reads
// the files and hands them here). The data keys the archive carries are unwrapped by the key ring, and
// each sealed value is opened at the place it was sealed for, as a store opens what it reads; a
// file's bytes chunk by chunk (domain/data-keys.ts). What it returns is patient data: for an operator
// who reads an archive back, never for a log.
import { createSecretKey, type KeyObject } from 'node:crypto';
import {
  fieldCipher,
  sealedBytesLayout,
  sealedChunkCount,
  sealedChunkLength,
  sealedChunkOffset,
  type FieldCipher,
} from '../domain/data-keys.ts';
import type { KeyEncryptionKeys } from '../domain/key-ring.ts';
import { openColumns, type SealedTable } from './data-keys/data-keys.repository.ts';
import type { ArchivedDataKey, ArchivedReferral } from './referrals-archive.repository.ts';

/** One line of an archive's `attachment-contents.ndjson`: a file's stored bytes in base64. */
export interface ArchivedContentLine {
  readonly referralId: string;
  readonly attachmentId: string;
  readonly storedAs: string;
  readonly content: string;
}

/** A referral as an archive holds it, opened: what an operator with the key ring reads back. */
export interface OpenedArchivedReferral extends ArchivedReferral {
  /** Each file's bytes, opened, by attachment ID. */
  readonly files: ReadonlyMap<string, Buffer>;
}

/** The referrals of an archive's lines, every sealed value opened with its data keys, which `ring` unwraps. */
export async function openArchivedRecords(
  lines: {
    readonly referrals: readonly ArchivedReferral[];
    readonly contents: readonly ArchivedContentLine[];
    readonly dataKeys: readonly ArchivedDataKey[];
  },
  ring: KeyEncryptionKeys,
): Promise<OpenedArchivedReferral[]> {
  const keys = new Map<string, KeyObject>();
  for (const key of lines.dataKeys) {
    keys.set(key.id, createSecretKey(await ring.unwrap(key.kekId, key.id, key.wrapped)));
  }
  const [first] = keys.keys();
  if (first === undefined) throw new Error('the archive holds no data key');
  // Opening only: the blind-index key is never used, so any key stands in for it.
  const cipher = fieldCipher(keys, first, keys.get(first) as KeyObject);
  const opened = (table: SealedTable, rows: readonly Record<string, unknown>[]) =>
    rows.map((row) => openColumns(table, row, cipher));
  return lines.referrals.map((record) => {
    const files = new Map<string, Buffer>();
    for (const file of lines.contents.filter((c) => c.referralId === record.referral.id)) {
      const size = Number(record.attachments.find((a) => a.id === file.attachmentId)?.size_bytes ?? 0);
      files.set(
        file.attachmentId,
        openBytes(Buffer.from(file.content, 'base64'), size, file.storedAs, cipher),
      );
    }
    return {
      referral: openColumns('referrals', record.referral, cipher),
      appointments: opened('appointments', record.appointments),
      notes: opened('notes', record.notes),
      outcome: record.outcome === null ? null : openColumns('referral_outcomes', record.outcome, cipher),
      attachments: opened('attachments', record.attachments),
      timeline: opened('timeline_events', record.timeline),
      forms: opened('ehr_forms', record.forms),
      deliveries: record.deliveries,
      files,
    };
  });
}

/** A file's stored bytes (sealed, chunk by chunk), opened. */
function openBytes(stored: Buffer, plainBytes: number, storedAs: string, cipher: FieldCipher): Buffer {
  const layout = sealedBytesLayout(stored);
  // Bytes stored before field encryption are in the clear.
  if (layout === undefined) return stored;
  const place = { table: 'attachment_contents', column: 'content', row: storedAs };
  const count = sealedChunkCount(layout, plainBytes);
  const chunks: Buffer[] = [];
  for (let index = 0; index < count; index += 1) {
    const offset = sealedChunkOffset(layout, index);
    const sealed = stored.subarray(offset, offset + sealedChunkLength(layout, plainBytes, index));
    chunks.push(cipher.openChunk(layout, index, index === count - 1, sealed, place));
  }
  return Buffer.concat(chunks);
}
