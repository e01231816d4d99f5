// The bare forwarding pipeline, the baseline of the forward scenario: the least a service must do to
// take a submit durably and deliver the referral's form to the EHR, with nothing of refhub's code.
//
//   node bench/bare-pipeline.ts      (BARE_DATABASE_URL, REDIS_URL, BARE_QUEUE_PREFIX, EHR_URL)
//
// One process, as `refhub all` is, with three parts:
//
// - a node:http server: `POST /referrals/{id}/submit` runs one transaction that moves a draft to
//   submitted (a compare-and-set on its state that bumps its version) and writes an outbox row;
// - a relay: in one transaction, claims up to 100 outbox rows (`FOR UPDATE SKIP LOCKED`), enqueues
//   them with one `addBulk` (the message ID as job ID) and deletes them; it polls every 200 ms when
//   idle, and claims again at once after a full batch, as refhub's relay does;
// - a BullMQ worker at concurrency 16 that reads the referral's row, renders about 19 KiB of HTML with
//   every value escaped, POSTs it to the EHR (the same wire format and `Content-Digest` as refhub,
//   through an undici pool) and, in one transaction, records a ledger row and the forwarded state.
//
// Its tables (`bare_referrals`, `bare_outbox`, `bare_ledger`) live in a database of their own, seeded
// with drafts by `createBareSchema` and `seedBareDrafts` (one INSERT … SELECT over generate_series).
import { createHash } from 'node:crypto';
import http from 'node:http';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Pool as UndiciPool } from 'undici';

/** refhub's pool size (src/db/database.ts) and its forward worker's concurrency. */
const POOL_SIZE = 10;
const WORKER_CONCURRENCY = 16;
const RELAY_BATCH = 100;
const RELAY_IDLE_MS = 200;
export const BARE_QUEUE = 'bare-forward';

export const BARE_SCHEMA = `
CREATE TABLE bare_referrals (
  id uuid PRIMARY KEY,
  version integer NOT NULL DEFAULT 1,
  status text NOT NULL DEFAULT 'draft',
  sender_name text NOT NULL,
  provider_name text NOT NULL,
  offering_name text NOT NULL,
  specialty text NOT NULL,
  specialty_code text NOT NULL,
  form_type text NOT NULL,
  patient_uin text NOT NULL,
  patient_name text NOT NULL,
  patient_dob date,
  patient_gender text,
  patient_nationality text,
  patient_phone_number text,
  patient_residential_status text,
  referrer_id text,
  referrer_name text,
  referrer_email text,
  referrer_contact_number text,
  clinical_info text,
  is_urgent boolean NOT NULL DEFAULT false,
  ehr_state text NOT NULL DEFAULT 'none',
  ehr_forwarded_version integer,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  submitted_at timestamptz
);
CREATE TABLE bare_outbox (
  id bigserial PRIMARY KEY,
  referral_id uuid NOT NULL REFERENCES bare_referrals (id),
  version integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE bare_ledger (
  id bigserial PRIMARY KEY,
  referral_id uuid NOT NULL REFERENCES bare_referrals (id),
  message_id text NOT NULL,
  http_status integer NOT NULL,
  ehr_reference text,
  sha256 text NOT NULL,
  attempted_at timestamptz NOT NULL
);
CREATE INDEX bare_ledger_referral ON bare_ledger (referral_id);
`;

/** Creates the bare pipeline's tables in the (fresh) database `client` is connected to. */
export async function createBareSchema(client: pg.ClientBase): Promise<void> {
  await client.query(BARE_SCHEMA);
}

/**
 * Inserts `count` drafts in one statement, with the fields of refhub's typical referral (the patient
 * varies by row) and returns their IDs in insertion order. `offset` varies the patients of a second batch.
 */
