// `refhub keys …` and `refhub clients …` while `refhub all` serves on embedded PGlite. PGlite serves one
// process, which holds DATA_DIR; so a command that would open the database asks that process instead,
// through DATA_DIR/refhub.sock (composition/control-socket.ts), and prints its answer. The socket is a
// file of DATA_DIR, open to its owner alone: whoever can use it can already read the database.
import http from 'node:http';
import path from 'node:path';

/** The socket's name in DATA_DIR. */
export const CONTROL_SOCKET = 'refhub.sock';

/** The commands the running process runs for the CLI: those an operator needs while refhub serves. */
export const CONTROL_COMMANDS = [
  'keys create',
  'keys list',
  'keys revoke',
  'clients create',
  'clients list',
  'clients keys',
  'clients revoke',
  'keys limit',
  'clients limit',
  'retention run',
  'retention referrals',
] as const;
export type ControlCommand = (typeof CONTROL_COMMANDS)[number];

export function controlSocketPath(dataDir: string): string {
  return path.join(dataDir, CONTROL_SOCKET);
}

/** The running refhub refused the command: its message is for the operator, as the command's own. */
export class ControlCommandRefused extends Error {
  override readonly name = 'ControlCommandRefused';
}

/** What the CLI sends: the command and its arguments, as JSON. */
export interface ControlRequest {
  readonly command: ControlCommand;
  readonly args: readonly unknown[];
}

/** The answer: what the command printed, or the one line that says why it did not run. */
export type ControlAnswer = { readonly output: string } | { readonly error: string };

/** Runs `request` in the refhub that listens on `socketPath`; resolves with what it printed. */
export function runInServingRefhub(socketPath: string, request: ControlRequest): Promise<string> {
  const body = JSON.stringify(request);
  return new Promise((resolve, reject) => {
    const call = http.request(
      {
        socketPath,
        method: 'POST',
        path: '/commands',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          let answer: ControlAnswer;
          try {
            answer = JSON.parse(text) as ControlAnswer;
          } catch {
            reject(
              new ControlCommandRefused(
                `the running refhub answered HTTP ${response.statusCode} without a result`,
              ),
            );
            return;
          }
          if ('output' in answer) resolve(answer.output);
          else reject(new ControlCommandRefused(answer.error));
        });
      },
    );
    call.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        new ControlCommandRefused(
          `the refhub that holds DATA_DIR did not answer at ${socketPath} (${error.code ?? error.message}); ` +
            'stop it, or run the command once it has started',
        ),
      );
    });
    call.end(body);
  });
}
