// The bare baselines refhub is measured against, run as processes of their own:
//
//   node bench/baselines.ts server   a bare Fastify server on the same database as refhub
//   node bench/baselines.ts worker   a bare BullMQ worker on the same Redis
//
// The server does the least an audited API can do. `GET /read/:id` reads one referral row by key and
// inserts one audit row, in one transaction: the minimum work of an audited read, with the commit
// (and its fsync) that refhub's read pays too. `POST /write` inserts one audit row in one transaction:
// the minimum work of a durable write. It uses the same tables as refhub, a pool of the same size
// (PostgreSQL) or one embedded PGlite (`BASELINE_PGLITE_DIR`), no logger, no validation, no auth.
//
// The worker moves jobs that do nothing, with the concurrency of refhub's forward worker; the
// benchmark adds the jobs and times them through.
//
// `renderBare` is the render baseline: every value of the referral HTML-escaped into a bare document,
// the least a renderer of the same data must do.
import { PGlite } from '@electric-sql/pglite';
import { Worker } from 'bullmq';
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

/** One transaction's worth of statements, on whichever engine the baseline runs. */
interface BareDatabase {
  transaction<T>(
    work: (query: (text: string, params: unknown[]) => Promise<unknown[]>) => Promise<T>,
  ): Promise<T>;
  close(): Promise<void>;
}

const POOL_SIZE = 10; // refhub's own pool size (src/db/database.ts)

function postgres(url: string): BareDatabase {
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE, application_name: 'refhub-baseline' });
  pool.on('error', () => undefined);
  return {
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work(
          async (text, params) => (await client.query<Record<string, unknown>>(text, params)).rows,
        );
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

async function pglite(dir: string): Promise<BareDatabase> {
  const db = new PGlite(dir);
  await db.waitReady;
  return {
    // PGlite serves one transaction at a time; its own transaction() queues the others.
    transaction: (work) =>
      db.transaction((tx) => work(async (text, params) => (await tx.query(text, params)).rows)),
    close: () => db.close(),
  };
}

const AUDIT_INSERT = `INSERT INTO audit_events
  (id, occurred_at, request_id, api_key_id, system, institution_id_type, institution_id, requester_identifier,
   action, outcome, referral_ids)
  VALUES ($1, $2, $3, NULL, 'baseline', 'hci', 'S1234A', NULL, $4, 'success', $5)`;

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Every string, number and boolean in `value`, escaped, one paragraph each, in a bare document. */
export function renderBare(value: unknown): string {
  const parts = ['<!doctype html><html><head><meta charset="utf-8"></head><body>'];
  const walk = (v: unknown): void => {
    if (typeof v === 'string')
      parts.push(
        '<p>',
        v.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c),
        '</p>',
      );
    else if (typeof v === 'number' || typeof v === 'boolean') parts.push('<p>', String(v), '</p>');
    else if (Array.isArray(v)) for (const item of v) walk(item);
    else if (typeof v === 'object' && v !== null) for (const item of Object.values(v)) walk(item);
  };
  walk(value);
  parts.push('</body></html>');
  return parts.join('');
}

export function buildBaselineServer(db: BareDatabase): FastifyInstance {
  const app = Fastify({ logger: false });
  app.get<{ Params: { id: string } }>('/read/:id', async (request, reply) => {
    const row = await db.transaction(async (query) => {
      const [found] = await query('SELECT * FROM referrals WHERE id = $1', [request.params.id]);
      const now = new Date();
      await query(AUDIT_INSERT, [uuidv7(), now, uuidv7(), 'baseline.read', [request.params.id]]);
      return found;
    });
    if (row === undefined) return reply.code(404).send({ code: 'not_found' });
    return row;
  });
  app.post('/write', async (_request, reply) => {
    const id = uuidv7();
    await db.transaction((query) => query(AUDIT_INSERT, [id, new Date(), uuidv7(), 'baseline.write', []]));
    return reply.code(201).send({ id });
  });
  return app;
}

async function serve(): Promise<void> {
  const url = process.env.BASELINE_DATABASE_URL;
  const dir = process.env.BASELINE_PGLITE_DIR;
  if (url === undefined && dir === undefined)
    throw new Error('set BASELINE_DATABASE_URL or BASELINE_PGLITE_DIR');
  const db = url === undefined ? await pglite(dir ?? '') : postgres(url);
  const app = buildBaselineServer(db);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.once('SIGTERM', () => {
    void app
      .close()
      .then(() => db.close())
      .finally(() => process.exit(0));
  });
  process.stdout.write(`baseline server listening on ${address}\n`);
}

function work(): void {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const queue = process.env.BASELINE_QUEUE ?? 'noop';
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const worker = new Worker(queue, () => Promise.resolve(), {
    connection,
    prefix: process.env.BASELINE_QUEUE_PREFIX ?? '{refhub-baseline}',
    concurrency: Number(process.env.BASELINE_CONCURRENCY ?? '16'),
  });
  worker.on('error', (error) => process.stderr.write(`baseline worker: ${error.message}\n`));
  process.once('SIGTERM', () => {
    void worker
      .close()
      .then(() => connection.quit())
      .finally(() => process.exit(0));
  });
  void worker.waitUntilReady().then(() => process.stdout.write(`baseline worker serving ${queue}\n`));
}

if (import.meta.main) {
  const command = process.argv[2];
  if (command === 'server') await serve();
  else if (command === 'worker') work();
  else throw new Error('usage: node bench/baselines.ts server|worker');
}
