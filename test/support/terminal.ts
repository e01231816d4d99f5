// What a reader sees in a terminal, from what programs wrote to it: a pseudo-terminal's output (as
// `script` from util-linux records it) rendered into lines. Programs that know they write to a terminal
// draw on it: npm's spinner writes a frame, moves to the first column and erases the line; curl makes
// header names bold; a line from HTTP ends in CR LF. Rendering keeps what stays on the screen and drops
// what was drawn over, so a test can compare a reader's view with what the documentation promises.
import { execFileSync, spawn } from 'node:child_process';

/** CSI sequences (ESC [ … letter), OSC sequences (ESC ] … BEL or ESC \), CR, BS, or one character. */
const TOKEN =
  // eslint-disable-next-line no-control-regex -- a terminal's control characters are what this reads
  /\u001b\[([0-9;?]*)([@-~])|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]|\r|\u0008|[^]/gu;

/** The lines left on the screen, each without trailing blanks; the lines after the last are dropped. */
export function renderTerminal(output: string): string[] {
  const lines: string[] = [];
  for (const written of output.split('\n')) {
    const cells: string[] = [];
    let column = 0;
    for (const match of written.matchAll(TOKEN)) {
      const [token, parameters, command] = match;
      if (command !== undefined) {
        const n = Number(parameters === '' ? '0' : parameters);
        // Cursor to a column (1-based), erase to the end of the line or all of it; colours and the
        // rest change nothing a reader reads.
        if (command === 'G') column = Math.max(0, n - 1);
        else if (command === 'K' && n === 2) cells.length = 0;
        else if (command === 'K') cells.length = Math.min(cells.length, column);
      } else if (token === '\r') column = 0;
      else if (token === '\u0008') column = Math.max(0, column - 1);
      else if (!token.startsWith('\u001b')) {
        while (cells.length < column) cells.push(' ');
        cells[column++] = token;
      }
    }
    lines.push(cells.join('').trimEnd());
  }
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines;
}

export interface TerminalRun {
  /** The script's exit code, once it ends. */
  readonly done: Promise<{ readonly code: number | null; readonly output: string }>;
  /** Ends the terminal session (its shell is told to stop, then killed), if it still runs. */
  stop(): void;
}

/**
 * Runs a bash script in a pseudo-terminal, as a reader's commands run in theirs: every program in it
 * sees a terminal on stdin, stdout and stderr. `script` from util-linux provides the terminal and
 * copies what is written to it to its own stdout.
 */
/**
 * Whether this machine lets a test run a command in a network namespace of its own (`unshare -n`),
 * where nothing but loopback answers: no PostgreSQL, no Redis, no registry.
 */
export function loopbackOnlyAllowed(): boolean {
  try {
    execFileSync('unshare', ['-n', 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function runInTerminal(
  scriptFile: string,
  options: {
    readonly cwd: string;
    readonly env: NodeJS.ProcessEnv;
    /** Run where nothing but loopback answers (see `loopbackOnlyAllowed`). */
    readonly loopbackOnly?: boolean;
  },
): TerminalRun {
  const bash = `bash --noprofile --norc ${scriptFile}`;
  const command =
    options.loopbackOnly === true ? `unshare -n sh -c 'ip link set lo up && exec ${bash}'` : bash;
  const child = spawn('script', ['--quiet', '--return', '--command', command, '/dev/null'], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const done = new Promise<{ code: number | null; output: string }>((resolve) =>
    child.on('close', (code) => {
      resolve({ code, output });
    }),
  );
  return {
    done,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    },
  };
}
