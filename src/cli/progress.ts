// Progress of a long command (`forwards retry --all-failed`, `webhooks replay --since`, and any other
// that walks many items in batches), for the person at the terminal.
//
// On a terminal it keeps one live line on stderr, `label: done/total`, redrawn in place, and clears
// it when the work ends, so the command's result is printed on a clean screen. Anywhere else (a
// pipe, a file, a CI log) it writes nothing at all: what a script reads stays exactly the result
// lines, and stdout is never touched.
//
//   const requeued = await withProgress('Queueing failed forwards', (report) =>
//     forwarding.retryFailed(undefined, requestId, report),
//   );
//
// `report(done, total)` may be called as often as the work likes (after each batch is natural); it
// redraws only when the line would change. A total that grows while the work runs is fine.

/** Where the line goes: process.stderr, or any stream with `isTTY` set as a terminal's is. */
export interface ProgressStream {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

/** `done` of `total` items are finished. */
export type ReportProgress = (done: number, total: number) => void;

export interface Progress {
  readonly report: ReportProgress;
  /** Clears the line; call once, when the work ends or fails, before printing the result. */
  end(): void;
}

/** Carriage return and "erase the whole line" (ECMA-48 EL 2): the line is redrawn in place. */
const REDRAW = '\r\x1b[2K';

export function startProgress(label: string, stream: ProgressStream = process.stderr): Progress {
  if (stream.isTTY !== true) return { report: () => undefined, end: () => undefined };
  let shown: string | undefined;
  return {
    report(done, total) {
      const line = `${label}: ${done}/${Math.max(done, total)}`;
      if (line === shown) return;
      shown = line;
      stream.write(`${REDRAW}${line}`);
    },
    end() {
      if (shown !== undefined) stream.write(REDRAW);
      shown = undefined;
    },
  };
}

/** Runs `work` with a progress line, and clears the line however the work ends. */
export async function withProgress<T>(
  label: string,
  work: (report: ReportProgress) => Promise<T>,
  stream: ProgressStream = process.stderr,
): Promise<T> {
  const progress = startProgress(label, stream);
  try {
    return await work(progress.report);
  } finally {
    progress.end();
  }
}
