// Why a file was refused, in words for the person who attached it: what was wrong and what to do,
// never the file's name or content. The PDF refusals say what a PDF must not hold, that one which
// cannot be read whole cannot be checked, and, where this installation cannot check PDFs at all,
// which other types it takes.
import { describe, expect, it } from 'vitest';
import { refusalWords } from '../../../src/api/web/attachments-upload.ts';
import type { FileRules } from '../../../src/api/web/attachments-items.ts';
import { ATTACHMENT_TYPE_NAMES, type AttachmentType } from '../../../src/domain/attachments.ts';
import { AttachmentRefusedError } from '../../../src/errors.ts';

const rules = (types: readonly AttachmentType[]): FileRules => ({
  types: new Set(types),
  maxBytes: 10 * 1024 * 1024,
  perReferral: 20,
});
const refused = (status: 400 | 415, reason: string, detail: string) =>
  new AttachmentRefusedError(status, reason, detail, 'body.file');

describe('refusalWords', () => {
  it('repeats what a PDF holds that is not accepted, and says how to send it without', () => {
    const words = refusalWords(
      refused(400, 'pdf-active-content', 'The PDF contains an XFA form, which is not accepted.'),
      rules(ATTACHMENT_TYPE_NAMES),
    );
    expect(words).toBe(
      'The PDF contains an XFA form, which is not accepted. Content like this can run on the reader’s ' +
        'computer. Print the document to a new PDF, or save it again without it, and attach that.',
    );
  });

  it('says a PDF that cannot be read whole cannot be checked, whatever the reason', () => {
    const words = refusalWords(
      refused(
        400,
        'pdf-unreadable',
        'Reading the whole PDF takes more than refhub spends on checking a file.',
      ),
      rules(ATTACHMENT_TYPE_NAMES),
    );
    expect(words).toBe(
      'The PDF cannot be read whole (it may be damaged, locked with a password or very large), so it ' +
        'cannot be checked for content that runs on the reader’s computer. Print the document to a new ' +
        'PDF and attach that.',
    );
  });

  it('says PDFs cannot be checked here, naming the other types this installation takes', () => {
    const detail = 'PDFs cannot be accepted by this installation: qpdf is missing.';
    expect(refusalWords(refused(415, 'pdf-not-checked', detail), rules(['pdf', 'jpeg', 'png']))).toBe(
      'PDFs cannot be attached here at the moment: refhub has no program to check them for content ' +
        'that runs on the reader’s computer. Attach the document as another type (JPEG image, PNG ' +
        'image), or ask your administrator.',
    );
    expect(refusalWords(refused(415, 'pdf-not-checked', detail), rules(['pdf']))).toBe(
      'PDFs cannot be attached here at the moment: refhub has no program to check them for content ' +
        'that runs on the reader’s computer. Ask your administrator.',
    );
  });
});
