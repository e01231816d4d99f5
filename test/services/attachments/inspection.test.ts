// Attachments are judged by their bytes: each accepted type detected from real content, a type the
// client claims that the bytes contradict, content refhub does not accept, and PDFs that would act
// rather than show, however they keep it (qpdf reads them: pdf.test.ts has the rules), or
// cannot be read whole, each refusal in words that name nothing of the file. File names and their
// download header.
import { describe, expect, it } from 'vitest';
import { withQpdf } from '../../support/servers.ts';
import { ATTACHMENT_TYPE_NAMES, type AttachmentType } from '../../../src/domain/attachments.ts';
import {
  contentDisposition,
  fileNameRefusal,
  inspectAttachment,
  isPlainText,
} from '../../../src/services/attachments/inspection.ts';
import { createPdfChecker, type PdfCheck } from '../../../src/services/attachments/pdf.ts';
import {
  CATALOG,
  DOCX,
  GIF,
  JPEG,
  PAGES,
  PNG,
  TEXT,
  TIFF,
  pdf,
} from '../../support/fixtures/attachment-files.ts';
import { HIDDEN_ACTIVE_CONTENT, objectStreamBomb } from '../../support/fixtures/pdf-files.ts';

const ALL = new Set<AttachmentType>(ATTACHMENT_TYPE_NAMES);
/** qpdf as the machine has it (docs/operations.md: it is installed where PDFs are accepted). */
const QPDF = createPdfChecker({ qpdfPath: 'qpdf' });

const inspect = (
  bytes: Uint8Array,
  declared: { fileName: string; mediaType?: string },
  accepted: ReadonlySet<AttachmentType> = ALL,
  checkPdf: PdfCheck = QPDF,
) => inspectAttachment(bytes, declared, accepted, checkPdf);

