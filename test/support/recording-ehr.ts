// A fake EHR of a test's own: a real HTTP server on a free loopback port that records every forward
// it receives (the message ID from `Idempotency-Key`, the SHA-256 of the body, and whether the body is
// a valid forward request of contract §7 whose `messageId` matches the header) and answers as the
// test tells it: 200 after a delay, or 503 with `Retry-After`. Requests that refhub gave up on before
// the answer (a killed worker) are counted as cut off. Fault tests read the record to prove that
// every referral arrived, under one message ID per version, and how many times.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import {
  createForwardRequestChecker,
  MAX_FORWARD_BODY_BYTES,
} from '../../src/domain/forwarding/forward-request.ts';
import { LOOPBACK } from './free-port.ts';

export interface EhrDelivery {
  /** From the `Idempotency-Key` header. */
  readonly messageId: string;
  readonly referralId: string | null;
  readonly version: number | null;
  readonly sha256: string;
  /** The body is a forward request of contract §7, and its messageId equals the header. */
  readonly valid: boolean;
  /** The status this EHR answered (or was about to answer when the request was cut off). */
  readonly status: number;
  readonly receivedAt: number;
}

export interface EhrAnswering {
  /** 200 (the default) or 503. */
  readonly status: 200 | 503;
  /** How long each answer takes, so that forwards are in flight when a fault strikes. */
  readonly latencyMs: number;
  /** Sent with a 503. */
  readonly retryAfterSeconds?: number;
}

export interface RecordingEhr {
  /** What `EHR_URL` should be. */
  readonly url: string;
  answer(answering: Partial<EhrAnswering>): void;
  /** Every request received with a full body, oldest first. */
  deliveries(): readonly EhrDelivery[];
  /** How many requests arrived, were answered, or were closed by the sender before the answer. */
  counts(): { readonly received: number; readonly answered: number; readonly cutOff: number };
  /** Requests received and not yet answered or cut off. */
  inFlight(): number;
  close(): Promise<void>;
}

export async function startRecordingEhr(): Promise<RecordingEhr> {
  const check = createForwardRequestChecker();
  const deliveries: EhrDelivery[] = [];
  const counts = { received: 0, answered: 0, cutOff: 0 };
  let answering: EhrAnswering = { status: 200, latencyMs: 0 };
  let references = 0;

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_FORWARD_BODY_BYTES) chunks.push(chunk);
    });
    request.on('end', () => {
      counts.received++;
      const body = Buffer.concat(chunks);
      const header = request.headers['idempotency-key'];
      const messageId = typeof header === 'string' ? header : '';
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      const checked = check(parsed);
      const { status, latencyMs, retryAfterSeconds } = answering;
      deliveries.push({
        messageId,
        referralId: checked.ok ? checked.request.referralId : null,
        version: checked.ok ? checked.request.version : null,
        sha256: createHash('sha256').update(body).digest('hex'),
        valid: request.method === 'POST' && checked.ok && checked.request.messageId === messageId,
        status,
        receivedAt: Date.now(),
      });
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        counts.answered++;
        if (status === 503) {
          response.writeHead(503, {
            'content-type': 'application/json',
            ...(retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) }),
          });
          response.end(JSON.stringify({ error: 'unavailable' }));
        } else {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ reference: `ehr-${++references}` }));
        }
      }, latencyMs);
      response.once('close', () => {
        if (settled) return;
        clearTimeout(timer);
        counts.cutOff++;
      });
    });
  });
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  const { port } = server.address() as net.AddressInfo;

  return {
    url: `http://${LOOPBACK}:${port}/ehr/referrals`,
    answer(next) {
      answering = { ...answering, ...next };
    },
    deliveries: () => [...deliveries],
    counts: () => ({ ...counts }),
    inFlight: () => counts.received - counts.answered - counts.cutOff,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
}

/** The message ID each referral's deliveries carried, and how many deliveries beyond one per ID. */
export function deliverySummary(deliveries: readonly EhrDelivery[]): {
  readonly messageIds: ReadonlySet<string>;
  readonly duplicates: number;
  /** Message IDs that arrived with more than one body hash (a version's bytes must never change). */
  readonly changedBytes: readonly string[];
} {
  const hashes = new Map<string, Set<string>>();
  for (const d of deliveries) hashes.set(d.messageId, (hashes.get(d.messageId) ?? new Set()).add(d.sha256));
  return {
    messageIds: new Set(hashes.keys()),
    duplicates: deliveries.length - hashes.size,
    changedBytes: [...hashes].filter(([, h]) => h.size > 1).map(([id]) => id),
  };
}
