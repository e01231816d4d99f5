// `refhub <command>` run once, as an operator runs it: `node bin/refhub.js …` with the settings the
// test gives and nothing from the developer's shell (child-env.ts). With `terminal`, it runs on a
// pseudo-terminal that util-linux `script` opens, so stdout and stderr are a TTY as at a console;
// `script` hands back what the terminal showed (both streams, `\r\n` line ends) in `stdout`. The
// commands run here end by themselves, so no lifeline ties them to the test process.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { childEnv } from './child-env.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin', 'refhub.js');

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const quoted = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

export function runRefhub(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  options: { readonly terminal?: boolean } = {},
): Promise<CliResult> {
  const command = [process.execPath, BIN, ...args];
  const [file, argv] = options.terminal
    ? ['script', ['--quiet', '--return', '--command', command.map(quoted).join(' '), '/dev/null']]
    : [process.execPath, command.slice(1)];
  const child = spawn(file, argv, {
    cwd: ROOT,
    env: childEnv({ NODE_ENV: 'development', LOG_LEVEL: 'warn', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
}

/** What a person reads: a result's lines, as `refhub … → exit N` and its output, for failures. */
export function describeRun(args: readonly string[], r: CliResult): string {
  return `refhub ${args.join(' ')} → exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
}
