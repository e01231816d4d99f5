// The bare forwarding pipeline, the baseline of the forward and burst scenarios: the least code that
// does the durable work refhub does to take a submit and deliver the referral's form to the EHR, with
// nothing of refhub's code: the same rows written per submit and per forward, the form's bytes kept,
// the patient data sealed and opened.
//
//   node bench/bare-pipeline.ts      (BARE_DATABASE_URL, REDIS_URL, BARE_QUEUE_PREFIX, EHR_URL)
//
// One process, as `refhub all` is, with three parts:
//
// - a node:http server: `POST /referrals/{id}/submit` runs one statement that moves a draft to
//   submitted (a compare-and-set on its state that bumps its version) and writes what refhub's submit
//   writes: a timeline row (its sentence sealed), an event row, an audit row, two link tokens and two
//   outbox rows (the forward and the reminder schedule);
// - a relay: in one transaction, claims up to 100 outbox rows (`FOR UPDATE SKIP LOCKED`), enters each
//   forward in the clinic's backlog (a row, deleted as its job starts), enqueues the forwards and the
//   reminders with one `addBulk` (the message ID as job ID) and deletes the rows; it polls every
//   200 ms when idle, and claims again at once after a full batch, as refhub's relay does;
// - a BullMQ worker at concurrency 16 that takes the forward out of the backlog, reads the referral's
//   row, opens its sealed patient data, renders about 19 KiB of HTML with every value escaped, POSTs
//   it to the EHR (the same wire format and `Content-Digest` as refhub, through an undici pool) and,
//   in one statement, records a ledger row, the form's bytes, the forwarded state, a timeline row
//   (sealed), an event row and an audit row;
// - an audit sealer that hashes each audit row once, a second after it was written, as refhub's
//   sealer updates each of its audit rows once.
//
// Its tables (`bare_referrals`, `bare_outbox`, `bare_ledger` and the rest) live in a database of their
// own, seeded with drafts by `createBareSchema` and `seedBareDrafts`.
import { createCipheriv, createDecipheriv, createHash, randomBytes, randomUUID } from 'node:crypto';
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
  patient bytea NOT NULL,
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
  topic text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE bare_timeline (
  seq bigserial PRIMARY KEY,
  referral_id uuid NOT NULL REFERENCES bare_referrals (id),
  type text NOT NULL,
  sentence bytea NOT NULL,
  produced_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bare_timeline_referral ON bare_timeline (referral_id, seq);
CREATE TABLE bare_events (
  seq bigserial PRIMARY KEY,
  referral_id uuid NOT NULL REFERENCES bare_referrals (id),
  version integer NOT NULL,
  type text NOT NULL,
  occurred_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE bare_audit (
  seq bigserial PRIMARY KEY,
  referral_id uuid NOT NULL,
  action text NOT NULL,
  occurred_at timestamptz NOT NULL DEFAULT now(),
  row_hash text,
  sealed_at timestamptz
);
CREATE INDEX bare_audit_unsealed ON bare_audit (seq) WHERE sealed_at IS NULL;
CREATE TABLE bare_link_tokens (
  token_hash text PRIMARY KEY,
  referral_id uuid NOT NULL REFERENCES bare_referrals (id),
  action text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE TABLE bare_backlog (
  job_id text PRIMARY KEY,
  added_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE bare_forms (
  message_id text PRIMARY KEY,
  referral_id uuid NOT NULL REFERENCES bare_referrals (id),
  sha256 text NOT NULL,
  html text NOT NULL
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
 * The key the bare pipeline seals patient data and timeline sentences with (AES-256-GCM), fixed so that
 * the benchmark's seeding and the pipeline's process agree; a benchmark's data is made up.
 */
const SEAL_KEY = createHash('sha256').update('bare pipeline sealing key').digest();

/** Seals `plain` as refhub seals a value: a fresh nonce, the ciphertext and its tag. */
export function sealBare(plain: string): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', SEAL_KEY, nonce);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, cipher.getAuthTag(), body]);
}

/** Opens a value `sealBare` sealed; throws when it was altered. */
export function openBare(sealed: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', SEAL_KEY, sealed.subarray(0, 12));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
}

/** The patient's part of a bare referral, sealed as one value as refhub seals a referral's patient data. */
interface BarePatient {
  readonly uin: string;
  readonly name: string;
  readonly dob: string;
  readonly gender: string;
  readonly nationality: string;
  readonly phoneNumber: string;
  readonly residentialStatus: string;
}

/**
 * Inserts `count` drafts, 2,000 to a statement, with the fields of refhub's typical referral (the
 * patient varies by row, sealed) and returns their IDs in insertion order. `offset` varies the patients
 * of a second batch.
 */
export async function seedBareDrafts(client: pg.ClientBase, count: number, offset = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 2000) {
    const batch = Array.from({ length: Math.min(2000, count - start) }, (_, k) => offset + start + k);
    const rowIds = batch.map(() => randomUUID());
    const patients = batch.map((i) =>
      sealBare(
        JSON.stringify({
          uin: `S${String(1000000 + (i % 9000000)).padStart(7, '0')}D`,
          name: `Tan Ah Kow ${i}`,
          dob: '1960-02-29',
          gender: i % 2 === 0 ? 'Male' : 'Female',
          nationality: 'SG',
          phoneNumber: '91234567',
          residentialStatus: 'SC',
        } satisfies BarePatient),
      ),
    );
    await client.query(
      `INSERT INTO bare_referrals (id, sender_name, provider_name, offering_name, specialty, specialty_code,
         form_type, patient, referrer_id, referrer_name, referrer_email, referrer_contact_number,
         clinical_info, is_urgent)
       SELECT t.id, 'Tampines Medical Centre', 'Central General Hospital',
         'Gastroenterology Clinic', 'Gastroenterology', 'GASTRO', 'Specialist Referral|Patient Summary',
         t.patient, 'M12345A', 'Dr Lim Mei Ling', 'mei.ling@bukittimah.example', '61234567',
         E'Dyspepsia for 3 months, worse after meals. No weight loss, no dysphagia, no GI bleeding.\\n'
           || E'H. pylori breath test negative. Trial of PPI for 8 weeks with partial response.\\n'
           || 'Please assess for upper endoscopy.',
         t.i % 10 = 0
       FROM unnest($1::uuid[], $2::bytea[], $3::int[]) WITH ORDINALITY AS t(id, patient, i, n)
       ORDER BY t.n`,
      [rowIds, patients, batch],
    );
    ids.push(...rowIds);
  }
  return ids;
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
const SUBMITTED_SENTENCE = 'Tampines Medical Centre submitted the referral to Central General Hospital.';
const FORWARDED_SENTENCE = 'The referral was forwarded to the national EHR.';

/** A link token's hash, as stored: the token itself goes to the person it is for. */
function tokenHash(): string {
  return createHash('sha256').update(randomBytes(32)).digest('hex');
}

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
          // One statement, as refhub's submit is: the compare-and-set and everything it writes.
          const { rows } = await pool.query<{ version: number }>(
            `WITH r AS (
               UPDATE bare_referrals SET status = 'submitted', version = version + 1, ehr_state = 'queued',
                 submitted_at = now(), updated_at = now()
               WHERE id = $1 AND status = 'draft' RETURNING id, version
             ), t AS (
               INSERT INTO bare_timeline (referral_id, type, sentence) SELECT id, 'submitted', $2 FROM r
             ), e AS (
               INSERT INTO bare_events (referral_id, version, type) SELECT id, version, 'submitted' FROM r
             ), a AS (
               INSERT INTO bare_audit (referral_id, action) SELECT id, 'submit' FROM r
             ), l AS (
               INSERT INTO bare_link_tokens (token_hash, referral_id, action, expires_at)
               SELECT k.hash, r.id, k.action, now() + interval '30 days'
               FROM r, unnest($3::text[], ARRAY['respond', 'view']) AS k(hash, action)
             ), o AS (
               INSERT INTO bare_outbox (referral_id, version, topic)
               SELECT r.id, r.version, topic FROM r, unnest(ARRAY['forward', 'reminders']) AS topic
             )
             SELECT version FROM r`,
            [id, sealBare(SUBMITTED_SENTENCE), [tokenHash(), tokenHash()]],
          );
          const version = rows[0]?.version;
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
      const { rows } = await client.query<{
        id: string;
        referral_id: string;
        version: number;
        topic: string;
      }>(
        'SELECT id, referral_id, version, topic FROM bare_outbox ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED',
        [RELAY_BATCH],
      );
      if (rows.length === 0) return 0;
      const forwards = rows.filter((r) => r.topic === 'forward');
      // The clinic's backlog of forwards: a row each, deleted as its job starts, so committed before
      // the job is added (as refhub ranks a forward before adding its job).
      await pool.query('INSERT INTO bare_backlog (job_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING', [
        forwards.map((r) => `${r.referral_id}.v${r.version}`),
      ]);
      await queue.addBulk(
        rows.map((r) =>
          r.topic === 'forward'
            ? {
                name: 'forward',
                data: { referralId: r.referral_id, version: r.version },
                opts: { jobId: `${r.referral_id}.v${r.version}` },
              }
            : {
                // The reminder schedule: a job due in a week, replaced by the referral's next one.
                name: 'reminder',
                data: { referralId: r.referral_id, version: r.version },
                opts: { jobId: `${r.referral_id}.reminder`, delay: 7 * 24 * 3600_000 },
              },
        ),
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
      if (job.name !== 'forward') return 'reminded';
      const messageId = `${job.data.referralId}.v${job.data.version}`;
      await pool.query('DELETE FROM bare_backlog WHERE job_id = $1', [messageId]);
      const { rows } = await pool.query<Omit<BareReferral, `patient_${string}`> & { patient: Buffer }>(
        `SELECT id, version, sender_name, provider_name, offering_name, specialty, specialty_code, form_type,
           patient, referrer_id, referrer_name, referrer_email, referrer_contact_number, clinical_info,
           is_urgent, submitted_at
         FROM bare_referrals WHERE id = $1`,
        [job.data.referralId],
      );
      const row = rows[0];
      if (row === undefined) return 'gone';
      const patient = JSON.parse(openBare(row.patient)) as BarePatient;
      const referral: BareReferral = {
        ...row,
        patient_uin: patient.uin,
        patient_name: patient.name,
        patient_dob: patient.dob,
        patient_gender: patient.gender,
        patient_nationality: patient.nationality,
        patient_phone_number: patient.phoneNumber,
        patient_residential_status: patient.residentialStatus,
      };
      const html = renderBareForm(referral);
      const body = bareForwardBody(referral, html);
      const digest = createHash('sha256').update(body).digest('base64');
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
      // One statement, as refhub records an attempt: the ledger row, the form's bytes, the state and
      // the timeline, event and audit rows.
      await pool.query(
        `WITH l AS (
           INSERT INTO bare_ledger (referral_id, message_id, http_status, ehr_reference, sha256, attempted_at)
           VALUES ($1, $2, $3, $4, $5, now())
         ), f AS (
           INSERT INTO bare_forms (message_id, referral_id, sha256, html) VALUES ($2, $1, $5, $6)
         ), t AS (
           INSERT INTO bare_timeline (referral_id, type, sentence) VALUES ($1, 'forwarded', $8)
         ), e AS (
           INSERT INTO bare_events (referral_id, version, type) VALUES ($1, $7, 'forwarded')
         ), a AS (
           INSERT INTO bare_audit (referral_id, action) VALUES ($1, 'forward')
         )
         UPDATE bare_referrals SET ehr_state = 'forwarded', ehr_forwarded_version = $7 WHERE id = $1`,
        [
          referral.id,
          messageId,
          response.statusCode,
          answer.reference ?? null,
          sha256,
          html,
          referral.version,
          sealBare(FORWARDED_SENTENCE),
        ],
      );
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

/**
 * Hashes each audit row once, a second after it was written, up to 500 at a time: the one update per
 * audit row refhub's sealer makes.
 */
function startSealer(pool: pg.Pool) {
  const state = { running: true };
  let timer: NodeJS.Timeout | undefined;
  const loop = (async () => {
    while (state.running) {
      try {
        await pool.query(
          `UPDATE bare_audit SET sealed_at = now(),
             row_hash = encode(sha256(convert_to(seq::text || referral_id::text || action, 'UTF8')), 'hex')
           WHERE seq = ANY (ARRAY(SELECT seq FROM bare_audit WHERE sealed_at IS NULL
                                  AND occurred_at < now() - interval '1 second' ORDER BY seq LIMIT 500))`,
        );
      } catch (error) {
        process.stderr.write(`bare sealer: ${(error as Error).message}\n`);
      }
      await new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 1000);
      });
    }
  })();
  return {
    async stop() {
      state.running = false;
      clearTimeout(timer);
      await loop;
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
    // Finished jobs kept as refhub keeps them in Redis (src/queue/job-settings.ts).
    defaultJobOptions: {
      attempts: 5,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: { age: 7 * 24 * 3600, count: 10_000 },
      removeOnFail: { age: 30 * 24 * 3600, count: 50_000 },
    },
  });
  const relay = startRelay(pool, queue);
  const worker = startWorker(pool, workerConnection, prefix, ehrUrl);
  const sealer = startSealer(pool);
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
      .then(() => sealer.stop())
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
