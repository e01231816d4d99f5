// The parts of a referral kept outside its own row, sealed as its fields are, checked from the
// database's side on both engines: an attachment's name, its bytes (sealed in chunks, streamed back
// a chunk at a time), the form kept for the EHR with the names of the files it lists, a keyed
// write's stored response, and the timeline's sentences (which quote what people typed). For each:
// SQL finds no plaintext, it reads back identical, and a value copied to another row does not open.
// The bytes also refuse chunks reordered, dropped or cut short. And the sweep seals each of them
// written in the clear, and again under a new key.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentRepository, type NewAttachment } from '../../src/db/attachments.repository.ts';
import {
  dataKeyRepository,
  SEALED_COLUMNS,
  type DataKeys,
} from '../../src/db/data-keys/data-keys.repository.ts';
import { ehrFormRepository } from '../../src/db/forwarding/forms.ts';
import { createReferralStore } from '../../src/db/referrals/referrals.store.ts';
import { idempotencyRepository } from '../../src/db/idempotency.repository.ts';
import type { FormAttachment } from '../../src/domain/attachments.ts';
import {
  FieldTamperedError,
  isSealed,
  SEALED_CHUNK_BYTES,
  SEALED_CHUNK_OVERHEAD,
  sealedBytesHeader,
  sealedBytesLayout,
  sealedBytesLength,
  sealedChunkOffset,
  sealedKeyId,
  type SealedBytesLayout,
} from '../../src/domain/data-keys.ts';
import type { SweepProgress } from '../../src/services/data-keys.service.ts';
import { ENGINES } from '../support/engines.ts';
import { CATALOG, PAGES, pdf, stream } from '../support/fixtures/attachment-files.ts';
import { PATIENT } from '../support/fixtures/patients.ts';
import { call, createDraft, referralIn } from '../support/scenarios.ts';
import { apiKeyIdOf } from '../support/store-inspection.ts';
import { insertAttachment } from '../support/stored-attachments.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

/** Short enough for a test; the sweep's last pass waits it out after a new key is made. */
const REFRESH_MS = 200;
const MARKER = 'Quokkaplaintext marker';
const FILE_NAME = 'Tan Ah Kow ECG 2030.pdf';

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/** A PDF of `chunks` whole chunks and a part of another, the marker in it many times. */
function bigPdf(chunks: number): Buffer {
  const size = chunks * SEALED_CHUNK_BYTES + 1234;
  return pdf(CATALOG, PAGES, stream('', Buffer.alloc(size, `${MARKER} `)));
}

async function collect(pieces: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const all: Buffer[] = [];
  for await (const piece of pieces) all.push(piece);
  return all;
}

function newAttachment(referralId: string, bytes: Buffer, fileName = FILE_NAME): NewAttachment {
  return {
    id: randomUUID(),
    referralId,
    fileName,
    mediaType: 'application/pdf',
    sizeBytes: bytes.length,
    sha256: sha256(bytes),
    scanState: 'not-scanned',
    addedBy: 'sender',
    authorInstitution: { idType: 'hci', id: 'S1234A' },
    requesterIdentifier: null,
    system: 'HAS',
    createdAt: new Date(),
  };
}

let sequence = 0;
const freshKey = (label: string) => `${label}-${process.pid}-${++sequence}`;

