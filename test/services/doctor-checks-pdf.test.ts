// The doctor's PDF checker check, with the real qpdf and with a path where none is: qpdf checks a
// test document as it checks every upload and says its version, or the check fails naming the path
// and what follows (every PDF refused; production does not start). Where ATTACHMENT_TYPES leaves out
// pdf, qpdf is not needed.
import { describe, expect, it } from 'vitest';
import { withQpdf } from '../support/servers.ts';
import { ATTACHMENT_TYPE_NAMES, type AttachmentType } from '../../src/domain/attachments.ts';
import { pdfCheckerCheck } from '../../src/services/doctor-checks.ts';

const settings = (qpdfPath: string, types: readonly AttachmentType[] = ATTACHMENT_TYPE_NAMES) => ({
  qpdfPath,
  attachmentTypes: new Set(types),
});

describe('the doctor’s pdf checker check', () => {
  it.runIf(withQpdf)(
    'passes when qpdf at QPDF_PATH reads a test document whole, saying which qpdf',
    async () => {
      const check = await pdfCheckerCheck(settings('qpdf'));
      expect(check).toMatchObject({ name: 'pdf checker', status: 'passed' });
      expect(check.detail).toMatch(/^qpdf version \d+\.\d+\.\d+ at qpdf reads PDFs whole$/);
    },
  );

  it('fails naming the path when no qpdf is there, and what follows', async () => {
    expect(await pdfCheckerCheck(settings('/nonexistent/bin/qpdf'))).toEqual({
      name: 'pdf checker',
      status: 'failed',
      detail:
        'no qpdf program at /nonexistent/bin/qpdf: it is not there, or cannot run; every PDF ' +
        'attachment is refused, and production does not start, until qpdf is installed (Debian: ' +
        'apt-get install qpdf)',
    });
  });

  it('passes without qpdf where ATTACHMENT_TYPES leaves out pdf', async () => {
    expect(await pdfCheckerCheck(settings('/nonexistent/bin/qpdf', ['jpeg', 'png']))).toEqual({
      name: 'pdf checker',
      status: 'passed',
      detail: 'not needed: ATTACHMENT_TYPES leaves out pdf',
    });
  });
});