describe('inspectAttachment', () => {
  it.each([
    ...(withQpdf ? ([['letter.pdf', pdf(CATALOG, PAGES), 'pdf', 'application/pdf']] as const) : []),
    ['ecg.jpg', JPEG, 'jpeg', 'image/jpeg'],
    ['ecg.JPEG', JPEG, 'jpeg', 'image/jpeg'],
    ['scan.png', PNG, 'png', 'image/png'],
    ['scan.tif', TIFF, 'tiff', 'image/tiff'],
    ['notes.txt', TEXT, 'text', 'text/plain'],
    ['letter.docx', DOCX, 'docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
    ['no extension', PNG, 'png', 'image/png'],
  ] as const)('accepts %s as %s, from its bytes', async (fileName, bytes, type, mediaType) => {
    expect(await inspect(bytes, { fileName })).toEqual({ ok: true, type, mediaType });
  });

  it('takes the type from the bytes, whatever media type the client declares as unknown', async () => {
    expect(await inspect(PNG, { fileName: 'scan.png', mediaType: 'application/octet-stream' })).toMatchObject(
      { ok: true, type: 'png' },
    );
    expect(await inspect(TEXT, { fileName: 'a.txt', mediaType: 'text/plain; charset=utf-8' })).toMatchObject({
      ok: true,
      type: 'text',
    });
  });

  it('refuses an empty file with 400', async () => {
    expect(await inspect(Buffer.alloc(0), { fileName: 'a.pdf' })).toEqual({
      ok: false,
      refusal: { reason: 'empty-file', status: 400, detail: 'The file is empty.' },
    });
  });

  it('refuses content of a type it does not accept with 415, naming what it is and what is accepted', async () => {
    const gif = await inspect(GIF, { fileName: 'a.gif' });
    expect(gif).toMatchObject({ ok: false, refusal: { reason: 'type-not-accepted', status: 415 } });
    expect(!gif.ok && gif.refusal.detail).toBe(
      "The file's content is image/gif; the accepted types are docx, jpeg, pdf, png, text, tiff.",
    );
    const binary = await inspect(Buffer.from([0, 1, 2, 3, 0xfe]), { fileName: 'a.bin' });
    expect(binary).toMatchObject({ ok: false, refusal: { reason: 'type-not-accepted', status: 415 } });
    // A type that exists but the setting leaves out.
    const onlyPdf = await inspect(PNG, { fileName: 'a.png' }, new Set(['pdf']));
    expect(!onlyPdf.ok && onlyPdf.refusal.detail).toBe(
      "The file's content is png; the accepted types are pdf.",
    );
  });

  it('refuses bytes that contradict the name or the declared type with 415', async () => {
    const named = await inspect(PNG, { fileName: 'ecg.pdf' });
    expect(named).toMatchObject({ ok: false, refusal: { reason: 'type-mismatch', status: 415 } });
    expect(!named.ok && named.refusal.detail).toBe(
      "The file's name ends in an extension that does not match its content, png: rename it or send the right file.",
    );
    const declared = await inspect(PNG, { fileName: 'ecg', mediaType: 'image/jpeg' });
    expect(declared).toMatchObject({ ok: false, refusal: { reason: 'type-mismatch', status: 415 } });
    // Neither the name's extension nor the declared type is repeated: either may hold patient data.
    const canary = await inspect(PNG, { fileName: 'ecg.S1234567D', mediaType: 'image/S1234567D' });
    expect(!canary.ok && canary.refusal.detail).not.toMatch(/S1234567D/i);
    const declaredCanary = await inspect(PNG, { fileName: 'ecg', mediaType: 'image/S1234567D' });
    expect(!declaredCanary.ok && declaredCanary.refusal.detail).toBe(
      'The file was sent with a media type that does not match its content, png (image/png).',
    );
    // An executable renamed to .txt is not text.
    const renamed = await inspect(Buffer.from('MZ\x90\x00\x03\x00', 'latin1'), { fileName: 'a.txt' });
    expect(renamed).toMatchObject({ ok: false, refusal: { reason: 'type-not-accepted' } });
  });

  it.runIf(withQpdf)('refuses a PDF with JavaScript or an embedded file with 400, saying which', async () => {
    const withJs = pdf('<< /Type /Catalog /OpenAction << /S /JavaScript /JS (app.alert(1)) >> >>', PAGES);
    expect(await inspect(withJs, { fileName: 'a.pdf' })).toEqual({
      ok: false,
      refusal: {
        reason: 'pdf-active-content',
        status: 400,
        detail: 'The PDF contains JavaScript, which is not accepted.',
      },
    });
    const embedded = pdf(
      '<< /Type /Catalog /Names << /EmbeddedFiles 3 0 R >> >>',
      PAGES,
      '<< /Names [(x.exe) 4 0 R] >>',
    );
    const refused = await inspect(embedded, { fileName: 'a.pdf' });
    expect(!refused.ok && refused.refusal.detail).toBe(
      'The PDF contains an embedded file, which is not accepted.',
    );
  });
});

describe.runIf(withQpdf)('PDFs that hide what they run', () => {
  it.each(Object.entries(HIDDEN_ACTIVE_CONTENT))('refuses %s', async (_, bytes) => {
    const inspected = await inspect(bytes, { fileName: 'letter.pdf' });
    expect(inspected).toMatchObject({ ok: false, refusal: { reason: 'pdf-active-content', status: 400 } });
  });

  it('names what it found in words of its own, never a name or string of the file', async () => {
    const canary = pdf(
      '<< /Type /Catalog /Pages 2 0 R /S1234567D (Tan Ah Kow) /OpenAction 3 0 R >>',
      PAGES,
      '<< /S /JavaScript /JS (app.alert\\("S1234567D Tan Ah Kow"\\)) >>',
    );
    const refused = await inspect(canary, { fileName: 'S1234567D.pdf' });
    expect(refused).toEqual({
      ok: false,
      refusal: {
        reason: 'pdf-active-content',
        status: 400,
        detail: 'The PDF contains JavaScript, which is not accepted.',
      },
    });
  });
});

describe('PDFs that cannot be checked', () => {
  it.runIf(withQpdf)('refuses a PDF that cannot be read whole with 400, saying so', async () => {
    // No cross-reference table: a reader repairs it, each in its own way.
    const damaged = Buffer.from(
      `%PDF-1.7\n1 0 obj\n${CATALOG}\nendobj\n2 0 obj\n${PAGES}\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n`,
    );
    expect(await inspect(damaged, { fileName: 'letter.pdf' })).toEqual({
      ok: false,
      refusal: {
        reason: 'pdf-unreadable',
        status: 400,
        detail:
          'The PDF cannot be read whole (it is damaged, or locked with a password), so it cannot be ' +
          'checked for active content.',
      },
    });
  });

  it.runIf(withQpdf)(
    'refuses a PDF whose objects decompress past the bounds of a check, saying which',
    async () => {
      expect(await inspect(await objectStreamBomb(512), { fileName: 'letter.pdf' })).toEqual({
        ok: false,
        refusal: {
          reason: 'pdf-unreadable',
          status: 400,
          detail:
            'Reading the whole PDF takes more than refhub spends on checking a file (memory, or 10 seconds ' +
            'of processing), so it cannot be checked for active content.',
        },
      });
    },
  );

  it('refuses every PDF with 415 where qpdf is missing, and accepts the other types', async () => {
    const missing = createPdfChecker({ qpdfPath: '/nonexistent/bin/qpdf' });
    expect(await inspect(pdf(CATALOG, PAGES), { fileName: 'letter.pdf' }, ALL, missing)).toEqual({
      ok: false,
      refusal: {
        reason: 'pdf-not-checked',
        status: 415,
        detail:
          'PDFs cannot be accepted by this installation: the program that checks them for active ' +
          'content (qpdf) is missing. Send the document as another accepted type.',
      },
    });
    expect(await inspect(PNG, { fileName: 'scan.png' }, ALL, missing)).toMatchObject({ ok: true });
  });

  it('answers 503 when the check cannot be made now, which is not the file’s fault', async () => {
    // Nowhere to put the file for qpdf to read.
    const nowhere = createPdfChecker({ qpdfPath: 'qpdf', tmpDir: '/nonexistent/tmp' });
    await expect(
      inspect(pdf(CATALOG, PAGES), { fileName: 'letter.pdf' }, ALL, nowhere),
    ).rejects.toMatchObject({
      code: 'unavailable',
      status: 503,
      retryAfterSeconds: 5,
    });
  });
});

describe('isPlainText', () => {
  it('is UTF-8 without control characters other than tab, line and page breaks', () => {
    expect(isPlainText(TEXT)).toBe(true);
    expect(isPlainText(Buffer.from('\ufeffRéféré à l’hôpital — 転院\f'))).toBe(true);
    expect(isPlainText(Buffer.from('text\u0000more'))).toBe(false);
    expect(isPlainText(Buffer.from('bell\u0007'))).toBe(false);
    expect(isPlainText(Buffer.from([0x66, 0xff, 0x66]))).toBe(false);
  });

  it('reads a large file a piece at a time, across characters split between pieces', () => {
    // 65,535 ASCII bytes, then 転 (three bytes) straddling the 64 KiB boundary.
    const straddling = Buffer.concat([Buffer.alloc(65_535, 'a'), Buffer.from('転院 notes')]);
    expect(isPlainText(straddling)).toBe(true);
    expect(isPlainText(Buffer.concat([straddling, Buffer.alloc(70_000, 'b'), Buffer.from('\u0007')]))).toBe(
      false,
    );
    // A character cut off at the end of the file is not text.
    expect(isPlainText(Buffer.concat([Buffer.alloc(65_536, 'a'), Buffer.from('転').subarray(0, 2)]))).toBe(
      false,
    );
    // C1 controls are two bytes in UTF-8; one split between pieces is still found.
    expect(isPlainText(Buffer.concat([Buffer.alloc(65_535, 'a'), Buffer.from('\u0085')]))).toBe(false);
  });
});

describe('file names', () => {
  it('keeps ordinary names, in any script', () => {
    for (const name of [
      'ECG 2026-11-25.pdf',
      'référence.docx',
      '心电图.png',
      'a.b.c.txt',
      "O'Brien letter.pdf",
    ]) {
      expect(fileNameRefusal(name), name).toBeUndefined();
    }
  });

  it.each([
    ['', 'empty'],
    ['   ', 'empty'],
    ['x'.repeat(256), 'too-long'],
    ['../etc/passwd', 'path'],
    ['C:\\Users\\x.pdf', 'path'],
    ['..', 'dot-name'],
    ['ecg\u0000.pdf', 'control-characters'],
    ['ecg\n.pdf', 'control-characters'],
    ['invoice\u202efdp.exe', 'control-characters'],
  ] as const)('refuses %j: %s', (name, reason) => {
    expect(fileNameRefusal(name)).toBe(reason);
  });

  it('downloads under the name, with an ASCII fallback that cannot break the header', () => {
    expect(contentDisposition('ECG 1.pdf')).toBe(
      `attachment; filename="ECG 1.pdf"; filename*=UTF-8''ECG%201.pdf`,
    );
    expect(contentDisposition('心电图 "a".png')).toBe(
      `attachment; filename="___ _a_.png"; filename*=UTF-8''%E5%BF%83%E7%94%B5%E5%9B%BE%20%22a%22.png`,
    );
    expect(contentDisposition("O'Brien (1).pdf")).toBe(
      `attachment; filename="O'Brien (1).pdf"; filename*=UTF-8''O%27Brien%20%281%29.pdf`,
    );
  });
});
