// The attachments' store on both engines: listed in the order added, the bytes read back in pieces
// exactly as stored (sealed, or in the clear as before field encryption), a scan's result recorded
// once, a removal that takes the bytes with it, and a file carried to a redirect's successor. (The number and the limit are kept by the change
// that adds a file: test/api/routes/attachments.int.test.ts; the sealing itself:
// test/db/sealed-parts.int.test.ts.)
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attachmentRepository,
  attachmentWrites,
  type NewAttachment,
} from '../../src/db/attachments.repository.ts';
import { ENGINES } from '../support/engines.ts';
import { createDraft } from '../support/scenarios.ts';
import { deleteAttachment, insertAttachment } from '../support/stored-attachments.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe.each(ENGINES)('attachments repository on %s', (engine) => {
  let t: TestApp;
  const now = new Date('2030-01-01T00:00:00.000Z');
  beforeAll(async () => {
    t = await createTestApp(engine, { clock: { now: () => now } });
  });
  afterAll(async () => {
    await t.close();
  });

  function attachment(referralId: string, content: Uint8Array, name = 'ecg.pdf'): NewAttachment {
    return {
      id: randomUUID(),
      referralId,
      fileName: name,
      mediaType: 'application/pdf',
      sizeBytes: content.length,
      sha256: sha256(content),
      scanState: 'pending-scan',
      addedBy: 'sender',
      authorInstitution: { idType: 'hci', id: 'S1234A' },
      requesterIdentifier: 'dr.lim@example.org',
      system: 'HAS',
      createdAt: now,
    };
  }

  const add = (a: NewAttachment, content: Uint8Array) =>
    insertAttachment(t.ctx.db, t.ctx.dataKeys, a, content);
  const repository = () => attachmentRepository(t.ctx.db, t.ctx.dataKeys);

  const collect = async (pieces: AsyncIterable<Buffer>) => {
    const all: Buffer[] = [];
    for await (const piece of pieces) all.push(piece);
    return all;
  };

  it('numbers attachments in the order added and reads each back as stored, a piece at a time', async () => {
    const repo = repository();
    const draft = await createDraft(t);
    const first = randomBytes(2500);
    const second = Buffer.from('%PDF-1.7 second');
    const a = await add(attachment(draft.id, first, 'ECG 1.pdf'), first);
    const b = await add(attachment(draft.id, second), second);
    expect(a).toMatchObject({ number: 1, fileName: 'ECG 1.pdf', sizeBytes: 2500, scanState: 'pending-scan' });
    expect(b).toMatchObject({ number: 2, scanSignature: null, scannedAt: null });
    expect((await repo.list(draft.id)).map((r) => r.id)).toEqual([a.id, b.id]);
    expect(await repo.find(draft.id, a.id)).toEqual(a);
    // Another referral's ID does not find it.
    const other = await createDraft(t);
    expect(await repo.find(other.id, a.id)).toBeUndefined();

    // Sealed bytes are read a whole chunk at least at a time (64 KiB of plaintext): this file is one.
    const pieces = await collect(repo.content(a.id, a.sizeBytes, 1000));
    expect(pieces.map((p) => p.length)).toEqual([2500]);
    expect(Buffer.concat(pieces).equals(first)).toBe(true);
    expect(Buffer.concat(await collect(repo.content(b.id, b.sizeBytes))).equals(second)).toBe(true);
  });

  it('reads bytes stored before field encryption as they are, a piece of the size asked at a time', async () => {
    const repo = repository();
    const draft = await createDraft(t);
    const bytes = randomBytes(2500);
    const a = await add(attachment(draft.id, bytes), bytes);
    await t.ctx.db
      .updateTable('attachment_contents')
      .set({ content: bytes })
      .where('attachment_id', '=', a.id)
      .execute();
    const pieces = await collect(repo.content(a.id, a.sizeBytes, 1000));
    expect(pieces.map((p) => p.length)).toEqual([1000, 1000, 500]);
    expect(Buffer.concat(pieces).equals(bytes)).toBe(true);
  });

  it('records a scan once: available when clean, rejected with the signature when not', async () => {
    const repo = repository();
    const draft = await createDraft(t);
    const content = Buffer.from('scan me');
    const clean = await add(attachment(draft.id, content), content);
    const infected = await add(attachment(draft.id, content), content);
    const later = new Date(now.getTime() + 1000);
    expect(await repo.recordScan(clean.id, { kind: 'clean' }, later)).toMatchObject({
      scanState: 'available',
      scanSignature: null,
      scannedAt: later,
    });
    expect(
      await repo.recordScan(infected.id, { kind: 'infected', signature: 'Eicar-Signature' }, later),
    ).toMatchObject({ scanState: 'rejected', scanSignature: 'Eicar-Signature', scannedAt: later });
    // A repeated scan (a job run again after a crash) changes nothing.
    expect(await repo.recordScan(clean.id, { kind: 'infected', signature: 'x' }, later)).toBeUndefined();
    expect((await repo.find(draft.id, clean.id))?.scanState).toBe('available');
  });

  it('lists the attachments still waiting for a scan since before a time, oldest first', async () => {
    const repo = repository();
    const draft = await createDraft(t);
    const content = Buffer.from('waiting');
    const waiting = await add(attachment(draft.id, content), content);
    const pending = await repo.pendingScan(new Date(now.getTime() + 1), 1000);
    expect(pending).toContainEqual({ id: waiting.id, referralId: draft.id });
    expect(await repo.pendingScan(now, 1000)).not.toContainEqual({ id: waiting.id, referralId: draft.id });
  });

  it('removes an attachment with its bytes, and only the referral’s own', async () => {
    const repo = repository();
    const draft = await createDraft(t);
    const other = await createDraft(t);
    const content = Buffer.from('remove me');
    const added = await add(attachment(draft.id, content), content);
    await deleteAttachment(t.ctx.db, other.id, added.id);
    expect(await repo.list(draft.id)).toHaveLength(1);
    await deleteAttachment(t.ctx.db, draft.id, added.id);
    expect(await repo.list(draft.id)).toEqual([]);
    const left = await t.ctx.db
      .selectFrom('attachment_contents')
      .select('attachment_id')
      .where('attachment_id', '=', added.id)
      .execute();
    expect(left).toEqual([]);
  });

  it('a file carried to a redirect’s successor reads the bytes the first one stored, which stay while it does', async () => {
    const repo = repository();
    const from = await createDraft(t);
    const to = await createDraft(t);
    // Several chunks, read a piece at a time through the successor's own attachment.
    const bytes = randomBytes(300_000);
    const original = await add(attachment(from.id, bytes, 'Tan Ah Kow ECG.pdf'), bytes);
    const carried = { id: randomUUID(), from: original.id, fileName: original.fileName };
    const cipher = await t.ctx.dataKeys.cipher(t.ctx.db);
    await t.ctx.db.executeQuery(
      attachmentWrites.carry(t.ctx.db, cipher, from.id, to.id, [carried]).compile(),
    );

    const found = await repo.find(to.id, carried.id);
    expect(found).toEqual({ ...original, id: carried.id, referralId: to.id });
    const pieces = await collect(repo.content(carried.id, original.sizeBytes, 100_000));
    expect(pieces.length).toBeGreaterThan(1);
    expect(Buffer.concat(pieces).equals(bytes)).toBe(true);
    // Its name is sealed for it: the stored value is not the original's.
    const names = await t.ctx.db
      .selectFrom('attachments')
      .select(['id', 'file_name', 'content_of'])
      .where('id', 'in', [original.id, carried.id])
      .execute();
    const stored = new Map(names.map((n) => [n.id, n]));
    expect(stored.get(carried.id)?.file_name).not.toBe(stored.get(original.id)?.file_name);
    expect(stored.get(carried.id)?.content_of).toBe(original.id);
    // Its scan is its own.
    expect(await repo.recordScan(carried.id, { kind: 'clean' }, now)).toMatchObject({
      scanState: 'available',
    });
    expect((await repo.find(from.id, original.id))?.scanState).toBe('pending-scan');
    // The bytes cannot go while a carried file reads them.
    await expect(deleteAttachment(t.ctx.db, from.id, original.id)).rejects.toThrow();
    expect(Buffer.concat(await collect(repo.content(carried.id, original.sizeBytes))).equals(bytes)).toBe(
      true,
    );
  });
});
