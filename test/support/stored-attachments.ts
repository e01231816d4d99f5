// Attachments stored straight through the store's writes, as a test's starting state: the rows a
// change's statement writes (attachmentWrites, sealing the name and the bytes with the store's data
// keys), without the change around them. `storedAttachment`
// is a file waiting for its scan with no job queued (as after a crash between an upload's statement
// and its scan's enqueue), of a new draft of the sender.
import { createHash, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import {
  attachmentRepository,
  attachmentWrites,
  type AttachmentRecord,
  type NewAttachment,
} from '../../src/db/attachments.repository.ts';
import type { DataKeys } from '../../src/db/data-keys/data-keys.repository.ts';
import type { Database } from '../../src/db/schema.ts';
import { createDraft } from './scenarios.ts';
import type { TestApp } from './test-app.ts';

/** Stores `attachment` with its bytes, numbered after the referral's others, and reads it back. */
export async function insertAttachment(
  db: Kysely<Database>,
  keys: DataKeys,
  attachment: NewAttachment,
  content: Uint8Array,
): Promise<AttachmentRecord> {
  const repo = attachmentRepository(db, keys);
  const number = (await repo.list(attachment.referralId)).length + 1;
  const cipher = await keys.cipher(db);
  await db.transaction().execute(async (trx) => {
    for (const write of attachmentWrites.insert(trx, cipher, { ...attachment, number }, content))
      await trx.executeQuery(write.compile());
  });
  const stored = await repo.find(attachment.referralId, attachment.id);
  if (stored === undefined) throw new Error(`attachment ${attachment.id} was not stored`);
  return stored;
}

/** Removes an attachment as a removal's statement does. */
export async function deleteAttachment(db: Kysely<Database>, referralId: string, id: string): Promise<void> {
  await db.executeQuery(attachmentWrites.remove(db, referralId, id).compile());
}

export async function storedAttachment(
  t: TestApp,
  content: Buffer,
  options: { readonly fileName?: string; readonly createdAt?: Date } = {},
): Promise<AttachmentRecord> {
  const draft = await createDraft(t);
  return insertAttachment(
    t.ctx.db,
    t.ctx.dataKeys,
    {
      id: randomUUID(),
      referralId: draft.id,
      fileName: options.fileName ?? 'letter.pdf',
      mediaType: 'application/pdf',
      sizeBytes: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      scanState: 'pending-scan',
      addedBy: 'sender',
      authorInstitution: { idType: 'hci', id: 'S1234A' },
      requesterIdentifier: null,
      system: 'HAS',
      createdAt: options.createdAt ?? t.ctx.clock.now(),
    },
    content,
  );
}
