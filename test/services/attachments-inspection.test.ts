// Attachments are judged by their bytes: each accepted type detected from real content, a type the
// client claims that the bytes contradict, content refhub does not accept, and PDFs that would act
// rather than show (JavaScript, an embedded file, a launch action), however their names are spelled
// and wherever their objects are kept. File names and their download header.
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ATTACHMENT_TYPE_NAMES, type AttachmentType } from '../../src/domain/attachments.ts';
import {
  contentDisposition,
  fileNameRefusal,
  inspectAttachment,
  isPlainText,
  pdfActiveContent,
} from '../../src/services/attachments-inspection.ts';
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
  stream,
} from '../support/fixtures/attachment-files.ts';

const ALL = new Set<AttachmentType>(ATTACHMENT_TYPE_NAMES);

describe('inspectAttachment', () => {
  it.each([
    ['letter.pdf', pdf(CATALOG, PAGES), 'pdf', 'application/pdf'],
    ['ecg.jpg', JPEG, 'jpeg', 'image/jpeg'],
    ['ecg.JPEG', JPEG, 'jpeg', 'image/jpeg'],
    ['scan.png', PNG, 'png', 'image/png'],
    ['scan.tif', TIFF, 'tiff', 'image/tiff'],
    ['notes.txt', TEXT, 'text', 'text/plain'],
    ['letter.docx', DOCX, 'docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
    ['no extension', PNG, 'png', 'image/png'],
  ] as const)('accepts %s as %s, from its bytes', async (fileName, bytes, type, mediaType) => {
    expect(await inspectAttachment(bytes, { fileName }, ALL)).toEqual({ ok: true, type, mediaType });
  });

  it('takes the type from the bytes, whatever media type the client declares as unknown', async () => {
    expect(
      await inspectAttachment(PNG, { fileName: 'scan.png', mediaType: 'application/octet-stream' }, ALL),
    ).toMatchObject({ ok: true, type: 'png' });
    expect(
      await inspectAttachment(TEXT, { fileName: 'a.txt', mediaType: 'text/plain; charset=utf-8' }, ALL),
    ).toMatchObject({ ok: true, type: 'text' });
  });

  it('refuses an empty file with 400', async () => {
    expect(await inspectAttachment(Buffer.alloc(0), { fileName: 'a.pdf' }, ALL)).toEqual({
      ok: false,
      refusal: { reason: 'empty-file', status: 400, detail: 'The file is empty.' },
    });
  });

  it('refuses content of a type it does not accept with 415, naming what it is and what is accepted', async () => {
    const gif = await inspectAttachment(GIF, { fileName: 'a.gif' }, ALL);
    expect(gif).toMatchObject({ ok: false, refusal: { reason: 'type-not-accepted', status: 415 } });
    expect(!gif.ok && gif.refusal.detail).toBe(
      "The file's content is image/gif; the accepted types are docx, jpeg, pdf, png, text, tiff.",
    );
    const binary = await inspectAttachment(Buffer.from([0, 1, 2, 3, 0xfe]), { fileName: 'a.bin' }, ALL);
    expect(binary).toMatchObject({ ok: false, refusal: { reason: 'type-not-accepted', status: 415 } });
    // A type that exists but the setting leaves out.
    const onlyPdf = await inspectAttachment(PNG, { fileName: 'a.png' }, new Set(['pdf']));
    expect(!onlyPdf.ok && onlyPdf.refusal.detail).toBe(
      "The file's content is png; the accepted types are pdf.",
    );
  });

  it('refuses bytes that contradict the name or the declared type with 415', async () => {
    const named = await inspectAttachment(PNG, { fileName: 'ecg.pdf' }, ALL);
    expect(named).toMatchObject({ ok: false, refusal: { reason: 'type-mismatch', status: 415 } });
    expect(!named.ok && named.refusal.detail).toBe(
      "The file's name ends in an extension that does not match its content, png: rename it or send the right file.",
    );
    const declared = await inspectAttachment(PNG, { fileName: 'ecg', mediaType: 'image/jpeg' }, ALL);
    expect(declared).toMatchObject({ ok: false, refusal: { reason: 'type-mismatch', status: 415 } });
    // Neither the name's extension nor the declared type is repeated: either may hold patient data.
    const canary = await inspectAttachment(
      PNG,
      { fileName: 'ecg.S1234567D', mediaType: 'image/S1234567D' },
      ALL,
    );
    expect(!canary.ok && canary.refusal.detail).not.toMatch(/S1234567D/i);
    const declaredCanary = await inspectAttachment(
      PNG,
      { fileName: 'ecg', mediaType: 'image/S1234567D' },
      ALL,
    );
    expect(!declaredCanary.ok && declaredCanary.refusal.detail).toBe(
      'The file was sent with a media type that does not match its content, png (image/png).',
    );
    // An executable renamed to .txt is not text.
    const renamed = await inspectAttachment(
      Buffer.from('MZ\x90\x00\x03\x00', 'latin1'),
      { fileName: 'a.txt' },
      ALL,
    );
    expect(renamed).toMatchObject({ ok: false, refusal: { reason: 'type-not-accepted' } });
  });

  it('refuses a PDF with JavaScript or an embedded file with 400, saying which', async () => {
    const withJs = pdf('<< /Type /Catalog /OpenAction << /S /JavaScript /JS (app.alert(1)) >> >>', PAGES);
    expect(await inspectAttachment(withJs, { fileName: 'a.pdf' }, ALL)).toEqual({
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
    const refused = await inspectAttachment(embedded, { fileName: 'a.pdf' }, ALL);
    expect(!refused.ok && refused.refusal.detail).toBe(
      'The PDF contains an embedded file, which is not accepted.',
    );
  });
});

describe('pdfActiveContent', () => {
  it('finds nothing in a plain document, nor in the bytes of its images and pages', () => {
    // Image data may hold any bytes, `/JS` among them: it is not read as names.
    const image = Buffer.concat([
      Buffer.from([0xff, 0xd8]),
      Buffer.from(' /JS /Launch '),
      Buffer.alloc(64, 7),
    ]);
    expect(pdfActiveContent(pdf(CATALOG, PAGES, stream('/Type /XObject /Subtype /Image', image)))).toBe(
      undefined,
    );
    expect(pdfActiveContent(pdf(CATALOG, PAGES, stream('', Buffer.from('BT /F1 12 Tf (JS) Tj ET'))))).toBe(
      undefined,
    );
  });

  it('reads names with #xx escapes as the names they spell', () => {
    expect(pdfActiveContent(pdf('<< /OpenAction << /S /J#61vaScript /J#53 (x) >> >>'))).toBe('JavaScript');
    expect(pdfActiveContent(pdf('<< /A << /S /L#61unch /F (cmd.exe) >> >>'))).toBe('a launch action');
  });

  it('looks inside compressed object streams, and refuses what it cannot inflate', () => {
    const hidden = zlib.deflateSync(Buffer.from('5 0 << /S /JavaScript /JS (app.alert(1)) >>'));
    expect(
      pdfActiveContent(pdf(CATALOG, stream('/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode', hidden))),
    ).toBe('JavaScript');
    // Its dictionary's names escaped, and a nested dictionary before the data.
    expect(
      pdfActiveContent(
        pdf(
          CATALOG,
          stream('/T#79pe /ObjStm /N 1 /Filter /FlateDecode /DecodeParms << /Columns 4 >>', hidden),
        ),
      ),
    ).toBe('JavaScript');
    const clean = zlib.deflateSync(Buffer.from('5 0 << /Type /Annot /Subtype /Text >>'));
    expect(pdfActiveContent(pdf(CATALOG, stream('/Type /ObjStm /N 1 /Filter /FlateDecode', clean)))).toBe(
      undefined,
    );
    const garbage = Buffer.from('not deflate data at all');
    expect(pdfActiveContent(pdf(CATALOG, stream('/Type /ObjStm /N 1 /Filter /FlateDecode', garbage)))).toBe(
      'unreadable',
    );
    // A filter it does not inflate hides what is inside.
    expect(pdfActiveContent(pdf(CATALOG, stream('/Type /ObjStm /N 1 /Filter /LZWDecode', garbage)))).toBe(
      'unreadable',
    );
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
