// A client of ClamAV's daemon, clamd, over TCP: `PING`, and `INSTREAM`, which scans bytes sent in
// chunks (each a 4-byte big-endian length and the bytes, then a chunk of length zero) and answers
// `stream: OK`, `stream: <signature> FOUND` or `<reason> ERROR`. Commands go in their NUL-terminated
// form (`zINSTREAM\0`), so each answer ends with NUL. One connection per command: clamd closes it
// after answering. clamd refuses a stream longer than its StreamMaxLength (25 MB by default) with
// `INSTREAM size limit exceeded. ERROR` and closes the connection, possibly while bytes are still
// being sent; the client then reads that answer rather than report the broken pipe.
//
// What it throws is a ScannerError whose message is a code (`scanner_unreachable`, ...), because a
// scan job's error is kept in Redis and shown on the dashboard: never a file's name or content.
import net from 'node:net';
import type { ClamdAddress } from '../../domain/attachments.ts';

export type ScanVerdict =
  | { readonly kind: 'clean' }
  /** `signature` is clamd's name for what it found: for operators, never shown to patients. */
  | { readonly kind: 'infected'; readonly signature: string };

export const SCANNER_ERRORS = [
  /** No connection: clamd is not listening there, or the address does not resolve. */
  'scanner_unreachable',
  /** No complete answer within the timeout. */
  'scanner_timeout',
  /** clamd refused the stream as longer than its StreamMaxLength. */
  'scanner_size_limit',
  /** clamd answered with an error of its own, or with something that is not an answer. */
  'scanner_error',
] as const;
export type ScannerErrorCode = (typeof SCANNER_ERRORS)[number];

export class ScannerError extends Error {
  override readonly name = 'ScannerError';
  readonly code: ScannerErrorCode;
  constructor(code: ScannerErrorCode) {
    super(code);
    this.code = code;
  }
}

export interface ClamdClientSettings extends ClamdAddress {
  /** From connecting to the end of the answer, for one command. */
  readonly timeoutMs: number;
}

/** The largest chunk sent in one INSTREAM frame; larger pieces of the source are split. */
const MAX_FRAME = 64 * 1024;

/** What clamd's answer to INSTREAM means (the answer without its NUL). */
export function verdictOf(answer: string): ScanVerdict {
  if (answer === 'stream: OK') return { kind: 'clean' };
  const found = /^stream: (.+) FOUND$/.exec(answer);
  if (found?.[1] !== undefined) return { kind: 'infected', signature: found[1] };
  if (/size limit exceeded/i.test(answer)) throw new ScannerError('scanner_size_limit');
  throw new ScannerError('scanner_error');
}

export function createClamdClient(settings: ClamdClientSettings) {
  /**
   * Opens a connection, lets `send` write to it, and resolves with clamd's answer up to its NUL. A
   * write that fails because clamd has already answered and closed is not an error: the answer is.
   */
  function exchange(send: (socket: net.Socket) => Promise<void>): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const socket = net.connect({ host: settings.host, port: settings.port });
      let answer = '';
      let connected = false;
      let settled = false;
      const finish = (outcome: { answer: string } | { error: ScannerError }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        if ('error' in outcome) reject(outcome.error);
        else resolve(outcome.answer);
      };
      const timer = setTimeout(() => {
        finish({ error: new ScannerError('scanner_timeout') });
      }, settings.timeoutMs);
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => {
        answer += chunk;
        const end = answer.indexOf('\0');
        if (end !== -1) finish({ answer: answer.slice(0, end) });
      });
      // clamd closed without a NUL: what it said, if anything, is the answer.
      socket.on('end', () => {
        finish(answer === '' ? { error: new ScannerError('scanner_error') } : { answer });
      });
      socket.on('error', () => {
        // Before the connection: nobody listens. After it: clamd closed while bytes were still being
        // sent, and its answer (if it gave one) arrives or has arrived; 'end' or 'close' settles.
        if (!connected) finish({ error: new ScannerError('scanner_unreachable') });
      });
      socket.on('close', () => {
        finish(answer === '' ? { error: new ScannerError('scanner_error') } : { answer });
      });
      socket.once('connect', () => {
        connected = true;
        send(socket).catch(() => {
          // A write after clamd closed the connection: its answer settles the exchange.
        });
      });
    });
  }

  /** Writes `data`, waiting for the socket to drain when its buffer is full. */
  function write(socket: net.Socket, data: Uint8Array): Promise<void> {
    if (socket.destroyed) return Promise.reject(new Error('closed'));
    if (socket.write(data)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onDrain = () => {
        socket.off('close', onClose);
        resolve();
      };
      const onClose = () => {
        socket.off('drain', onDrain);
        reject(new Error('closed'));
      };
      socket.once('drain', onDrain);
      socket.once('close', onClose);
    });
  }

  function frameLength(length: number): Buffer {
    const header = Buffer.alloc(4);
    header.writeUInt32BE(length);
    return header;
  }

  return {
    /** Resolves when clamd answers PONG. */
    async ping(): Promise<void> {
      const answer = await exchange(async (socket) => {
        await write(socket, Buffer.from('zPING\0'));
      });
      if (answer !== 'PONG') throw new ScannerError('scanner_error');
    },

    /**
     * Scans the bytes `source` yields, in order, without holding more than one piece of it at a time.
     * A failure to read the source rejects with that failure, not a ScannerError.
     */
    async scan(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<ScanVerdict> {
      let sourceFailure: { error: unknown } | undefined;
      const answer = await exchange(async (socket) => {
        await write(socket, Buffer.from('zINSTREAM\0'));
        const pieces =
          Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
        for (;;) {
          // Only a failure to read the source is the source's; a write that fails is clamd closing the
          // connection, whose answer (or its absence) settles the exchange.
          let next: IteratorResult<Uint8Array>;
          try {
            next = await pieces.next();
          } catch (error) {
            // End the connection without the closing frame, so clamd scans nothing.
            sourceFailure = { error };
            socket.destroy();
            return;
          }
          if (next.done === true) break;
          const piece = next.value;
          for (let at = 0; at < piece.length; at += MAX_FRAME) {
            const frame = piece.subarray(at, Math.min(piece.length, at + MAX_FRAME));
            await write(socket, frameLength(frame.length));
            await write(socket, frame);
          }
        }
        await write(socket, frameLength(0));
      }).catch((error: unknown) => {
        if (sourceFailure !== undefined) return undefined;
        throw error;
      });
      if (sourceFailure !== undefined) throw sourceFailure.error;
      if (answer === undefined) throw new ScannerError('scanner_error');
      return verdictOf(answer);
    },
  };
}

export type ClamdClient = ReturnType<typeof createClamdClient>;
