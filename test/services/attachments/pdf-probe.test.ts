// Whether qpdf can check PDFs here, as start-up and the doctor ask it, with the real qpdf and with
// paths where none is (or where a program that is not qpdf is): the version of the one that works;
// the path and what is wrong otherwise; production stopped, naming QPDF_PATH, where PDFs are accepted
// and cannot be checked; and no qpdf needed where ATTACHMENT_TYPES leaves out pdf.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withQpdf } from '../../support/servers.ts';
import { ConfigError } from '../../../src/config.ts';
import { ATTACHMENT_TYPE_NAMES, type AttachmentType } from '../../../src/domain/attachments.ts';
import { probePdfChecker, requirePdfChecker } from '../../../src/services/attachments/pdf-probe.ts';

let work: string;
beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-pdf-probe-test-'));
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

describe('probePdfChecker', () => {
  it.runIf(withQpdf)('says which qpdf checks PDFs here', async () => {
    const probe = await probePdfChecker('qpdf');
    expect(probe).toMatchObject({ ok: true });
    expect(probe.ok && probe.version).toMatch(/^qpdf version \d+\.\d+/);
  });

  it('names the path where no qpdf is, or a program that does not read PDFs as qpdf does', async () => {
    expect(await probePdfChecker('/nonexistent/bin/qpdf')).toEqual({
      ok: false,
      problem: 'no qpdf program at /nonexistent/bin/qpdf: it is not there, or cannot run',
    });
    const silent = program('not-qpdf', 'exit 0');
    expect(await probePdfChecker(silent)).toEqual({
      ok: false,
      problem: `${silent} did not read a whole test document as qpdf 11 or later does (JSON version 2)`,
    });
  });
});

describe('requirePdfChecker', () => {
  const config = (
    env: 'production' | 'development',
    qpdfPath: string,
    types: readonly AttachmentType[] = ATTACHMENT_TYPE_NAMES,
  ) => ({ env, qpdfPath, attachmentTypes: new Set(types) });

  it.runIf(withQpdf)('lets any process start where qpdf checks PDFs', async () => {
    expect(await requirePdfChecker(config('production', 'qpdf'))).toBeUndefined();
  });

  it('stops production where PDFs are accepted and qpdf is missing, naming QPDF_PATH', async () => {
    const start = requirePdfChecker(config('production', '/nonexistent/bin/qpdf'));
    await expect(start).rejects.toBeInstanceOf(ConfigError);
    await expect(start).rejects.toMatchObject({
      variable: 'QPDF_PATH',
      message:
        'QPDF_PATH: no qpdf program at /nonexistent/bin/qpdf: it is not there, or cannot run. PDF ' +
        'attachments are read whole by qpdf before they are kept: install it (Debian: apt-get install ' +
        'qpdf) or point QPDF_PATH at it, or leave pdf out of ATTACHMENT_TYPES',
    });
  });

  it('says what is wrong elsewhere, for the process to say as it starts', async () => {
    expect(await requirePdfChecker(config('development', '/nonexistent/bin/qpdf'))).toBe(
      'no qpdf program at /nonexistent/bin/qpdf: it is not there, or cannot run',
    );
  });

  it('needs no qpdf where ATTACHMENT_TYPES leaves out pdf, even in production', async () => {
    expect(await requirePdfChecker(config('production', '/nonexistent/bin/qpdf', ['png']))).toBeUndefined();
  });
});
