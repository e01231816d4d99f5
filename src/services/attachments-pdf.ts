// Whether a PDF may be kept, judged by qpdf (a maintained PDF library, run as a program of its own,
// docs/attachments.md "PDFs"). qpdf reads the file as a reader does: every object in the
// cross-reference table, those kept inside compressed object streams too, whatever chain of filters
// and predictors they are under, and lists them all as JSON (`--json=2`). refhub reads only the PDF
// names in that list, with a streaming JSON tokenizer (nothing here reads PDF syntax), and refuses a
// file that names anything that makes a document act rather than show, wherever it is. A file that
// qpdf cannot read whole, or reads only by repairing it (with a warning), is refused too: what one
// reader or another makes of a damaged file cannot be known, so it cannot be checked.
//
// qpdf runs with bounds, so that no file can take the process's memory, disk or time: its address
// space, its processor time and the files it may write (none) are limited by the shell that starts it
// (`ulimit`), its JSON is read as it comes (never held whole) and only up to a limit, and a check
// that has not ended by its deadline is killed. At most a few checks run at once; one that cannot
// start soon is answered "busy". The file reaches qpdf through a temporary file that loses its name
// before qpdf starts, so nothing of it is left on disk, even if refhub stops mid-check.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { open, rm, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { jsonParser, type Token } from 'stream-json/core/parser.js';
import { ConfigError, type Config } from '../config.ts';
import { getManyValues, isMany, none } from 'stream-chain/defs.js';

/** What makes a PDF act rather than show, as a refusal names it. */
export type PdfActiveContent =
  | 'JavaScript'
  | 'a launch action'
  | 'an embedded file'
  | 'an XFA form'
  | 'rich media'
  | 'a form submission action'
  | 'a data import action';

/**
 * The PDF names that make a document act, as keys or as values, and what a refusal calls each: a
 * script (`/JS`, `/S /JavaScript`, the document's JavaScript names, a 3D artwork's `/OnInstantiate`),
 * a launch action, an embedded file (a file specification's `/EF`, the `/EmbeddedFiles` names, an
 * `/EmbeddedFile` stream), an XFA form (whose scripts are in its XML), rich media (Flash, video, 3D),
 * and the actions that send form data away or read data in. Additional actions (`/AA`) are kept
 * when every action in them is: what makes an action harmful is its kind, refused wherever it is.
 */
export const ACTIVE_NAMES: ReadonlyMap<string, PdfActiveContent> = new Map([
  ['JS', 'JavaScript'],
  ['JavaScript', 'JavaScript'],
  ['OnInstantiate', 'JavaScript'],
  ['Launch', 'a launch action'],
  ['EF', 'an embedded file'],
  ['EmbeddedFile', 'an embedded file'],
  ['EmbeddedFiles', 'an embedded file'],
  ['XFA', 'an XFA form'],
  ['RichMedia', 'rich media'],
  ['RichMediaContent', 'rich media'],
  ['RichMediaSettings', 'rich media'],
  ['RichMediaExecute', 'rich media'],
  ['SubmitForm', 'a form submission action'],
  ['ImportData', 'a data import action'],
]);

/** The longest JSON string that can be one of those names: longer strings are not kept while read. */
const LONGEST_NAME = Math.max(...[...ACTIVE_NAMES.keys()].map((name) => name.length)) + 1;

/** Why a PDF cannot be checked: qpdf could not read it whole, or reading it passed a bound. */
export type PdfUnreadable = 'damaged' | 'limits';

export type PdfVerdict =
  | { readonly kind: 'clean' }
  | { readonly kind: 'active'; readonly found: PdfActiveContent }
  | { readonly kind: 'unreadable'; readonly why: PdfUnreadable }
  /** qpdf is not at QPDF_PATH (or cannot run): no PDF can be checked. */
  | { readonly kind: 'no-checker' }
  /**
   * The check could not be made now: no room among the checks running, the deadline passed (the
   * machine is busy, since a file's own work is bounded by the processor limit), or qpdf could not
   * be started. Not the file's fault: it may be sent again.
   */
  | { readonly kind: 'unavailable'; readonly why: 'busy' | 'deadline' | 'failed' };

export interface PdfCheckLimits {
  /** qpdf's address space: what it may hold of the file's decompressed objects. */
  readonly memoryMib: number;
  /** qpdf's processor time for one file. */
  readonly cpuSeconds: number;
  /** The most JSON read from qpdf for one file. */
  readonly outputMib: number;
  /** How long one check may take from its start, whatever the reason. */
  readonly deadlineMs: number;
  /** Checks running at once in this process. */
  readonly concurrent: number;
  /** How long a check waits for one of those to end before it is answered "busy". */
  readonly waitMs: number;
}