describe.each(ENGINES)('parts of a referral sealed outside its row on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine, { dataKeys: { refreshMs: REFRESH_MS } });
  });
  afterAll(async () => {
    await t.close();
  });

  const attachments = (keys: DataKeys = t.ctx.dataKeys) => attachmentRepository(t.ctx.db, keys);
  const forms = () => ehrFormRepository(t.ctx.db, t.ctx.dataKeys);

  function upload(referralId: string, bytes: Buffer, fileName: string) {
    return t.request(t.sender, {
      method: 'POST',
      url: `/api/v1/referrals/${referralId}/attachments`,
      query: { ...t.sender.institution, requesterIdentifier: 'dr.tan@example.org' },
      headers: {
        'content-type': 'application/pdf',
        'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(fileName)}`,
      },
      payload: bytes,
    });
  }

  async function uploaded(bytes: Buffer, fileName = FILE_NAME) {
    const draft = await createDraft(t);
    const res = await upload(draft.id, bytes, fileName);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ id: string; referralId: string; fileName: string; sizeBytes: number }>();
  }

  const storedContent = async (id: string) =>
    (
      await t.ctx.db
        .selectFrom('attachment_contents')
        .select('content')
        .where('attachment_id', '=', id)
        .executeTakeFirstOrThrow()
    ).content;

  const setContent = (id: string, content: Buffer) =>
    t.ctx.db.updateTable('attachment_contents').set({ content }).where('attachment_id', '=', id).execute();

  describe('attachments.file_name', () => {
    it('holds no plaintext, reads back identical, and does not open copied to another row', async () => {
      const first = await uploaded(pdf(CATALOG, PAGES));
      const second = await uploaded(pdf(CATALOG, PAGES), 'another.pdf');
      expect(first.fileName).toBe(FILE_NAME);

      const { rows } = await sql<{ id: string; file_name: string }>`
        select id, file_name from attachments where id in (${first.id}, ${second.id})`.execute(t.ctx.db);
      expect(rows).toHaveLength(2);
      for (const row of rows) expect(isSealed(row.file_name), row.id).toBe(true);
      const { rows: clear } = await sql<{ n: number }>`
        select count(*)::int as n from attachments where position('Tan Ah Kow' in file_name) > 0`.execute(
        t.ctx.db,
      );
      expect(clear[0]?.n).toBe(0);

      expect((await attachments().find(first.referralId, first.id))?.fileName).toBe(FILE_NAME);
      expect((await attachments().list(second.referralId)).map((a) => a.fileName)).toEqual(['another.pdf']);
      expect((await attachments().readable(first.referralId)).map((a) => a.fileName)).toEqual([FILE_NAME]);

      await sql`update attachments set file_name = (select file_name from attachments where id = ${first.id})
        where id = ${second.id}`.execute(t.ctx.db);
      await expect(attachments().find(second.referralId, second.id)).rejects.toThrow(FieldTamperedError);
      await expect(attachments().find(second.referralId, second.id)).rejects.toThrow(
        `field_not_authentic: attachments.file_name of row ${second.id}`,
      );
    });
  });

  describe('attachment_contents.content', () => {
    it('holds no plaintext: a header naming the key, then the chunks, each with its IV and tag', async () => {
      const bytes = bigPdf(3);
      const added = await uploaded(bytes);
      const { rows } = await sql<{ at: number; length: number; head: Buffer }>`
        select position(${Buffer.from(MARKER)}::bytea in content) as at, octet_length(content) as length,
          substring(content from 1 for 64) as head
        from attachment_contents where attachment_id = ${added.id}`.execute(t.ctx.db);
      const [row] = rows;
      expect(row?.at).toBe(0);
      const { activeKeyId } = await t.ctx.dataKeys.cipher(t.ctx.db);
      const header = sealedBytesHeader(activeKeyId);
      expect(row?.head.subarray(0, header.length).equals(header)).toBe(true);
      const layout = sealedBytesLayout(row?.head ?? Buffer.alloc(0)) as SealedBytesLayout;
      expect(layout).toEqual({
        keyId: activeKeyId,
        chunkBytes: SEALED_CHUNK_BYTES,
        headerBytes: header.length,
      });
      // Four chunks: three whole, and the rest.
      expect(Number(row?.length)).toBe(header.length + bytes.length + 4 * SEALED_CHUNK_OVERHEAD);
      expect(Number(row?.length)).toBe(sealedBytesLength(layout, bytes.length));
    });

    it('streams a file of many chunks back byte for byte, a chunk at a time, however it is asked', async () => {
      const bytes = bigPdf(5);
      const added = await uploaded(bytes);
      // Through the API, as a clinic reads it.
      const res = await t.request(t.sender, {
        method: 'GET',
        url: `/api/v1/referrals/${added.referralId}/attachments/${added.id}/content`,
        query: { ...t.sender.institution, requesterIdentifier: 'dr.tan@example.org' },
      });
      expect(res.statusCode, res.body.slice(0, 200)).toBe(200);
      expect(res.rawPayload.equals(bytes)).toBe(true);
      // And from the store, a piece of a chunk, of a chunk and a half, and of the default size asked.
      for (const pieceBytes of [1000, Math.floor(SEALED_CHUNK_BYTES * 1.5), undefined]) {
        const pieces = await collect(attachments().content(added.id, bytes.length, pieceBytes));
        expect(pieces.length, String(pieceBytes)).toBe(6);
        expect(pieces.every((p) => p.length <= SEALED_CHUNK_BYTES)).toBe(true);
        expect(Buffer.concat(pieces).equals(bytes), String(pieceBytes)).toBe(true);
      }
      // What the EHR forwarder sends: the plaintext bytes, whose digest is the one recorded.
      const [file] = await attachments().readable(added.referralId);
      const sent = await t.ctx.ehrForwarding.attachmentContent(file as FormAttachment);
      expect(sha256(sent)).toBe(file?.sha256);
      expect(sent.equals(bytes)).toBe(true);
    });

    it('refuses chunks reordered, dropped, cut short, changed or copied to another file', async () => {
      const draft = await createDraft(t);
      const bytes = Buffer.concat([randomBytes(3 * SEALED_CHUNK_BYTES), Buffer.from(MARKER)]);
      const a = await insertAttachment(t.ctx.db, t.ctx.dataKeys, newAttachment(draft.id, bytes), bytes);
      const b = await insertAttachment(t.ctx.db, t.ctx.dataKeys, newAttachment(draft.id, bytes), bytes);
      const sealed = await storedContent(a.id);
      const layout = sealedBytesLayout(sealed) as SealedBytesLayout;
      const chunk = (i: number) =>
        sealed.subarray(
          sealedChunkOffset(layout, i),
          i === 3 ? sealed.length : sealedChunkOffset(layout, i + 1),
        );
      const header = sealed.subarray(0, layout.headerBytes);
      const read = (size = bytes.length) => collect(attachments().content(a.id, size));
      expect(Buffer.concat(await read()).equals(bytes)).toBe(true);

      const flipped = Buffer.from(sealed);
      const at = sealedChunkOffset(layout, 1) + 20;
      flipped.writeUInt8(flipped.readUInt8(at) ^ 1, at);
      const tampered: [string, Buffer, number?][] = [
        ['two chunks swapped', Buffer.concat([header, chunk(1), chunk(0), chunk(2), chunk(3)])],
        ['the last chunk dropped', Buffer.concat([header, chunk(0), chunk(1), chunk(2)])],
        // With the size changed to match: the chunk now last was not sealed as the last.
        [
          'the last chunk dropped, size and all',
          Buffer.concat([header, chunk(0), chunk(1), chunk(2)]),
          3 * SEALED_CHUNK_BYTES,
        ],
        ['cut short by a byte', sealed.subarray(0, sealed.length - 1)],
        ['a chunk changed', flipped],
        [
          'a chunk from another file',
          Buffer.concat([
            header,
            chunk(0),
            (await storedContent(b.id)).subarray(sealedChunkOffset(layout, 1), sealedChunkOffset(layout, 2)),
            chunk(2),
            chunk(3),
          ]),
        ],
      ];
      for (const [what, content, size] of tampered) {
        await setContent(a.id, content);
        await expect(read(size), what).rejects.toThrow(FieldTamperedError);
      }
      // A file's bytes copied whole to another file of the same size.
      await setContent(b.id, sealed);
      await expect(collect(attachments().content(b.id, bytes.length))).rejects.toThrow(
        `field_not_authentic: attachment_contents.content of row ${b.id}`,
      );
      // Put back, it reads again.
      await setContent(a.id, sealed);
      expect(Buffer.concat(await read()).equals(bytes)).toBe(true);
    });

    it('seals a file of whole chunks with no empty chunk after them', async () => {
      const draft = await createDraft(t);
      const whole = randomBytes(2 * SEALED_CHUNK_BYTES);
      const a = await insertAttachment(t.ctx.db, t.ctx.dataKeys, newAttachment(draft.id, whole), whole);
      const stored = await storedContent(a.id);
      const layout = sealedBytesLayout(stored) as SealedBytesLayout;
      // Two chunks, the second last and whole: no empty chunk after it.
      expect(stored.length).toBe(layout.headerBytes + whole.length + 2 * SEALED_CHUNK_OVERHEAD);
      expect(Buffer.concat(await collect(attachments().content(a.id, whole.length))).equals(whole)).toBe(
        true,
      );
    });

    it('does not write a file sealed again over bytes that changed since they were read', async () => {
      const draft = await createDraft(t);
      const bytes = bigPdf(2);
      const a = await insertAttachment(t.ctx.db, t.ctx.dataKeys, newAttachment(draft.id, bytes), bytes);
      const cipher = await t.ctx.dataKeys.cipher(t.ctx.db);
      // Another sweep seals the file again while this one reads it: its keys' first use is the moment.
      let other: Buffer | undefined;
      const racing: DataKeys = {
        ...t.ctx.dataKeys,
        reading: async (db, read) => {
          if (other === undefined) {
            expect(await attachments().resealContent(a.id, bytes.length, cipher)).toBe(true);
            other = await storedContent(a.id);
          }
          return t.ctx.dataKeys.reading(db, read);
        },
      };
      expect(await attachments(racing).resealContent(a.id, bytes.length, cipher)).toBe(false);
      expect((await storedContent(a.id)).equals(other as Buffer)).toBe(true);
      expect(Buffer.concat(await collect(attachments().content(a.id, bytes.length))).equals(bytes)).toBe(
        true,
      );
      // Gone: nothing to write.
      expect(await attachments().resealContent(randomUUID(), bytes.length, cipher)).toBe(false);
    });

    it('reads on when a rotation seals the file again while it is read, the rest under the new key', async () => {
      const draft = await createDraft(t);
      const bytes = bigPdf(3);
      const a = await insertAttachment(t.ctx.db, t.ctx.dataKeys, newAttachment(draft.id, bytes), bytes);
      const older = (await t.ctx.dataKeys.cipher(t.ctx.db)).activeKeyId;
      // A rotation's sweep seals the file again under a new key once the first chunk has been read.
      let newer: string | undefined;
      const racing: DataKeys = {
        ...t.ctx.dataKeys,
        reading: async (db, read) => {
          if (newer === undefined) {
            await dataKeyRepository(t.ctx.db).makeFieldsKey(t.ctx.dataKeys.ring);
            const cipher = await t.ctx.dataKeys.reload(t.ctx.db);
            newer = cipher.activeKeyId;
            expect(await attachments().resealContent(a.id, bytes.length, cipher)).toBe(true);
          }
          return t.ctx.dataKeys.reading(db, read);
        },
      };
      const pieces = await collect(attachments(racing).content(a.id, bytes.length, 1000));
      expect(newer).not.toBe(older);
      expect(sealedBytesLayout(await storedContent(a.id))?.keyId).toBe(newer);
      expect(pieces).toHaveLength(4);
      expect(Buffer.concat(pieces).equals(bytes)).toBe(true);
    });
  });

  describe('timeline_events.description', () => {
    const query = () =>
      new URLSearchParams({ ...t.sender.institution, requesterIdentifier: 'dr.tan@example.org' }).toString();
    const timelineOf = async (id: string) =>
      (
        (await call(t, t.sender, 'GET', `/api/v1/referrals/${id}?${query()}`)) as {
          timelineEvents: { id: string; type: string; description: string }[];
        }
      ).timelineEvents;
    const note = `${MARKER}: ${PATIENT.patientName} recovered`;

    it('holds no plaintext, reads back quoting what was typed, and does not open copied to another row', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      await call(t, t.sender, 'POST', `/api/v1/referrals/${referral.id}/cancel`, { cancelNote: note });
      // An attempt of the forwarder writes its event in a statement of its own.
      await t.ctx.ehrForwarding.recordAttempt({
        referralId: referral.id,
        messageId: `${referral.id}.v3`,
        version: 3,
        attempt: 1,
        startedAt: t.ctx.clock.now(),
        durationMs: 30,
        sha256: 'c'.repeat(64),
        outcome: 'delivered',
        httpStatus: 201,
        errorCode: null,
        reference: 'EHR-42',
        requestId: 'sealed-timeline',
      });
      const timeline = await timelineOf(referral.id);
      expect(timeline.map((e) => [e.type, e.description])).toEqual([
        ['referral.created', 'Bukit Timah Family Clinic created the referral as a draft.'],
        [
          'referral.pending-acceptance',
          'Bukit Timah Family Clinic submitted the referral to Central General Hospital; it is awaiting acceptance.',
        ],
        ['referral.cancelled', `Bukit Timah Family Clinic cancelled the referral: ${note}`],
        [
          'ehr.forwarded',
          'The referral form was delivered to the national health record (reference EHR-42).',
        ],
      ]);

      const { rows } = await sql<{ id: string; description: string }>`
        select id, description from timeline_events where referral_id = ${referral.id} order by seq`.execute(
        t.ctx.db,
      );
      expect(rows.map((r) => r.id)).toEqual(timeline.map((e) => e.id));
      for (const row of rows) expect(isSealed(row.description), row.id).toBe(true);
      const { rows: clear } = await sql<{ n: number }>`
        select count(*)::int as n from timeline_events
        where position(${MARKER} in description) > 0 or position('cancelled the referral' in description) > 0`.execute(
        t.ctx.db,
      );
      expect(clear[0]?.n).toBe(0);
      // The feed's sentence quotes nothing, so it is not sealed: it holds no patient data.
      const { rows: events } = await sql<{ description: string }>`
        select description from referral_events where referral_id = ${referral.id} and type = 'referral.cancelled'`.execute(
        t.ctx.db,
      );
      expect(events).toEqual([{ description: 'Bukit Timah Family Clinic cancelled the referral.' }]);

      const [first, second] = rows;
      if (first === undefined || second === undefined) throw new Error('no timeline rows');
      await sql`update timeline_events set description = ${first.description} where id = ${second.id}`.execute(
        t.ctx.db,
      );
      await expect(
        createReferralStore(t.ctx.db, t.ctx.dataKeys).findVisibleWithParts(referral.id, {
          idType: 'hci',
          id: 'S1234A',
        }),
      ).rejects.toThrow(`field_not_authentic: timeline_events.description of row ${second.id}`);
    });
  });

  describe('ehr_forms.html', () => {
    const form = (name: string) => ({
      html: `<!doctype html><html><body><h1>${PATIENT.patientName}</h1><p>${MARKER}</p><p>${name}</p></body></html>`,
      formType: 'referral',
    });
    const files = (fileName: string): FormAttachment[] => [
      {
        id: randomUUID(),
        number: 1,
        fileName,
        mediaType: 'application/pdf',
        sizeBytes: 10,
        sha256: sha256('x'),
      },
    ];

    it('holds no plaintext, keeps the hash of the bytes sent, and reads back identical', async () => {
      const draft = await createDraft(t);
      const messageId = `${draft.id}.v1`;
      const rendered = form(FILE_NAME);
      const listed = files(FILE_NAME);
      const kept = await t.ctx.ehrForwarding.keepForm(messageId, draft.id, 1, rendered, listed);
      expect(kept).toMatchObject({ changed: false, form: { html: rendered.html, attachments: listed } });

      const row = await t.ctx.db
        .selectFrom('ehr_forms')
        .select(['html', 'sha256', sql<string>`attachments::text`.as('attachments')])
        .where('message_id', '=', messageId)
        .executeTakeFirstOrThrow();
      expect(isSealed(row.html)).toBe(true);
      for (const clear of [PATIENT.patientName, MARKER, 'Tan Ah Kow']) {
        expect(row.html).not.toContain(clear);
        expect(row.attachments).not.toContain(clear);
      }
      // The ledger's hash is the SHA-256 of the bytes sent: the form in the clear.
      expect(row.sha256).toBe(sha256(rendered.html));

      const stored = await forms().byMessageId(messageId);
      expect(stored).toMatchObject({
        html: rendered.html,
        sha256: sha256(rendered.html),
        attachments: listed,
      });
      expect((await forms().ofVersion(draft.id, 1))?.html).toBe(rendered.html);
      // A retry of the message sends the kept bytes, opened.
      const again = await t.ctx.ehrForwarding.keepForm(messageId, draft.id, 1, form('changed since'), listed);
      expect(again).toMatchObject({ changed: true, form: { html: rendered.html, attachments: listed } });
    });

    it('does not open a form, or a listed file name, copied to another message', async () => {
      const draft = await createDraft(t);
      const [first, second] = [`${draft.id}.v1`, `${draft.id}.v2`];
      await t.ctx.ehrForwarding.keepForm(first, draft.id, 1, form('first'), files(FILE_NAME));
      await t.ctx.ehrForwarding.keepForm(second, draft.id, 2, form('second'), files('other.pdf'));
      await sql`update ehr_forms set attachments = (select attachments from ehr_forms where message_id = ${first})
        where message_id = ${second}`.execute(t.ctx.db);
      await expect(forms().byMessageId(second)).rejects.toThrow(FieldTamperedError);
      await t.ctx.ehrForwarding.keepForm(`${draft.id}.v3`, draft.id, 3, form('third'), []);
      await sql`update ehr_forms set html = (select html from ehr_forms where message_id = ${first})
        where message_id = ${`${draft.id}.v3`}`.execute(t.ctx.db);
      await expect(forms().ofVersion(draft.id, 3)).rejects.toThrow(
        `field_not_authentic: ehr_forms.html of row ${draft.id}.v3`,
      );
      expect((await forms().byMessageId(first))?.html).toBe(form('first').html);
    });
  });

  describe('idempotency_keys.response_body', () => {
    const create = (key: string): InjectOptions => ({
      method: 'POST',
      url: '/api/v1/referrals',
      headers: { 'idempotency-key': key },
      payload: { ...t.sender.institution, offeringId: 'cgh-gastro', ...PATIENT, clinicalInfo: MARKER },
    });
    const search = (key: string): InjectOptions => ({
      method: 'POST',
      url: '/api/v1/institutions/hci/S1234A/referrals/search',
      headers: { 'idempotency-key': key },
      payload: { patientUin: PATIENT.patientUin, requesterIdentifier: 'dr.tan@example.org' },
    });
    const stored = async (key: string) =>
      (
        await t.ctx.db
          .selectFrom('idempotency_keys')
          .select('response_body')
          .where('api_key_id', '=', await apiKeyIdOf(t, t.sender))
          .where('key', '=', key)
          .executeTakeFirstOrThrow()
      ).response_body;

    it('holds no plaintext, for a write and for a keyed request that wrote nothing, and replays identical', async () => {
      const [written, searched] = [freshKey('sealed-create'), freshKey('sealed-search')];
      const first = await t.request(t.sender, create(written));
      expect(first.statusCode, first.body).toBe(201);
      expect(first.body).toContain(PATIENT.patientName);
      const found = await t.request(t.sender, search(searched));
      expect(found.statusCode, found.body).toBe(200);
      expect(found.body).toContain(PATIENT.patientName);
      for (const key of [written, searched]) {
        const body = (await stored(key)) as string;
        expect(isSealed(body), key).toBe(true);
        for (const clear of [PATIENT.patientName, PATIENT.patientUin, MARKER])
          expect(body).not.toContain(clear);
      }
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from idempotency_keys where position(${PATIENT.patientName} in response_body) > 0`.execute(
        t.ctx.db,
      );
      expect(rows[0]?.n).toBe(0);

      const record = await idempotencyRepository(t.ctx.db, t.ctx.dataKeys).find(
        await apiKeyIdOf(t, t.sender),
        written,
      );
      expect(record?.response?.body).toBe(first.body);
      const replay = await t.request(t.sender, create(written));
      expect(replay.statusCode).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toBe(first.body);
      const replayedSearch = await t.request(t.sender, search(searched));
      expect(replayedSearch.headers['idempotent-replayed']).toBe('true');
      expect(replayedSearch.body).toBe(found.body);
    });

    it('does not open a stored response copied to another key', async () => {
      const [first, second] = [freshKey('sealed-a'), freshKey('sealed-b')];
      expect((await t.request(t.sender, create(first))).statusCode).toBe(201);
      expect((await t.request(t.sender, create(second))).statusCode).toBe(201);
      const apiKeyId = await apiKeyIdOf(t, t.sender);
      await sql`update idempotency_keys set response_body = ${await stored(first)}
        where api_key_id = ${apiKeyId} and key = ${second}`.execute(t.ctx.db);
      await expect(idempotencyRepository(t.ctx.db, t.ctx.dataKeys).find(apiKeyId, second)).rejects.toThrow(
        `field_not_authentic: idempotency_keys.response_body of row ${apiKeyId}/${second}`,
      );
    });
  });
});

// In an app of its own: the tests above leave values copied where they do not open, which a rotation
// would stop at.
describe.each(ENGINES)('the sweep of the parts sealed outside a referral row on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine, { dataKeys: { refreshMs: REFRESH_MS } });
  });
  afterAll(async () => {
    await t.close();
  });
  const attachments = () => attachmentRepository(t.ctx.db, t.ctx.dataKeys);
  const forms = () => ehrFormRepository(t.ctx.db, t.ctx.dataKeys);

  it('seals each of them written in the clear, and seals them again under a new key', async () => {
    // What a refhub before field encryption stored: every one of them in the clear.
    const draft = await createDraft(t);
    const bytes = bigPdf(2);
    const a = await insertAttachment(t.ctx.db, t.ctx.dataKeys, newAttachment(draft.id, bytes), bytes);
    await sql`update attachments set file_name = ${FILE_NAME} where id = ${a.id}`.execute(t.ctx.db);
    await t.ctx.db
      .updateTable('attachment_contents')
      .set({ content: bytes })
      .where('attachment_id', '=', a.id)
      .execute();
    const messageId = `${draft.id}.v9`;
    const listed = await attachments().readable(draft.id);
    expect(listed.map((f) => f.fileName)).toEqual([FILE_NAME]);
    await t.ctx.ehrForwarding.keepForm(
      messageId,
      draft.id,
      9,
      { html: `<p>${MARKER}</p>`, formType: 'referral' },
      [],
    );
    await sql`update ehr_forms set html = ${`<p>${MARKER}</p>`}, attachments = ${JSON.stringify(listed)}::jsonb
        where message_id = ${messageId}`.execute(t.ctx.db);
    const key = freshKey('sealed-legacy');
    const created = await t.request(t.sender, {
      method: 'POST',
      url: '/api/v1/referrals',
      headers: { 'idempotency-key': key },
      payload: { ...t.sender.institution, offeringId: 'cgh-gastro', ...PATIENT },
    });
    const apiKeyId = await apiKeyIdOf(t, t.sender);
    await sql`update idempotency_keys set response_body = ${created.body}
        where api_key_id = ${apiKeyId} and key = ${key}`.execute(t.ctx.db);
    const createdEvent = await t.ctx.db
      .selectFrom('timeline_events')
      .select('id')
      .where('referral_id', '=', draft.id)
      .where('type', '=', 'referral.created')
      .executeTakeFirstOrThrow();
    const sentence = 'Bukit Timah Family Clinic created the referral as a draft.';
    await sql`update timeline_events set description = ${sentence} where id = ${createdEvent.id}`.execute(
      t.ctx.db,
    );

    const stored = async (k: string) =>
      (
        await t.ctx.db
          .selectFrom('idempotency_keys')
          .select('response_body')
          .where('api_key_id', '=', apiKeyId)
          .where('key', '=', k)
          .executeTakeFirstOrThrow()
      ).response_body;
    const storedContent = async () =>
      (
        await t.ctx.db
          .selectFrom('attachment_contents')
          .select('content')
          .where('attachment_id', '=', a.id)
          .executeTakeFirstOrThrow()
      ).content;

    /** Everything reads as it was written, whatever it is sealed under. */
    const readsBack = async () => {
      expect((await attachments().find(draft.id, a.id))?.fileName).toBe(FILE_NAME);
      expect(Buffer.concat(await collect(attachments().content(a.id, bytes.length))).equals(bytes)).toBe(
        true,
      );
      expect(await forms().byMessageId(messageId)).toMatchObject({
        html: `<p>${MARKER}</p>`,
        attachments: listed,
      });
      const record = await idempotencyRepository(t.ctx.db, t.ctx.dataKeys).find(apiKeyId, key);
      expect(record?.response?.body).toBe(created.body);
      const read = await createReferralStore(t.ctx.db, t.ctx.dataKeys).findVisibleWithParts(draft.id, {
        idType: 'hci',
        id: 'S1234A',
      });
      expect(read?.parts.timelineEvents.find((e) => e.id === createdEvent.id)?.description).toBe(sentence);
    };
    const under = async () => {
      const attachment = await t.ctx.db
        .selectFrom('attachments')
        .select('file_name')
        .where('id', '=', a.id)
        .executeTakeFirstOrThrow();
      const kept = await t.ctx.db
        .selectFrom('ehr_forms')
        .select(['html', 'attachments'])
        .where('message_id', '=', messageId)
        .executeTakeFirstOrThrow();
      const response = await stored(key);
      const event = await t.ctx.db
        .selectFrom('timeline_events')
        .select('description')
        .where('id', '=', createdEvent.id)
        .executeTakeFirstOrThrow();
      return {
        file_name: sealedKeyId(attachment.file_name),
        content: sealedBytesLayout(await storedContent())?.keyId,
        html: sealedKeyId(kept.html),
        listed: kept.attachments.map((f) => sealedKeyId(f.fileName)),
        response_body: sealedKeyId(response as string),
        timeline: sealedKeyId(event.description),
      };
    };
    await readsBack();
    expect(await under()).toEqual({
      file_name: undefined,
      content: undefined,
      html: undefined,
      listed: [undefined],
      response_body: undefined,
      timeline: undefined,
    });
    const before = await t.ctx.dataKeyRotation.status();
    expect(before.stale).toMatchObject({
      attachments: 1,
      attachment_contents: 1,
      ehr_forms: 1,
      idempotency_keys: 1,
      timeline_events: 1,
    });

    const progress: SweepProgress[] = [];
    const swept = await t.ctx.dataKeyRotation.sweep((p) => {
      progress.push(p);
    });
    expect(swept.sealed).toBe(5);
    const all = (keyId: string) => ({
      file_name: keyId,
      content: keyId,
      html: keyId,
      listed: [keyId],
      response_body: keyId,
      timeline: keyId,
    });
    expect(await under()).toEqual(all(swept.keyId));
    expect(progress).toContainEqual({ keyId: swept.keyId, table: 'attachment_contents', done: 1, total: 1 });
    await readsBack();
    const after = await t.ctx.dataKeyRotation.status();
    expect(Object.values(after.stale)).toEqual(Object.values(after.stale).map(() => 0));
    expect(Object.keys(after.stale).sort()).toEqual(
      [...Object.keys(SEALED_COLUMNS), 'attachment_contents'].sort(),
    );

    // A rotation seals every one of them again under its new key.
    const rotated = await t.ctx.dataKeyRotation.rotate();
    expect(rotated.keyId).not.toBe(swept.keyId);
    expect(await under()).toEqual(all(rotated.keyId));
    await readsBack();
    expect(Object.values((await t.ctx.dataKeyRotation.status()).stale).every((n) => n === 0)).toBe(true);
  });
});