export async function seedBareDrafts(client: pg.ClientBase, count: number, offset = 0): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `INSERT INTO bare_referrals (id, sender_name, provider_name, offering_name, specialty, specialty_code,
       form_type, patient_uin, patient_name, patient_dob, patient_gender, patient_nationality,
       patient_phone_number, patient_residential_status, referrer_id, referrer_name, referrer_email,
       referrer_contact_number, clinical_info, is_urgent)
     SELECT gen_random_uuid(), 'Tampines Medical Centre', 'Central General Hospital',
       'Gastroenterology Clinic', 'Gastroenterology', 'GASTRO', 'Specialist Referral|Patient Summary',
       'S' || lpad((1000000 + (i % 9000000))::text, 7, '0') || 'D', 'Tan Ah Kow ' || i, DATE '1960-02-29',
       CASE WHEN i % 2 = 0 THEN 'Male' ELSE 'Female' END, 'SG', '91234567', 'SC', 'M12345A',
       'Dr Lim Mei Ling', 'mei.ling@bukittimah.example', '61234567',
       E'Dyspepsia for 3 months, worse after meals. No weight loss, no dysphagia, no GI bleeding.\\n'
         || E'H. pylori breath test negative. Trial of PPI for 8 weeks with partial response.\\n'
         || 'Please assess for upper endoscopy.',
       i % 10 = 0
     FROM generate_series($1::int, $2::int) AS i
     ORDER BY i
     RETURNING id`,
    [offset, offset + count - 1],
  );
  return rows.map((r) => r.id);
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** A referral row as the worker reads it. */
export interface BareReferral {
  readonly id: string;
  readonly version: number;
  readonly sender_name: string;
  readonly provider_name: string;
  readonly offering_name: string;
  readonly specialty: string;
  readonly specialty_code: string;
  readonly form_type: string;
  readonly patient_uin: string;
  readonly patient_name: string;
  readonly patient_dob: string | null;
  readonly patient_gender: string | null;
  readonly patient_nationality: string | null;
  readonly patient_phone_number: string | null;
  readonly patient_residential_status: string | null;
  readonly referrer_id: string | null;
  readonly referrer_name: string | null;
  readonly referrer_email: string | null;
  readonly referrer_contact_number: string | null;
  readonly clinical_info: string | null;
  readonly is_urgent: boolean;
  readonly submitted_at: Date | null;
}

const TH =
  'style="width: 32%; padding: 4px 12px 4px 0; text-align: left; vertical-align: top; font-weight: 600; color: #57606a;"';
const TD = 'style="padding: 4px 12px 4px 0; text-align: left; vertical-align: top;"';
const SPAN = 'style="white-space: pre-wrap; overflow-wrap: anywhere;"';
const H2 =
  'style="margin: 20px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; font-size: 15px; font-weight: 700; text-transform: uppercase; letter-spacing: 0.04em; color: #24292f;"';

/**
 * The referral's form: a letter and a patient summary, each a few labelled tables of the referral's
 * values, every value HTML-escaped, inline styles as an EHR form needs (no external resources). For a
 * typical referral it is about 19 KiB, the size of refhub's form of the same referral.
 */
export function renderBareForm(r: BareReferral): string {
  const row = (label: string, value: string | null) =>
    `<tr><th scope="row" ${TH}>${label}</th><td ${TD}><span ${SPAN}>${escapeHtml(value ?? '–')}</span></td></tr>`;
  const table = (title: string, rows: string[]) =>
    `<h2 ${H2}>${title}</h2><table style="width: 100%; border-collapse: collapse; margin: 0 0 8px;"><tbody>${rows.join('')}</tbody></table>`;
  const patient = [
    row('Name', r.patient_name),
    row('NRIC/FIN', r.patient_uin),
    row('Date of birth', r.patient_dob),
    row('Sex', r.patient_gender),
    row('Nationality', r.patient_nationality),
    row('Phone', r.patient_phone_number),
    row('Residential status', r.patient_residential_status),
  ];
  const referrer = [
    row('Name', r.referrer_name),
    row('MCR', r.referrer_id),
    row('Email', r.referrer_email),
    row('Contact number', r.referrer_contact_number),
    row('Institution', r.sender_name),
  ];
  const referral = [
    row('Service', r.offering_name),
    row('Specialty', r.specialty),
    row('Provider', r.provider_name),
    row('Urgency', r.is_urgent ? 'Urgent' : 'Routine referral'),
    row('Submitted', r.submitted_at?.toISOString() ?? null),
  ];
  const timeline = [
    row('Created', `${r.sender_name} created the referral.`),
    row('Submitted', `${r.sender_name} submitted the referral to ${r.provider_name}.`),
    row('Forwarded', `Forwarded to the national EHR as version ${r.version}.`),
  ];
  const sender = [
    row('Institution', r.sender_name),
    row('Referring doctor', r.referrer_name),
    row('Reply to', r.referrer_email),
  ];
  const clinical = `<h2 ${H2}>Clinical information</h2><p ${SPAN}>${escapeHtml(r.clinical_info ?? '')}</p>`;
  const section = (name: string) =>
    `<section data-template="${escapeHtml(name)}" style="margin: 0 0 32px;">` +
    `<div style="margin: 0 0 28px; padding: 4px 16px 8px; border: 1px solid #d0d7de; border-radius: 6px; background: #f6f8fa;">` +
    table('Patient', patient) +
    table('Referrer', referrer) +
    table('Referral', referral) +
    clinical +
    table('Sender', sender) +
    table('Timeline', timeline) +
    '</div></section>';
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8" />' +
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'" />` +
    `<title>${escapeHtml(r.form_type)} – Referral ${r.id}</title></head>` +
    '<body style="margin: 0; padding: 24px; background: #ffffff; color: #1b1f24; font-family: system-ui, sans-serif; font-size: 14px; line-height: 1.45;">' +
    `<main style="max-width: 800px; margin: 0 auto;"><h1>${escapeHtml(r.form_type)}</h1>` +
    `<p>To ${escapeHtml(r.specialty)}, ${escapeHtml(r.provider_name)}</p>` +
    r.form_type
      .split('|')
      .map((name) => section(name))
      .join('') +
    '</main></body></html>'
  );
}

