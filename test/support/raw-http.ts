// A client that writes an HTTP/1.1 request by hand on a connection of its own, as slowly as a test
// wants (a byte at a time, chunked, or not at all for a while), and reads the answer as it comes: what
// refhub sees from a clinic's system on a slow link, or from a client that lies about its body.
import net from 'node:net';

export interface RawAnswer {
  readonly status: number;
  /** Header names in lowercase. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface RawRequest {
  /** Writes more of the request, unless the connection is closed. */
  write(bytes: string | Buffer): void;
  /** Writes one chunk of a chunked body (`Transfer-Encoding: chunked`); an empty one ends the body. */
  writeChunk(bytes: Buffer): void;
  /** Whether the connection can still take bytes. */
  readonly open: boolean;
  /** Whether an answer has arrived whole. */
  readonly answered: boolean;
  /** The answer, once it has arrived whole; rejects if the connection ends first. */
  readonly answer: Promise<RawAnswer>;
  /** The connection closed (by either side). */
  readonly closed: Promise<void>;
  /** Whether the connection was reset (ECONNRESET) rather than closed in order. */
  readonly reset: boolean;
  /** Closes the connection at once, as a client that gives up does. */
  destroy(): void;
}

function parse(received: Buffer): RawAnswer | undefined {
  const end = received.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const at = line.indexOf(':');
    headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = received.subarray(end + 4);
  if (body.length < length) return undefined;
  return { status, headers, body: body.subarray(0, length).toString('utf8') };
}

/**
 * Opens a connection to `port` on loopback and writes `head` (the request line and headers, ending
 * with the empty line); the body is written by the test. A provisional answer (100 Continue) is skipped.
 */
export async function rawRequest(port: number, head: string): Promise<RawRequest> {
  const socket = net.connect(port, '127.0.0.1');
  let received = Buffer.alloc(0);
  let answer: RawAnswer | undefined;
  let reset = false;
  let settle: { resolve: (a: RawAnswer) => void; reject: (e: Error) => void } | undefined;
  const answered = new Promise<RawAnswer>((resolve, reject) => {
    settle = { resolve, reject };
  });
  answered.catch(() => undefined);
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => {
      resolve();
    });
  });
  socket.on('data', (chunk: Buffer) => {
    if (answer !== undefined) return;
    received = Buffer.concat([received, chunk]);
    const parsed = parse(received);
    if (parsed?.status === 100) {
      received = received.subarray(received.indexOf('\r\n\r\n') + 4);
      return;
    }
    if (parsed !== undefined) {
      answer = parsed;
      settle?.resolve(parsed);
    }
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ECONNRESET') reset = true;
  });
  socket.once('close', () => {
    if (answer === undefined) settle?.reject(new Error(reset ? 'the connection was reset' : 'no answer'));
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write(head);
  const writable = () => !socket.destroyed && socket.writable;
  return {
    write(bytes) {
      if (writable()) socket.write(bytes);
    },
    writeChunk(bytes) {
      if (!writable()) return;
      socket.write(`${bytes.length.toString(16)}\r\n`);
      if (bytes.length > 0) socket.write(bytes);
      socket.write('\r\n');
    },
    get open() {
      return writable();
    },
    get answered() {
      return answer !== undefined;
    },
    answer: answered,
    closed,
    get reset() {
      return reset;
    },
    destroy() {
      socket.destroy();
    },
  };
}

/** The request line and headers of an upload to the API: `headers` added to those every upload has. */
export function uploadHead(
  path: string,
  key: string,
  headers: Readonly<Record<string, string>>,
  fileName = 'letter.txt',
): string {
  const lines = [
    `POST ${path} HTTP/1.1`,
    'Host: refhub.test',
    `Authorization: ApiKey ${key}`,
    'Content-Type: text/plain',
    `Content-Disposition: attachment; filename="${fileName}"`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}
