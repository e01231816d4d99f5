// Whether qpdf can check PDFs where this process runs: what start-up and the doctor ask
// (docs/operations.md, "PDF checks"). qpdf checks a small, whole test document as it checks every
// upload, so a missing program, one that cannot run under the check's limits, or one too old to
// write JSON version 2 is found before the first upload, not at it.
import { spawn } from 'node:child_process';
import os from 'node:os';
import { ConfigError, type Config } from '../../config.ts';
import { PDF_CHECK_LIMITS, runQpdf } from './pdf.ts';

/** The smallest whole PDF: a catalog and no pages, with its cross-reference table. */
const TEST_DOCUMENT = Buffer.from(
  '%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n' +
    '<< /Type /Pages /Kids [] /Count 0 >>\nendobj\nxref\n0 3\n0000000000 65535 f \n' +
    '0000000009 00000 n \n0000000058 00000 n \ntrailer\n<< /Size 3 /Root 1 0 R >>\n' +
    'startxref\n110\n%%EOF\n',
  'latin1',
);

export type PdfCheckerProbe =
  { readonly ok: true; readonly version: string } | { readonly ok: false; readonly problem: string };

/** How long a probe waits for qpdf: a check of a tiny document, so far less than a file's deadline. */
export const PROBE_DEADLINE_MS = 3_000;

/**
 * Whether PDFs can be checked here: qpdf at `qpdfPath` checks a whole, clean test document the way
 * every upload is checked (with its limits, through a temporary file), and says its version. What
 * start-up and the doctor report; the problem names the path and never any file.
 */
export async function probePdfChecker(
  qpdfPath: string,
  tmpDir: string = os.tmpdir(),
): Promise<PdfCheckerProbe> {
  const limits = { ...PDF_CHECK_LIMITS, deadlineMs: PROBE_DEADLINE_MS };
  const verdict = await runQpdf(qpdfPath, TEST_DOCUMENT, limits, tmpDir);
  switch (verdict.kind) {
    case 'clean':
      return { ok: true, version: await qpdfVersion(qpdfPath) };
    case 'no-checker':
      return { ok: false, problem: `no qpdf program at ${qpdfPath}: it is not there, or cannot run` };
    case 'unavailable':
      return {
        ok: false,
        problem:
          verdict.why === 'deadline'
            ? `qpdf at ${qpdfPath} did not answer within ${PROBE_DEADLINE_MS / 1000} s`
            : `qpdf at ${qpdfPath} could not be started (${verdict.code ?? 'error'})`,
      };
    case 'active':
    case 'unreadable':
      return {
        ok: false,
        problem: `${qpdfPath} did not read a whole test document as qpdf 11 or later does (JSON version 2)`,
      };
  }
}

/** The first line of `qpdf --version` ("qpdf version 11.3.0"), or "qpdf" if it says nothing in time. */
function qpdfVersion(qpdfPath: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(qpdfPath, ['--version'], {
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
      timeout: PROBE_DEADLINE_MS,
      killSignal: 'SIGKILL',
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => {
      if (out.length < 1024) out += text;
    });
    child.on('error', () => {
      resolve('qpdf');
    });
    child.on('close', () => {
      resolve(out.split('\n')[0]?.trim() || 'qpdf');
    });
  });
}

/**
 * Start-up of a process that takes uploads: where ATTACHMENT_TYPES lists pdf, qpdf must be able to
 * check PDFs. Production refuses to start without it (a ConfigError naming QPDF_PATH and what is
 * wrong); elsewhere the problem is returned, for the process to say as it starts, and every PDF is
 * refused while it lasts (`pdf-not-checked`), never kept unchecked.
 */
export async function requirePdfChecker(
  config: Pick<Config, 'env' | 'attachmentTypes' | 'qpdfPath'>,
): Promise<string | undefined> {
  if (!config.attachmentTypes.has('pdf')) return undefined;
  const probe = await probePdfChecker(config.qpdfPath);
  if (probe.ok) return undefined;
  if (config.env === 'production') {
    throw new ConfigError(
      'QPDF_PATH',
      `${probe.problem}. PDF attachments are read whole by qpdf before they are kept: install it ` +
        '(Debian: apt-get install qpdf) or point QPDF_PATH at it, or leave pdf out of ATTACHMENT_TYPES',
    );
  }
  return probe.problem;
}
