// The running embedded refhub's door for its operator's commands. With PGlite one process holds
// DATA_DIR, so `refhub keys …`, `refhub clients …` and `refhub retention run|referrals` cannot open
// the database while `refhub all` serves; that process listens on DATA_DIR/refhub.sock and runs them
// there (cli/control-client.ts is the other end). The socket is made open to the owner of DATA_DIR
// alone (mode 600), in a directory that is the installation's: whoever can open it can already read
// the database, so it grants nothing new, and it never listens on the network. Each command runs as
// it would in the CLI's own process, through the same code and the same services, which audit what
// they do.
import fs from 'node:fs';
import http from 'node:http';
import { createClient, listClients, revokeClient, setClientKeys } from '../cli/client-credentials.command.ts';
import type { CreateClientOptions, KeySourceOptions } from '../cli/client-credentials.command.ts';
import { createKey, listKeys, revokeKey, type CreateKeyOptions } from '../cli/api-key.command.ts';
import {
  CONTROL_COMMANDS,
  controlSocketPath,
  type ControlAnswer,
  type ControlCommand,
  type ControlRequest,
} from '../cli/control-client.ts';
import { operatorMessage } from '../cli/failure.ts';
import { limitClient, limitKey, type LimitOptions } from '../cli/rate-limit.command.ts';
import { archiveReferrals, runRetention } from '../cli/retention.command.ts';
import type { ProgressStream } from '../cli/progress.ts';
import type { Output } from '../cli/output.ts';
import type { AppContext } from './context.ts';

/** The largest request the socket reads: a command and its arguments are a few hundred bytes. */
const MAX_REQUEST_BYTES = 64 * 1024;

type Run = (ctx: AppContext, out: Output, args: readonly unknown[]) => Promise<void>;

/** Each command, as the CLI runs it in its own process (composition/commands.ts) and as this one does. */
export const CONTROL_RUNS: Readonly<Record<ControlCommand, Run>> = {
  'keys create': (ctx, out, [options]) => createKey({ ...ctx, out }, options as CreateKeyOptions),
  'keys list': (ctx, out) => listKeys({ ...ctx, out }),
  'keys revoke': (ctx, out, [id]) => revokeKey({ ...ctx, out }, String(id)),
  'clients create': (ctx, out, [options]) => createClient({ ...ctx, out }, options as CreateClientOptions),
  'clients list': (ctx, out) => listClients({ ...ctx, out }),
  'clients keys': (ctx, out, [id, options]) =>
    setClientKeys({ ...ctx, out }, String(id), options as KeySourceOptions),
  'clients revoke': (ctx, out, [id]) => revokeClient({ ...ctx, out }, String(id)),
  'keys limit': (ctx, out, [id, options]) => limitKey({ ...ctx, out }, String(id), options as LimitOptions),
  'clients limit': (ctx, out, [id, options]) =>
    limitClient({ ...ctx, out }, String(id), options as LimitOptions),
  'retention run': (ctx, out) => runRetention(ctx, out, NO_TERMINAL),
  'retention referrals': (ctx, out) => archiveReferrals(ctx, out, NO_TERMINAL),
};

/** A command run here for the CLI's process draws no progress line: no terminal is there to draw on. */
const NO_TERMINAL: ProgressStream = { write: () => true };

function isRequest(value: unknown): value is ControlRequest {
  const { command, args } = (value ?? {}) as { command?: unknown; args?: unknown };
  return (CONTROL_COMMANDS as readonly unknown[]).includes(command) && Array.isArray(args);
}

export interface ControlSocket {
  readonly path: string;
  close(): Promise<void>;
}

export async function listenForCommands(ctx: AppContext, dataDir: string): Promise<ControlSocket> {
  const socketPath = controlSocketPath(dataDir);
  // This process holds DATA_DIR's lock: a socket file there is one a process that died left behind.
  fs.rmSync(socketPath, { force: true });
  const server = http.createServer((request, response) => {
    const answer = (status: number, body: ControlAnswer) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (request.method !== 'POST' || request.url !== '/commands') {
      answer(404, { error: 'the running refhub takes commands at POST /commands only' });
      return;
    }
    let text = '';
    let bytes = 0;
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      bytes += Buffer.byteLength(chunk);
      if (bytes <= MAX_REQUEST_BYTES) text += chunk;
    });
    request.on('end', () => {
      void (async () => {
        let parsed: unknown;
        try {
          parsed = bytes > MAX_REQUEST_BYTES ? undefined : JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        if (!isRequest(parsed)) {
          answer(400, {
            error: `the running refhub runs only: ${CONTROL_COMMANDS.map((c) => `refhub ${c}`).join(', ')}`,
          });
          return;
        }
        let output = '';
        try {
          await CONTROL_RUNS[parsed.command](ctx, (chunk) => (output += chunk), parsed.args);
          ctx.logger.info(
            { command: `refhub ${parsed.command}` },
            'ran an operator command for the refhub command line',
          );
          answer(200, { output });
        } catch (error) {
          const message = operatorMessage(error);
          if (message !== undefined) {
            answer(400, { error: message });
            return;
          }
          ctx.logger.error(
            { command: `refhub ${parsed.command}`, err: { type: (error as Error).name } },
            'an operator command failed in the running refhub',
          );
          answer(500, { error: `refhub ${parsed.command} failed in the running refhub; its log says where` });
        }
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Made open to the owner alone before anyone could connect: the umask applies as the socket is bound.
    const umask = process.umask(0o177);
    try {
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    } finally {
      process.umask(umask);
    }
  });
  fs.chmodSync(socketPath, 0o600);
  return {
    path: socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          fs.rmSync(socketPath, { force: true });
          resolve();
        });
      }),
  };
}