/** Bounds that fit a 10 MiB file and a process of a few hundred MiB: docs/attachments.md says why. */
export const PDF_CHECK_LIMITS: PdfCheckLimits = {
  memoryMib: 256,
  cpuSeconds: 10,
  outputMib: 64,
  deadlineMs: 30_000,
  concurrent: 2,
  waitMs: 10_000,
};

export interface PdfCheckerSettings {
  /** qpdf: a name looked up in PATH, or a path (QPDF_PATH). */
  readonly qpdfPath: string;
  readonly limits?: Partial<PdfCheckLimits>;
  /** Where the file is written for the moment qpdf opens it (the system's temporary directory). */
  readonly tmpDir?: string;
  /** Told why a check could not be made (never anything of the file). */
  readonly onUnavailable?: (why: 'busy' | 'deadline' | 'failed', code?: string) => void;
}

export type PdfCheck = (bytes: Uint8Array) => Promise<PdfVerdict>;

/** A queue of `count` places: a taker waits for one in order, for at most `waitMs`. */
function places(count: number) {
  let free = count;
  const waiting: ((release: () => void) => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next === undefined) free += 1;
    else next(once());
  };
  const once = () => {
    let given = false;
    return () => {
      if (given) return;
      given = true;
      release();
    };
  };
  return (waitMs: number): Promise<(() => void) | undefined> => {
    if (free > 0) {
      free -= 1;
      return Promise.resolve(once());
    }
    return new Promise((resolve) => {
      const take = (granted: () => void) => {
        clearTimeout(timer);
        resolve(granted);
      };
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(take), 1);
        resolve(undefined);
      }, waitMs);
      waiting.push(take);
    });
  };
}

/** Checks PDFs with qpdf, a few at a time. The composition root builds one per process. */
export function createPdfChecker(settings: PdfCheckerSettings): PdfCheck {
  const limits = { ...PDF_CHECK_LIMITS, ...settings.limits };
  const take = places(limits.concurrent);
  return async (bytes) => {
    const release = await take(limits.waitMs);
    if (release === undefined) {
      settings.onUnavailable?.('busy');
      return { kind: 'unavailable', why: 'busy' };
    }
    try {
      const verdict = await runQpdf(settings.qpdfPath, bytes, limits, settings.tmpDir ?? os.tmpdir());
      if (verdict.kind === 'unavailable') settings.onUnavailable?.(verdict.why, verdict.code);
      return verdict.kind === 'unavailable' ? { kind: 'unavailable', why: verdict.why } : verdict;
    } finally {
      release();
    }
  };
}

/**
 * The shell that starts qpdf sets its limits first: address space (KiB), processor seconds, and no
 * file of any size (RLIMIT_FSIZE 0: qpdf writes only to its pipes). `$@` is qpdf and its arguments.
 */
const limitsScript = (limits: PdfCheckLimits) =>
  `ulimit -v ${limits.memoryMib * 1024} && ulimit -t ${limits.cpuSeconds} && ulimit -f 0 && exec "$@"`;

/**
 * qpdf's arguments: every object as JSON v2 (names with their `#xx` escapes resolved), without
 * stream data, which is neither decoded nor read unless it holds objects (object streams and
 * cross-reference streams are decoded whole, as a reader must).
 */
const QPDF_ARGUMENTS = ['--json=2', '--json-key=qpdf', '--json-stream-data=none'];

/** The shell's answers when `exec` finds no such program, or one it may not run. */
const NOT_FOUND = 127;
const NOT_RUNNABLE = 126;

type RunVerdict =
  | Exclude<PdfVerdict, { kind: 'unavailable' }>
  | { readonly kind: 'unavailable'; readonly why: 'deadline' | 'failed'; readonly code?: string };

async function runQpdf(
  qpdfPath: string,
  bytes: Uint8Array,
  limits: PdfCheckLimits,
  tmpDir: string,
): Promise<RunVerdict> {
  const file = path.join(tmpDir, `refhub-pdf-${randomUUID()}`);
  let handle: FileHandle;
  try {
    // Created here (never an existing file or link), readable by this user alone; it loses its name
    // as soon as it is written, and qpdf reads it through the descriptor it inherits.
    handle = await open(file, 'wx+', 0o600);
  } catch (error) {
    return { kind: 'unavailable', why: 'failed', code: errorCode(error) };
  }
  try {
    try {
      await handle.writeFile(bytes);
    } finally {
      await rm(file, { force: true });
    }
    return await qpdfVerdict(qpdfPath, handle.fd, limits);
  } catch (error) {
    return { kind: 'unavailable', why: 'failed', code: errorCode(error) };
  } finally {
    await handle.close();
  }
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'error';
}

