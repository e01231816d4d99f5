// The PDF check, with the real qpdf: every object is read, those in compressed object streams under
// any filters and predictor too, and a document that names anything that makes it act is refused
// wherever that is (any object, any depth, a stream's dictionary, the trailer); what only shows
// (pages, fonts, images whose bytes hold anything, links, page-open actions that go to a page) is
// kept. A file qpdf cannot read whole is unreadable; one that passes the bounds of a check (memory,
// processor time, output) is refused for that; the check's own failures (qpdf missing, no room to run,
// a deadline) are told apart from the file's. Where qpdf must hang or burn processor time, a small
// program at QPDF_PATH does that, as a real hung or runaway qpdf would.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withQpdf } from '../../support/servers.ts';
import { createPdfChecker, type PdfCheckerSettings } from '../../../src/services/attachments/pdf.ts';
import {
  CATALOG,
  CATALOG_OPENING_3,
  HIDDEN_ACTIVE_CONTENT,
  JAVASCRIPT_ACTION,
  PAGES,
  deflate,
  objectStreamBomb,
  onePage,
  pdfDocument,
  pdfWithObjectStream,
  streamObject,
} from '../../support/fixtures/pdf-files.ts';

const qpdf = createPdfChecker({ qpdfPath: 'qpdf' });

/** An object stream's dictionary as writers write it, deflated. */
const flateObjectStream = (n: number, first: number) =>
  `/Type /ObjStm /N ${n} /First ${first} /Filter /FlateDecode`;

let work: string;
beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-pdf-test-'));
});
afterAll(() => {
  fs.rmSync(work, { recursive: true, force: true });
});