/** The EHR request body (refhub's wire format, src/domain/forwarding/forward-request.ts) of one referral. */
export function bareForwardBody(r: BareReferral, html: string): Buffer {
  return Buffer.from(
    JSON.stringify({
      messageId: `${r.id}.v${r.version}`,
      referralId: r.id,
      version: r.version,
      patient: { uin: r.patient_uin, name: r.patient_name, dob: r.patient_dob },
      referralRequest: {
        specialty: { code: r.specialty_code, textDescription: r.specialty },
        type: { textDescription: r.form_type },
      },
      notesItem: { text: html },
    }),
  );
}

async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

function reply(response: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

const SUBMIT_PATH = /^\/referrals\/([0-9a-f-]{36})\/submit$/;

function submitServer(pool: pg.Pool): http.Server {
  return http.createServer((request, response) => {
    const match = request.method === 'POST' ? SUBMIT_PATH.exec(request.url ?? '') : null;
    if (match?.[1] === undefined) {
      request.resume();
      reply(response, 404, { code: 'not_found' });
      return;
    }
    const id = match[1];
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      void (async () => {
        try {
          // The acting party, as a client sends it; the bare pipeline does not check it.
          JSON.parse(Buffer.concat(chunks).toString() || '{}');
        } catch {
          reply(response, 400, { code: 'malformed_json' });
          return;
        }
        try {
          const version = await inTransaction(pool, async (client) => {
            const { rows } = await client.query<{ version: number }>(
              `UPDATE bare_referrals SET status = 'submitted', version = version + 1, ehr_state = 'queued',
                 submitted_at = now(), updated_at = now()
               WHERE id = $1 AND status = 'draft' RETURNING version`,
              [id],
            );
            const row = rows[0];
            if (row === undefined) return undefined;
            await client.query('INSERT INTO bare_outbox (referral_id, version) VALUES ($1, $2)', [
              id,
              row.version,
            ]);
            return row.version;
          });
          if (version === undefined) reply(response, 409, { code: 'not_a_draft' });
          else reply(response, 200, { id, status: 'submitted', version });
        } catch {
          reply(response, 500, { code: 'internal' });
        }
      })();
    });
  });
}

interface BareJob {
  readonly referralId: string;
  readonly version: number;
}

function startRelay(pool: pg.Pool, queue: Queue<BareJob>) {
  const state = { running: true };
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  const drainOnce = () =>
    inTransaction(pool, async (client) => {
      const { rows } = await client.query<{ id: string; referral_id: string; version: number }>(
        'SELECT id, referral_id, version FROM bare_outbox ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED',
        [RELAY_BATCH],
      );
      if (rows.length === 0) return 0;
      await queue.addBulk(
        rows.map((r) => ({
          name: 'forward',
          data: { referralId: r.referral_id, version: r.version },
          opts: { jobId: `${r.referral_id}.v${r.version}` },
        })),
      );
      await client.query('DELETE FROM bare_outbox WHERE id = ANY($1::bigint[])', [rows.map((r) => r.id)]);
      return rows.length;
    });
  const loop = (async () => {
    while (state.running) {
      let claimed = 0;
      try {
        claimed = await drainOnce();
      } catch (error) {
        process.stderr.write(`bare relay: ${(error as Error).message}\n`);
      }
      if (claimed < RELAY_BATCH) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, RELAY_IDLE_MS);
        });
      }
    }
  })();
  return {
    async stop() {
      state.running = false;
      clearTimeout(timer);
      wake?.();
      await loop;
    },
  };
}