function qpdfVerdict(qpdfPath: string, fd: number, limits: PdfCheckLimits): Promise<RunVerdict> {
  return new Promise((resolve) => {
    const child = spawn(
      '/bin/sh',
      ['-c', limitsScript(limits), 'qpdf', qpdfPath, ...QPDF_ARGUMENTS, '/dev/fd/3'],
      {
        stdio: ['ignore', 'pipe', 'pipe', fd],
        // qpdf needs nothing of refhub's environment, which holds its secrets.
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
      },
    );
    // Both are pipes, as `stdio` says; the type of a spawn with a descriptor in `stdio` cannot tell.
    const { stdout, stderr: messages } = child;
    if (stdout === null || messages === null) throw new Error('qpdf was started without its pipes');
    const names = nameScanner();
    let ended: RunVerdict | undefined;
    let outputBytes = 0;
    let stderr = '';
    const end = (verdict: RunVerdict) => {
      ended ??= verdict;
      child.kill('SIGKILL');
    };
    const deadline = setTimeout(() => {
      end({ kind: 'unavailable', why: 'deadline' });
    }, limits.deadlineMs);
    stdout.on('data', (chunk: Buffer) => {
      if (ended !== undefined) return;
      outputBytes += chunk.length;
      if (outputBytes > limits.outputMib * 1024 * 1024) {
        end({ kind: 'unreadable', why: 'limits' });
        return;
      }
      const found = names.read(chunk);
      if (found !== undefined) end({ kind: 'active', found });
    });
    messages.setEncoding('latin1');
    messages.on('data', (text: string) => {
      // Only read for what stopped qpdf; never logged, since it may quote the file.
      if (stderr.length < 16 * 1024) stderr += text;
    });
    child.on('error', (error) => {
      // Not started (or not stopped): 'close' may not follow.
      clearTimeout(deadline);
      end({ kind: 'unavailable', why: 'failed', code: errorCode(error) });
      resolve(ended ?? { kind: 'unavailable', why: 'failed' });
    });
    child.on('close', (status, signal) => {
      clearTimeout(deadline);
      if (ended !== undefined) {
        resolve(ended);
        return;
      }
      resolve(outcome(status, signal, stderr, names));
    });
  });
}

function outcome(
  status: number | null,
  signal: NodeJS.Signals | null,
  stderr: string,
  names: ReturnType<typeof nameScanner>,
): RunVerdict {
  if (status === NOT_FOUND || status === NOT_RUNNABLE) return { kind: 'no-checker' };
  // The processor limit (SIGXCPU, then SIGKILL at the hard limit), or memory that ran out.
  if (signal === 'SIGXCPU' || signal === 'SIGKILL' || /\bbad_alloc\b/.test(stderr)) {
    return { kind: 'unreadable', why: 'limits' };
  }
  if (signal !== null) return { kind: 'unreadable', why: 'damaged' };
  const complete = names.finish();
  if (status === 0 && complete) return { kind: 'clean' };
  // 3: read with warnings (a repaired cross-reference table, a stream that did not decode); 2: not
  // read (a password, a file that is not a PDF after all).
  return { kind: 'unreadable', why: 'damaged' };
}

/**
 * Reads qpdf's JSON as it comes and finds the first refused name. In qpdf's JSON v2 a PDF name, key
 * or value, is a JSON string that starts with `/`, in canonical form (`/J#61vaScript` is
 * `/JavaScript`); PDF strings start with `u:` or `b:`, references are `N G R`. Names that qpdf
 * cannot write as UTF-8 are none of the refused ones, which are ASCII. Only the first few characters
 * of each string are kept, so a long string costs no memory.
 */
function nameScanner() {
  const tokenizer = jsonParser({
    packKeys: false,
    packStrings: false,
    packNumbers: true,
    streamNumbers: false,
  });
  const decoder = new TextDecoder('utf-8');
  let text = '';
  let broken = false;
  const scan = (tokens: Token[]): PdfActiveContent | undefined => {
    for (const token of tokens) {
      if (token.name === 'startKey' || token.name === 'startString') {
        text = '';
      } else if (token.name === 'stringChunk') {
        if (text.length <= LONGEST_NAME) text += token.value.slice(0, LONGEST_NAME + 1);
      } else if (token.name === 'endKey' || token.name === 'endString') {
        const found = text.startsWith('/') ? ACTIVE_NAMES.get(text.slice(1)) : undefined;
        if (found !== undefined) return found;
      }
    }
    return undefined;
  };
  // A stage of stream-chain is flushed by calling it with `none`, which its type leaves out.
  const tokenize = tokenizer as (input: string | typeof none) => ReturnType<typeof tokenizer>;
  const feed = (input: string | typeof none): PdfActiveContent | undefined => {
    if (broken) return undefined;
    try {
      const out = tokenize(input);
      if (out === none) return undefined;
      return scan(isMany(out) ? getManyValues<Token>(out) : [out]);
    } catch {
      broken = true;
      return undefined;
    }
  };
  return {
    read: (chunk: Buffer) => feed(decoder.decode(chunk, { stream: true })),
    /** Whether the JSON was whole and well-formed. */
    finish(): boolean {
      feed(decoder.decode());
      feed(none);
      return !broken;
    },
  };
}

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