/** A program at a path of its own, standing where qpdf would: a shell script. */
function program(name: string, script: string): string {
  const file = path.join(work, name);
  fs.writeFileSync(file, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  return file;
}

describe.runIf(withQpdf)('what only shows is kept', () => {
  it.each([
    ['an empty document', pdfDocument(CATALOG, PAGES)],
    ['a page with text in a compressed content stream and a font', onePage('')],
    [
      'an image whose bytes hold /JS and /Launch',
      pdfDocument(
        CATALOG,
        '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
        '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 4 0 R >> >> >>',
        streamObject(
          '/Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8',
          Buffer.concat([Buffer.from(' /JS /Launch /EmbeddedFile '), Buffer.alloc(37, 7)]),
        ),
      ),
    ],
    [
      'text and strings that mention JavaScript',
      onePage(
        '/Annots [6 0 R]',
        '<< /Type /Annot /Subtype /Text /Rect [0 0 10 10] /Contents (/JavaScript /JS /Launch /EF) >>',
      ),
    ],
    [
      'a link to a web page',
      onePage(
        '/Annots [6 0 R]',
        '<< /Type /Annot /Subtype /Link /Rect [72 700 200 720] /A << /S /URI /URI (https://example.org/) >> >>',
      ),
    ],
    [
      'a page-open action that goes to the page (additional actions without script)',
      onePage('/AA << /O << /S /GoTo /D [3 0 R /Fit] >> >>'),
    ],
    [
      'objects in a compressed object stream',
      pdfWithObjectStream({
        plain: [CATALOG, PAGES],
        compressed: ['<< /Type /Annot /Subtype /Text /Contents (note) >>', '[1 2 3]'],
        dictionary: flateObjectStream,
        encode: deflate,
      }),
    ],
  ])('%s', async (_label, bytes) => {
    expect(await qpdf(bytes)).toEqual({ kind: 'clean' });
  });
});

describe.runIf(withQpdf)('what acts is refused, wherever it is', () => {
  it.each(Object.entries(HIDDEN_ACTIVE_CONTENT))('%s', async (_label, bytes) => {
    expect(await qpdf(bytes)).toMatchObject({ kind: 'active' });
  });

  it.each([
    [
      'JavaScript that runs when the document opens',
      pdfDocument(CATALOG_OPENING_3, PAGES, JAVASCRIPT_ACTION),
      'JavaScript',
    ],
    [
      "the document's JavaScript names",
      pdfDocument(
        '<< /Type /Catalog /Pages 2 0 R /Names << /JavaScript 3 0 R >> >>',
        PAGES,
        '<< /Names [(init) 4 0 R] >>',
        JAVASCRIPT_ACTION,
      ),
      'JavaScript',
    ],
    [
      'additional actions with script',
      onePage('/AA << /O << /S /JavaScript /JS (app.alert\\(1\\)) >> >>'),
      'JavaScript',
    ],
    [
      'a script in a stream',
      pdfDocument(
        CATALOG_OPENING_3,
        PAGES,
        '<< /S /JavaScript /JS 4 0 R >>',
        streamObject('', Buffer.from('app.alert(1)')),
      ),
      'JavaScript',
    ],
    [
      "a 3D artwork's script",
      onePage(
        '/Annots [6 0 R]',
        '<< /Type /Annot /Subtype /3D /Rect [0 0 100 100] /3DD 7 0 R >>',
        streamObject('/Type /3D /Subtype /U3D /OnInstantiate 8 0 R', Buffer.alloc(8)),
        streamObject('', Buffer.from('x = 1;')),
      ),
      'JavaScript',
    ],
    [
      'a launch action',
      onePage(
        '/Annots [6 0 R]',
        '<< /Type /Annot /Subtype /Link /Rect [0 0 10 10] /A << /S /Launch /F (cmd.exe) >> >>',
      ),
      'a launch action',
    ],
    [
      'embedded files',
      pdfDocument(
        '<< /Type /Catalog /Pages 2 0 R /Names << /EmbeddedFiles 3 0 R >> >>',
        PAGES,
        '<< /Names [(a.exe) 4 0 R] >>',
        '<< /Type /Filespec /F (a.exe) /EF << /F 5 0 R >> >>',
        streamObject('/Type /EmbeddedFile', Buffer.from('MZ')),
      ),
      'an embedded file',
    ],
    [
      'rich media',
      onePage('/Annots [6 0 R]', '<< /Type /Annot /Subtype /RichMedia /Rect [0 0 100 100] >>'),
      'rich media',
    ],
    [
      'a form that submits its data',
      onePage(
        '/Annots [6 0 R]',
        '<< /Type /Annot /Subtype /Widget /FT /Btn /Rect [0 0 10 10] /A << /S /SubmitForm /F << /FS /URL /F (https://example.org/) >> >> >>',
      ),
      'a form submission action',
    ],
    [
      'a form that imports data',
      onePage(
        '/Annots [6 0 R]',
        '<< /Type /Annot /Subtype /Widget /FT /Btn /Rect [0 0 10 10] /A << /S /ImportData /F (data.fdf) >> >>',
      ),
      'a data import action',
    ],
  ] as const)('%s', async (_label, bytes, found) => {
    expect(await qpdf(bytes)).toEqual({ kind: 'active', found });
  });

  it('reads names as they are spelled with #xx escapes, inside an object stream', async () => {
    const escaped = pdfWithObjectStream({
      plain: [CATALOG_OPENING_3, PAGES],
      compressed: ['<< /S /J#61vaScript /J#53 (x) >>'],
      dictionary: flateObjectStream,
      encode: deflate,
    });
    expect(await qpdf(escaped)).toEqual({ kind: 'active', found: 'JavaScript' });
  });

  it('finds an action at any depth of direct arrays and dictionaries', async () => {
    let nested = '<< /S /Launch /F (cmd.exe) >>';
    for (let depth = 0; depth < 40; depth += 1)
      nested = depth % 2 === 0 ? `[ 1 ${nested} ]` : `<< /K ${nested} >>`;
    expect(await qpdf(pdfDocument(`<< /Type /Catalog /Pages 2 0 R /X ${nested} >>`, PAGES))).toEqual({
      kind: 'active',
      found: 'a launch action',
    });
  });

  it("finds one in a stream's dictionary and in the trailer's document information", async () => {
    const inStream = pdfDocument(
      CATALOG,
      PAGES,
      streamObject('/AA << /O << /S /JavaScript /JS (x) >> >>', Buffer.from('q Q')),
    );
    expect(await qpdf(inStream)).toEqual({ kind: 'active', found: 'JavaScript' });
    const inInfo = Buffer.from(
      pdfDocument(CATALOG, PAGES, '<< /Title (Letter) /X << /S /ImportData >> >>')
        .toString('latin1')
        .replace('/Root 1 0 R', '/Root 1 0 R /Info 3 0 R'),
      'latin1',
    );
    expect(await qpdf(inInfo)).toEqual({ kind: 'active', found: 'a data import action' });
  });
});

describe.runIf(withQpdf)('what cannot be read whole is refused', () => {
  it('a document a reader must repair: no cross-reference table', async () => {
    const repaired = Buffer.from(
      `%PDF-1.7\n1 0 obj\n${CATALOG}\nendobj\n2 0 obj\n${PAGES}\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n`,
    );
    expect(await qpdf(repaired)).toEqual({ kind: 'unreadable', why: 'damaged' });
  });

  const hiding = (filter: string, data: Buffer) =>
    pdfWithObjectStream({
      plain: [CATALOG_OPENING_3, PAGES],
      compressed: [JAVASCRIPT_ACTION],
      dictionary: (n, first) => `/Type /ObjStm /N ${n} /First ${first} /Filter ${filter}`,
      encode: () => data,
    });
  const deflatedAction = deflate(Buffer.from(`3 0\n${JAVASCRIPT_ACTION}\n`));

  it.each([
    ['data that does not inflate', '/FlateDecode', Buffer.from('not deflate data at all')],
    ['a filter only images use', '/DCTDecode', Buffer.from('not a JPEG')],
    ['its data cut off in the middle of the object', '/FlateDecode', deflatedAction.subarray(0, 30)],
  ])('an object stream with %s', async (_label, filter, data) => {
    expect(await qpdf(hiding(filter, data))).toEqual({ kind: 'unreadable', why: 'damaged' });
  });

  it('an object stream whose data is damaged after the object: refused either way', async () => {
    const damagedEnd = Buffer.concat([deflatedAction.subarray(0, -4), Buffer.from('garbage!')]);
    expect(await qpdf(hiding('/FlateDecode', damagedEnd))).not.toEqual({ kind: 'clean' });
  });

  // A stream that does not decode is a stream no reader can read as written: what it holds for one
  // reader or another cannot be known. Decoded, whatever its filters, even where no page uses it.
  const page = (contents: string) =>
    `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${contents} >>`;
  const onePageOf = (content: Buffer, ...more: (string | Buffer)[]) =>
    pdfDocument(CATALOG, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>', page('4 0 R'), content, ...more);
  const text = Buffer.from('BT /F1 12 Tf 72 720 Td (Referral letter) Tj ET', 'latin1');
  it.each([
    [
      'a page’s content that does not inflate',
      onePageOf(streamObject('/Filter /FlateDecode', Buffer.from('no deflate'))),
    ],
    [
      'a stream no page uses that does not inflate',
      onePageOf(
        streamObject('/Filter /FlateDecode', deflate(text)),
        streamObject('/Filter /FlateDecode', Buffer.from('no deflate')),
      ),
    ],
    [
      'a content stream under two filters, the second damaged',
      onePageOf(streamObject('/Filter [/ASCIIHexDecode /FlateDecode]', Buffer.from('78DA0102>'))),
    ],
  ])('%s', async (_label, file) => {
    expect(await qpdf(file)).toEqual({ kind: 'unreadable', why: 'damaged' });
  });

  it('a document locked with a password', async () => {
    const plain = path.join(work, 'plain.pdf');
    const locked = path.join(work, 'locked.pdf');
    fs.writeFileSync(plain, onePage(''));
    execFileSync('qpdf', ['--encrypt', 'user-password', 'owner-password', '256', '--', plain, locked]);
    expect(await qpdf(fs.readFileSync(locked))).toEqual({ kind: 'unreadable', why: 'damaged' });
  });
});

describe.runIf(withQpdf)('the bounds of a check', () => {
  it('stops qpdf at its memory bound: 512 MiB of object stream in a few kilobytes', async () => {
    const bomb = await objectStreamBomb(512);
    expect(bomb.length).toBeLessThan(16 * 1024);
    expect(await qpdf(bomb)).toEqual({ kind: 'unreadable', why: 'limits' });
  });

  it('decodes no more of its streams than the decoding bound, wherever they are', async () => {
    const content = deflate(Buffer.alloc(4 * 1024 * 1024, 0x20));
    const file = pdfDocument(
      CATALOG,
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>',
      streamObject('/Filter /FlateDecode', content),
    );
    expect(await qpdf(file)).toEqual({ kind: 'clean' });
    const bounded = createPdfChecker({ qpdfPath: 'qpdf', limits: { decodedMib: 1 } });
    expect(await bounded(file)).toEqual({ kind: 'unreadable', why: 'limits' });
  });

  it('reads no more of its answer than the output bound', async () => {
    const objects = Array.from(
      { length: 2000 },
      (_, i) => `<< /Type /Annot /Subtype /Text /Contents (note ${i}) >>`,
    );
    const many = pdfDocument(CATALOG, PAGES, ...objects);
    expect(await qpdf(many)).toEqual({ kind: 'clean' });
    const bounded = createPdfChecker({ qpdfPath: 'qpdf', limits: { outputMib: 1 / 64 } });
    expect(await bounded(many)).toEqual({ kind: 'unreadable', why: 'limits' });
  });

  it("stops a qpdf that passes its processor time, as the file's fault", async () => {
    const spinning = program('spinning-qpdf', 'while :; do :; done');
    const check = createPdfChecker({ qpdfPath: spinning, limits: { cpuSeconds: 1, deadlineMs: 60_000 } });
    expect(await check(pdfDocument(CATALOG, PAGES))).toEqual({ kind: 'unreadable', why: 'limits' });
  });

  it('stops a qpdf that never answers at the deadline, as not the file’s fault', async () => {
    const hung = program('hung-qpdf', 'exec sleep 600');
    const stopped: string[] = [];
    const check = createPdfChecker({
      qpdfPath: hung,
      limits: { deadlineMs: 300 },
      onUnavailable: (why) => stopped.push(why),
    });
    expect(await check(pdfDocument(CATALOG, PAGES))).toEqual({ kind: 'unavailable', why: 'deadline' });
    expect(stopped).toEqual(['deadline']);
  });
});

describe('checks at once', () => {
  /** A qpdf that says it has started, then waits until told to end (both through named pipes). */
  function heldQpdf(name: string) {
    const started = path.join(work, `${name}.started`);
    const go = path.join(work, `${name}.go`);
    execFileSync('mkfifo', [started, go]);
    const qpdfPath = program(name, `echo started > '${started}'\nread line < '${go}'\nexit 2`);
    return {
      qpdfPath,
      /** Resolves once the program has started (the shell's write to the pipe is read). */
      started: () =>
        new Promise<void>((resolve, reject) => {
          const reader = fs.createReadStream(started);
          reader.once('data', () => {
            reader.destroy();
            resolve();
          });
          reader.once('error', reject);
        }),
      end: () => {
        fs.writeFileSync(go, 'go\n');
      },
    };
  }

  it('runs a few at a time: one past them waits for a place, and is answered busy after its wait', async () => {
    const held = heldQpdf('held-qpdf');
    const tmpDir = fs.mkdtempSync(path.join(work, 'tmp-'));
    const refused: string[] = [];
    const settings: PdfCheckerSettings = {
      qpdfPath: held.qpdfPath,
      tmpDir,
      limits: { concurrent: 1, waitMs: 200, deadlineMs: 60_000 },
      onUnavailable: (why) => refused.push(why),
    };
    const check = createPdfChecker(settings);
    const first = check(pdfDocument(CATALOG, PAGES));
    await held.started();
    // While qpdf reads it, the file has no name: nothing of it is left on disk whatever happens.
    expect(fs.readdirSync(tmpDir)).toEqual([]);
    expect(await check(pdfDocument(CATALOG, PAGES))).toEqual({ kind: 'unavailable', why: 'busy' });
    expect(refused).toEqual(['busy']);
    held.end();
    expect(await first).toEqual({ kind: 'unreadable', why: 'damaged' });
    expect(fs.readdirSync(tmpDir)).toEqual([]);
  });

  it('gives a waiting check the place of one that ends', async () => {
    const held = heldQpdf('queued-qpdf');
    const check = createPdfChecker({
      qpdfPath: held.qpdfPath,
      limits: { concurrent: 1, waitMs: 60_000, deadlineMs: 60_000 },
    });
    const first = check(pdfDocument(CATALOG, PAGES));
    await held.started();
    const second = check(pdfDocument(CATALOG, PAGES));
    held.end();
    expect(await first).toEqual({ kind: 'unreadable', why: 'damaged' });
    // The second runs once the first is done: it starts, and ends when told to.
    await held.started();
    held.end();
    expect(await second).toEqual({ kind: 'unreadable', why: 'damaged' });
  });
});

describe('when qpdf cannot run', () => {
  it.each([
    ['a path where nothing is', '/nonexistent/bin/qpdf'],
    ['a name that is not on PATH', 'no-such-qpdf-program'],
    ['a directory', os.tmpdir()],
  ])('refuses to judge, at %s', async (_label, qpdfPath) => {
    expect(await createPdfChecker({ qpdfPath })(pdfDocument(CATALOG, PAGES))).toEqual({ kind: 'no-checker' });
  });

  it('is unavailable when the file cannot be written for qpdf to read', async () => {
    const failed: (string | undefined)[] = [];
    const check = createPdfChecker({
      qpdfPath: 'qpdf',
      tmpDir: '/nonexistent/tmp',
      onUnavailable: (why, code) => failed.push(`${why} ${code}`),
    });
    expect(await check(pdfDocument(CATALOG, PAGES))).toEqual({ kind: 'unavailable', why: 'failed' });
    expect(failed).toEqual(['failed ENOENT']);
  });
});
