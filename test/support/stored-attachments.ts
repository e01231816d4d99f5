// An attachment stored straight through the repository, as a test's starting state: a file waiting
// for its scan with no job queued (as after a crash between an upload's statement and its scan's
// enqueue), of a new draft of the sender.
import { createHash, randomUUID } from 'node:crypto';
import { attachmentRepository, type AttachmentRecord } from '../../src/db/attachments.repository.ts';
import { createDraft } from './scenarios.ts';
import type { TestApp } from './test-app.ts';

export async function storedAttachment(
  t: TestApp,
  content: Buffer,
  options: { readonly fileName?: string; readonly createdAt?: Date } = {},
): Promise<AttachmentRecord> {
  const draft = await createDraft(t);
  const added = await attachmentRepository(t.ctx.db).add(
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
    20,
  );
  if (added === 'too-many') throw new Error('the draft refused the attachment');
  return added;
}