function startWorker(pool: pg.Pool, connection: Redis, prefix: string, ehrUrl: string) {
  const url = new URL(ehrUrl);
  const ehr = new UndiciPool(url.origin, { connections: WORKER_CONCURRENCY });
  const worker = new Worker<BareJob>(
    BARE_QUEUE,
    async (job: Job<BareJob>) => {
      const { rows } = await pool.query<BareReferral>(
        `SELECT id, version, sender_name, provider_name, offering_name, specialty, specialty_code, form_type,
           patient_uin, patient_name, to_char(patient_dob, 'YYYY-MM-DD') AS patient_dob, patient_gender,
           patient_nationality, patient_phone_number, patient_residential_status, referrer_id,
           referrer_name, referrer_email, referrer_contact_number, clinical_info, is_urgent, submitted_at
         FROM bare_referrals WHERE id = $1`,
        [job.data.referralId],
      );
      const referral = rows[0];
      if (referral === undefined) return 'gone';
      const html = renderBareForm(referral);
      const body = bareForwardBody(referral, html);
      const digest = createHash('sha256').update(body).digest('base64');
      const messageId = `${referral.id}.v${referral.version}`;
      const response = await ehr.request({
        method: 'POST',
        path: url.pathname,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'idempotency-key': messageId,
          'content-digest': `sha-256=:${digest}:`,
        },
        body,
      });
      const answer = (await response.body.json().catch(() => ({}))) as { reference?: string };
      if (response.statusCode >= 300) throw new Error(`EHR answered ${response.statusCode}`);
      const sha256 = createHash('sha256').update(html).digest('hex');
      await inTransaction(pool, async (client) => {
        await client.query(
          `INSERT INTO bare_ledger (referral_id, message_id, http_status, ehr_reference, sha256, attempted_at)
           VALUES ($1, $2, $3, $4, $5, now())`,
          [referral.id, messageId, response.statusCode, answer.reference ?? null, sha256],
        );
        await client.query(
          `UPDATE bare_referrals SET ehr_state = 'forwarded', ehr_forwarded_version = $2 WHERE id = $1`,
          [referral.id, referral.version],
        );
      });
      return 'delivered';
    },
    { connection, prefix, concurrency: WORKER_CONCURRENCY },
  );
  worker.on('error', (error) => process.stderr.write(`bare worker: ${error.message}\n`));
  return {
    worker,
    async stop() {
      await worker.close();
      await ehr.close();
    },
  };
}

async function main(): Promise<void> {
  const databaseUrl = process.env.BARE_DATABASE_URL;
  const ehrUrl = process.env.EHR_URL;
  if (databaseUrl === undefined || ehrUrl === undefined) throw new Error('set BARE_DATABASE_URL and EHR_URL');
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = process.env.BARE_QUEUE_PREFIX ?? '{bare}';
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: POOL_SIZE,
    application_name: 'bare-pipeline',
  });
  pool.on('error', () => undefined);
  const producer = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const workerConnection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue<BareJob>(BARE_QUEUE, {
    connection: producer,
    prefix,
    defaultJobOptions: { attempts: 5, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true },
  });
  const relay = startRelay(pool, queue);
  const worker = startWorker(pool, workerConnection, prefix, ehrUrl);
  await worker.worker.waitUntilReady();
  const server = submitServer(pool);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void relay
      .stop()
      .then(() => worker.stop())
      .then(() => queue.close())
      .then(() => pool.end())
      .finally(() => {
        producer.disconnect();
        workerConnection.disconnect();
        process.exit(0);
      });
  });
  process.stdout.write(`bare pipeline listening on http://127.0.0.1:${address.port}\n`);
}

if (import.meta.main) await main();
