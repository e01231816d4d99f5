// Files through @refhub/client alone, against a real listening refhub: a clinic attaches a letter to
// a draft and reads it back byte for byte (checked against refhub's Content-Digest), retries an upload
// whose answer was lost and gets the first answer, removes a file from the draft; the hospital attaches
// its consultation letter once it has accepted, and the clinic downloads it. Refusals arrive as typed
// problems. No casts.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRefhubClient,
  RefhubProblemError,
  type InstitutionClient,
} from '../../../clients/typescript/src/index.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { CATALOG, GIF, PAGES, pdf, TEXT } from '../../support/fixtures/attachment-files.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { createTestApp, listeningUrl, type TestApp, type TestParty } from '../../support/test-app.ts';

const LETTER = pdf(CATALOG, PAGES);
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function problemOf(call: Promise<unknown>): Promise<RefhubProblemError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof RefhubProblemError) return error;
    throw error;
  }
  throw new Error('the call succeeded, but a problem was expected');
}

describe.each(APP_ENGINES)('attachments through @refhub/client on %s', (engine) => {
  let t: TestApp;
  let clinic: InstitutionClient;
  let hospital: InstitutionClient;

  beforeAll(async () => {
    t = await createTestApp(engine);
    const baseUrl = await listeningUrl(t);
    const actingAs = (party: TestParty, requesterIdentifier: string) =>
      createRefhubClient({ baseUrl, apiKey: party.key }).actingFor({
        ...party.institution,
        requesterIdentifier,
      });
    clinic = actingAs(t.sender, 'dr.lim@bukittimah.example');
    hospital = actingAs(t.provider, 'dr.wong@cgh.example');
  });
  afterAll(async () => {
    await t.close();
  });

  it('takes the version its own uploads made, so that attach() then submit() works', async () => {
    const draft = await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT });
    const referral = clinic.referral(draft);
    await referral.read();
    expect(referral.etag).toBe(`W/"${draft.version}"`);
    const first = await referral.attach({ content: new Blob([LETTER]), fileName: 'letter.pdf' });
    const second = await referral.attach({ content: new Blob([TEXT]), fileName: 'notes.txt' });
    expect([first.referralVersion, second.referralVersion]).toEqual([draft.version + 1, draft.version + 2]);
    expect(referral.etag).toBe(`W/"${draft.version + 2}"`);
    expect((await referral.submit()).coreStatus).toBe('pending');
  });

  it('keeps the ETag it had when another change came between, so that the next guarded change is refused', async () => {
    const draft = await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT });
    const referral = clinic.referral(draft);
    await referral.read();
    const held = referral.etag;
    // Another client changes the referral in between.
    await clinic.referral(draft).attach({ content: new Blob([TEXT]), fileName: 'theirs.txt' });
    await referral.attach({ content: new Blob([LETTER]), fileName: 'mine.pdf' });
    expect(referral.etag).toBe(held);
    const refused = await problemOf(referral.submit());
    expect(refused).toMatchObject({ status: 412 });
  });

  it('attaches, lists, downloads and removes files, and both sides read them', async () => {
    const draft = await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT });
    const referral = clinic.referral(draft);
    const letter = await referral.attach({
      content: new Blob([LETTER]),
      fileName: 'Referral letter (2026).pdf',
      mediaType: 'application/pdf',
    });
    expect(letter).toMatchObject({
      fileName: 'Referral letter (2026).pdf',
      mediaType: 'application/pdf',
      sizeBytes: LETTER.length,
      sha256: sha256(LETTER),
      scanState: 'not-scanned',
      available: true,
    });
    // A retry after a lost answer, with the same key, is the same upload.
    const key = 'upload-notes-1';
    const notes = await referral.attach(
      { content: new Blob([TEXT]), fileName: '心電図.txt' },
      { idempotencyKey: key },
    );
    const retried = await referral.attach(
      { content: new Blob([TEXT]), fileName: '心電図.txt' },
      { idempotencyKey: key },
    );
    expect(retried).toEqual(notes);
    expect((await referral.attachments()).map((a) => a.fileName)).toEqual([
      'Referral letter (2026).pdf',
      '心電図.txt',
    ]);
    // What is stored of it: the upload's answer alone says the referral's version since.
    const stored = Object.fromEntries(Object.entries(notes).filter(([field]) => field !== 'referralVersion'));
    expect(await referral.attachment(notes.id)).toEqual(stored);

    const downloaded = await referral.download(letter.id);
    expect(Buffer.from(downloaded.bytes).equals(LETTER)).toBe(true);
    expect(downloaded).toMatchObject({ mediaType: 'application/pdf', sha256: letter.sha256 });

    const refused = await problemOf(referral.attach({ content: new Blob([GIF]), fileName: 'image.gif' }));
    expect(refused.status).toBe(415);
    expect(refused.problem.code).toBe('attachment_refused');

    await referral.read();
    expect(await referral.removeAttachment(notes.id)).toEqual(stored);
    expect((await referral.attachments()).map((a) => a.id)).toEqual([letter.id]);

    await referral.read();
    await referral.submit();
    const atHospital = hospital.referral(draft.id);
    expect((await atHospital.attachments()).map((a) => a.id)).toEqual([letter.id]);
    expect(Buffer.from((await atHospital.download(letter.id)).bytes).equals(LETTER)).toBe(true);
    const tooEarly = await problemOf(
      atHospital.attach({ content: new Blob([LETTER]), fileName: 'reply.pdf' }),
    );
    expect(tooEarly.problem.code).toBe('invalid_transition');

    await atHospital.read();
    await atHospital.accept();
    const reply = await atHospital.attach({ content: new Blob([LETTER]), fileName: 'consultation.pdf' });
    expect(reply).toMatchObject({ addedBy: 'provider' });
    expect(Buffer.from((await referral.download(reply.id)).bytes).equals(LETTER)).toBe(true);
  });
});
