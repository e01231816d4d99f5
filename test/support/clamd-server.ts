// A ClamAV daemon of a test's own: Debian's `clamd` (package clamav-daemon) on a free loopback port,
// in the foreground, with a signature database the test writes itself, so nothing is downloaded.
// clamd loads custom signature files from its database directory; an `.hdb` line is a file's MD5, its
// size and a name, so the database below finds exactly the EICAR test file (and any other bytes a
// test names). clamd reports such a signature with `.UNOFFICIAL` after its name. The server never
// outlives the test process.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { tieToThisProcess } from './child-lifeline.ts';
import { freePort, LOOPBACK as HOST } from './free-port.ts';

/** The EICAR anti-virus test file: harmless, and found by every scanner that knows its signature. */
export const EICAR = Buffer.from(
  'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*',
  'latin1',
);
export const EICAR_SIGNATURE = 'Refhub.Test.EICAR';

const START_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 5_000;

export interface ClamdServer {
  readonly host: string;
  readonly port: number;
  /** What ATTACHMENT_SCANNER should be. */
  readonly address: string;
  /** The longest stream it accepts, in bytes (its StreamMaxLength). */
  readonly streamMaxBytes: number;
  stop(): Promise<void>;
}

/** Answers PING within a short bound, or false. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port });
    let answer = '';
    socket.setTimeout(1_000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => socket.end('zPING\0'));
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.once('close', () => {
      resolve(answer === 'PONG\0');
    });
    socket.once('error', () => undefined);
  });
}

/**
 * Starts clamd with a database that names EICAR and each of `signatures` (bytes and the name to
 * report), and resolves once it answers PING.
 */
export async function startClamd(
  options: {
    readonly signatures?: readonly { readonly bytes: Buffer; readonly name: string }[];
    readonly streamMaxBytes?: number;
  } = {},
): Promise<ClamdServer> {
  const port = await freePort();
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'refhub-clamd-'));
  const database = path.join(dir, 'db');
  await fs.mkdir(database);
  const streamMaxBytes = options.streamMaxBytes ?? 12 * 1024 * 1024;
  const lines = [{ bytes: EICAR, name: EICAR_SIGNATURE }, ...(options.signatures ?? [])].map(
    ({ bytes, name }) => `${createHash('md5').update(bytes).digest('hex')}:${bytes.length}:${name}`,
  );
  await fs.writeFile(path.join(database, 'refhub-test.hdb'), `${lines.join('\n')}\n`);
  const config = path.join(dir, 'clamd.conf');
  await fs.writeFile(
    config,
    [
      `DatabaseDirectory ${database}`,
      `TCPSocket ${port}`,
      `TCPAddr ${HOST}`,
      'Foreground yes',
      `LogFile ${path.join(dir, 'clamd.log')}`,
      `PidFile ${path.join(dir, 'clamd.pid')}`,
      `StreamMaxLength ${streamMaxBytes}`,
      // The test's database is all it needs; never look for updates or the official signatures.
      'SelfCheck 0',
      '',
    ].join('\n'),
  );
  const proc: ChildProcess = spawn('clamd', ['--config-file', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  tieToThisProcess(proc);
  let output = '';
  proc.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const spawnFailure = new Promise<Error>((resolve) => {
    proc.once('error', (error) => {
      resolve(new Error(`clamd could not be started (install Debian's clamav-daemon): ${error.message}`));
    });
  });
  const exited = new Promise<void>((resolve) => {
    proc.once('exit', () => {
      resolve();
    });
  });
  const gone = () => proc.exitCode !== null || proc.signalCode !== null;

  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const failed = await Promise.race([spawnFailure, Promise.resolve(undefined)]);
    if (failed !== undefined) throw failed;
    if (gone()) {
      const log = await fs.readFile(path.join(dir, 'clamd.log'), 'utf8').catch(() => '');
      throw new Error(`clamd on port ${port} exited at start:\n${output}\n${log}`);
    }
    if (await pings(port)) break;
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`clamd on port ${port} did not answer PING within ${START_TIMEOUT_MS} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  return {
    host: HOST,
    port,
    address: `clamd://${HOST}:${port}`,
    streamMaxBytes,
    async stop() {
      if (!gone()) {
        proc.kill('SIGTERM');
        const grace = setTimeout(() => proc.kill('SIGKILL'), STOP_GRACE_MS);
        await exited;
        clearTimeout(grace);
      }
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
