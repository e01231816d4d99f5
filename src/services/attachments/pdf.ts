// Whether a PDF may be kept, judged by qpdf (a maintained PDF library, run as a program of its own,
// docs/attachments.md "PDFs"). qpdf reads the file as a reader does: every object in the
// cross-reference table, those kept inside compressed object streams too, whatever chain of filters
// and predictors they are under, and lists them all as JSON (`--json=2`). refhub reads only the PDF
// names in that list, with a streaming JSON tokenizer (nothing here reads PDF syntax), and refuses a
// file that names anything that makes a document act rather than show, wherever it is. Then qpdf
// decodes every stream, whatever its chain of filters and predictors (all but the image codecs, whose
// bytes are pictures), into nothing. A file that qpdf cannot read whole, whose streams do not all
// decode, or that it reads only by repairing it (with a warning), is refused too: what one reader or
// another makes of a damaged file cannot be known, so it cannot be checked.
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
import { nameScanner, type PdfActiveContent } from './pdf-names.ts';

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
  /** qpdf's address space while it lists the objects: what it may hold of them, decompressed. */
  readonly memoryMib: number;
  /**
   * qpdf's address space while it decodes the streams: it holds one stream at a time, decoded, twice
   * over (a 100 MiB image takes about 210 MiB), so a scanned page's picture fits.
   */
  readonly decodingMemoryMib: number;
  /** qpdf's processor time for one file. */
  readonly cpuSeconds: number;
  /** The most JSON read from qpdf for one file. */
  readonly outputMib: number;
  /** The most its streams may decode to, in all. */
  readonly decodedMib: number;
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
  decodingMemoryMib: 1024,
  cpuSeconds: 10,
  outputMib: 64,
  decodedMib: 1024,
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
        const at = waiting.indexOf(take);
        if (at !== -1) waiting.splice(at, 1);
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
const limitsScript = (memoryMib: number, cpuSeconds: number) =>
  `ulimit -v ${memoryMib * 1024} && ulimit -t ${cpuSeconds} && ulimit -f 0 && exec "$@"`;

/**
 * qpdf's arguments for each of its two readings of a file. `names`: every object as JSON v2 (names
 * with their `#xx` escapes resolved), without stream data, which is neither decoded nor read unless it
 * holds objects (object streams and cross-reference streams are decoded whole, as a reader must).
 * `streams`: the file written again with every stream decoded (every filter but the lossy image
 * codecs, predictors included), those of objects nothing refers to too, to a pipe refhub reads only
 * to count it; a stream that does not decode is a warning, as anything repaired is.
 */
const QPDF_ARGUMENTS = {
  names: ['--json=2', '--json-key=qpdf', '--json-stream-data=none'],
  streams: [
    '--decode-level=specialized',
    '--stream-data=uncompress',
    '--object-streams=disable',
    '--preserve-unreferenced',
  ],
} as const;

type Reading = keyof typeof QPDF_ARGUMENTS;

/** The shell's answers when `exec` finds no such program, or one it may not run. */
const NOT_FOUND = 127;
const NOT_RUNNABLE = 126;

export type RunVerdict =
  | Exclude<PdfVerdict, { kind: 'unavailable' }>
  | { readonly kind: 'unavailable'; readonly why: 'deadline' | 'failed'; readonly code?: string };

/** Checks `bytes` with qpdf at `qpdfPath` under `limits`, through a nameless file in `tmpDir`. */
export async function runQpdf(
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
    // One deadline for both readings; the second only for a file the first found nothing in.
    const deadline = Date.now() + limits.deadlineMs;
    const named = await qpdfVerdict(qpdfPath, handle.fd, limits, 'names', deadline);
    if (named.kind !== 'clean') return named;
    return await qpdfVerdict(qpdfPath, handle.fd, limits, 'streams', deadline);
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

/**
 * One reading of the file open at `fd` (see QPDF_ARGUMENTS) by qpdf at `qpdfPath`, ended by
 * `deadline` (a time). qpdf opens the file again through /dev/fd, from its start, each time.
 */
function qpdfVerdict(
  qpdfPath: string,
  fd: number,
  limits: PdfCheckLimits,
  reading: Reading,
  deadline: number,
): Promise<RunVerdict> {
  const outputLimit = (reading === 'names' ? limits.outputMib : limits.decodedMib) * 1024 * 1024;
  const memoryMib = reading === 'names' ? limits.memoryMib : limits.decodingMemoryMib;
  return new Promise((resolve) => {
    const output = reading === 'names' ? [] : ['-'];
    const child = spawn(
      '/bin/sh',
      [
        '-c',
        limitsScript(memoryMib, limits.cpuSeconds),
        'qpdf',
        qpdfPath,
        ...QPDF_ARGUMENTS[reading],
        '/dev/fd/3',
        ...output,
      ],
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
    const timer = setTimeout(
      () => {
        end({ kind: 'unavailable', why: 'deadline' });
      },
      Math.max(0, deadline - Date.now()),
    );
    stdout.on('data', (chunk: Buffer) => {
      if (ended !== undefined) return;
      outputBytes += chunk.length;
      if (outputBytes > outputLimit) {
        end({ kind: 'unreadable', why: 'limits' });
        return;
      }
      // The decoded file is only counted, never kept.
      const found = reading === 'names' ? names.read(chunk) : undefined;
      if (found !== undefined) end({ kind: 'active', found });
    });
    messages.setEncoding('latin1');
    messages.on('data', (text: string) => {
      // Only read for what stopped qpdf; never logged, since it may quote the file.
      if (stderr.length < 16 * 1024) stderr += text;
    });
    child.on('error', (error) => {
      // Not started (or not stopped): 'close' may not follow.
      clearTimeout(timer);
      end({ kind: 'unavailable', why: 'failed', code: errorCode(error) });
      resolve(ended ?? { kind: 'unavailable', why: 'failed' });
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      if (ended !== undefined) {
        resolve(ended);
        return;
      }
      resolve(outcome(status, signal, stderr, reading === 'names' ? names.finish() : true));
    });
  });
}

/** What qpdf's ending says, `complete` being whether its answer was read to its end. */
function outcome(
  status: number | null,
  signal: NodeJS.Signals | null,
  stderr: string,
  complete: boolean,
): RunVerdict {
  if (status === NOT_FOUND || status === NOT_RUNNABLE) return { kind: 'no-checker' };
  // The processor limit (SIGXCPU, then SIGKILL at the hard limit), or memory that ran out.
  if (signal === 'SIGXCPU' || signal === 'SIGKILL' || /\bbad_alloc\b/.test(stderr)) {
    return { kind: 'unreadable', why: 'limits' };
  }
  if (signal !== null) return { kind: 'unreadable', why: 'damaged' };
  if (status === 0 && complete) return { kind: 'clean' };
  // 3: read with warnings (a repaired cross-reference table, a stream that did not decode); 2: not
  // read (a password, a file that is not a PDF after all).
  return { kind: 'unreadable', why: 'damaged' };
}
