// The clamd client against a real ClamAV daemon (test/support/clamd-server.ts) with a signature
// database written here: a clean file, the EICAR test file whole and in pieces smaller than a frame
// and larger than one, a stream past clamd's limit, a source that fails while it is read, and the
// failures of the daemon itself (nobody listening, a listener that never answers).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clamdAddressText, parseClamdAddress } from '../../../src/domain/attachments.ts';
import {
  createClamdClient,
  ScannerError,
  verdictOf,
  type ClamdClient,
} from '../../../src/workers/attachments/clamd-client.ts';
import { EICAR, EICAR_SIGNATURE, startClamd, type ClamdServer } from '../../support/clamd-server.ts';
import { freePort, LOOPBACK } from '../../support/free-port.ts';

const TIMEOUT_MS = 10_000;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** `bytes` in pieces of `size`, each handed out on a later turn, as a stored file is read. */
async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) {
    await new Promise(setImmediate);
    yield bytes.subarray(at, at + size);
  }
}

describe('clamd client', () => {
  let clamd: ClamdServer;
  let client: ClamdClient;
  const LETTER = Buffer.from('%PDF-1.7\nA referral letter, nothing else.\n');
  // Larger than one INSTREAM frame (64 KiB), and found by its own signature: the frames must add up.
  const LARGE = Buffer.alloc(200 * 1024, 'refhub ');

  beforeAll(async () => {
    clamd = await startClamd({
      signatures: [{ bytes: LARGE, name: 'Refhub.Test.Large' }],
      streamMaxBytes: 1024 * 1024,
    });
    client = createClamdClient({ host: clamd.host, port: clamd.port, timeoutMs: TIMEOUT_MS });
  }, 60_000);
  afterAll(async () => {
    await clamd.stop();
  });

  it('answers a ping', async () => {
    await client.ping();
  });

  it('finds a clean file clean and EICAR infected, with the signature for operators', async () => {
    expect(await client.scan([LETTER])).toEqual({ kind: 'clean' });
    expect(await client.scan([EICAR])).toEqual({
      kind: 'infected',
      signature: `${EICAR_SIGNATURE}.UNOFFICIAL`,
    });
  });

  it('scans a source read in pieces, smaller and larger than a frame, as the whole', async () => {
    expect(await client.scan(pieces(EICAR, 7))).toMatchObject({ kind: 'infected' });
    expect(await client.scan(pieces(LARGE, 100 * 1024))).toEqual({
      kind: 'infected',
      signature: 'Refhub.Test.Large.UNOFFICIAL',
    });
    expect(await client.scan(pieces(LARGE.subarray(1), 100 * 1024))).toEqual({ kind: 'clean' });
    // An empty stream is clean to clamd; refusing empty files is the upload's business.
    expect(await client.scan([])).toEqual({ kind: 'clean' });
  });

  it('reports a stream past the daemon’s limit as scanner_size_limit, not as clean', async () => {
    const tooLong = Buffer.alloc(clamd.streamMaxBytes + 256 * 1024, 'x');
    const error = await rejection(client.scan(pieces(tooLong, 64 * 1024)));
    expect(error).toBeInstanceOf(ScannerError);
    expect((error as ScannerError).code).toBe('scanner_size_limit');
    // The daemon goes on answering.
    expect(await client.scan([LETTER])).toEqual({ kind: 'clean' });
  });

  it('rejects with the source’s own failure when the source fails, and clamd scans nothing', async () => {
    const broken = new Error('the stored file could not be read');
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield EICAR.subarray(0, 10);
      await new Promise(setImmediate);
      throw broken;
    }
    expect(await rejection(client.scan(failing()))).toBe(broken);
    expect(await client.scan([LETTER])).toEqual({ kind: 'clean' });
  });

  it('reports nobody listening as scanner_unreachable', async () => {
    const closed = createClamdClient({ host: LOOPBACK, port: await freePort(), timeoutMs: TIMEOUT_MS });
    for (const attempt of [closed.ping(), closed.scan([LETTER])]) {
      const error = await rejection(attempt);
      expect((error as ScannerError).code).toBe('scanner_unreachable');
    }
  });

  it('reports a listener that hangs up mid-stream without an answer as scanner_error', async () => {
    // It takes the connection, reads the command and closes: the file's bytes meet a closed socket.
    const hangsUp = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => socket.destroy());
    });
    await new Promise<void>((resolve) => hangsUp.listen(0, LOOPBACK, resolve));
    try {
      const { port } = hangsUp.address() as net.AddressInfo;
      const error = await rejection(
        createClamdClient({ host: LOOPBACK, port, timeoutMs: TIMEOUT_MS }).scan(
          pieces(Buffer.alloc(4 * 1024 * 1024, 'x'), 256 * 1024),
        ),
      );
      expect(error).toBeInstanceOf(ScannerError);
      expect((error as ScannerError).code).toBe('scanner_error');
    } finally {
      await new Promise((resolve) => hangsUp.close(resolve));
    }
  });

  it('reports a listener that never answers as scanner_timeout, after the timeout it was given', async () => {
    const held = new Set<net.Socket>();
    const silent = net.createServer((socket) => {
      held.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, LOOPBACK, resolve));
    try {
      const { port } = silent.address() as net.AddressInfo;
      const timeoutMs = 300;
      const started = performance.now();
      const error = await rejection(createClamdClient({ host: LOOPBACK, port, timeoutMs }).scan([LETTER]));
      expect((error as ScannerError).code).toBe('scanner_timeout');
      // It waited for its timeout, not less.
      expect(performance.now() - started).toBeGreaterThanOrEqual(timeoutMs - 5);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('clamd answers and addresses', () => {
  it('reads each kind of answer', () => {
    expect(verdictOf('stream: OK')).toEqual({ kind: 'clean' });
    expect(verdictOf('stream: Win.Test.EICAR_HDB-1 FOUND')).toEqual({
      kind: 'infected',
      signature: 'Win.Test.EICAR_HDB-1',
    });
    expect(() => verdictOf('INSTREAM size limit exceeded. ERROR')).toThrow('scanner_size_limit');
    expect(() => verdictOf("Can't allocate memory ERROR")).toThrow('scanner_error');
    expect(() => verdictOf('PONG')).toThrow('scanner_error');
  });

  it('parses clamd://host:port and host:port, and nothing else', () => {
    expect(parseClamdAddress('clamd://127.0.0.1:3310')).toEqual({ host: '127.0.0.1', port: 3310 });
    expect(parseClamdAddress('clamav.internal:3310')).toEqual({ host: 'clamav.internal', port: 3310 });
    expect(parseClamdAddress('clamd://[::1]:3310')).toEqual({ host: '::1', port: 3310 });
    for (const text of ['clamd://127.0.0.1:3310', 'clamd://[::1]:3310', 'clamd://clamav.internal:3310']) {
      expect(clamdAddressText(parseClamdAddress(text)!)).toBe(text);
    }
    for (const bad of [
      'clamav.internal',
      'clamd://clamav.internal',
      'clamd://clamav.internal:0',
      'clamd://clamav.internal:99999',
      'clamd://user:secret@clamav.internal:3310',
      'clamd://clamav.internal:3310/path',
      'clamd://clamav.internal:3310?x=1',
      '',
    ]) {
      expect(parseClamdAddress(bad), bad).toBeUndefined();
    }
  });
});
