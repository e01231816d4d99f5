// The embedded default under mixed work, as `npm start` runs it: `refhub all` on PGlite in a fresh
// DATA_DIR, with the sandbox EHR in the same process. Clients upsert links, open them, read and list
// referrals with their forms, submit, add notes and files, accept, read the ledger, the event feed
// and the patient's access report, while the data keys lapse and are looked up again every refresh
// interval and the audit sealer chains the trail. It goes on until the process has looked its keys
// up several times, then until every submitted referral is forwarded. Every request must answer, as
// it should, within the process's own request timeout; the process then stops promptly, and its
// data directory holds the trail, sealed.
//
// SOAK_REFRESH_SECONDS (1) and SOAK_REFRESHES (5) set how long: `SOAK_REFRESH_SECONDS=30
// SOAK_REFRESHES=10` is a five-minute soak at the default refresh interval (docs/testing.md).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/db/database.ts';
import { CANARY } from '../../support/fixtures/patients.ts';
import { startRefhubProcess, type WorkerProcess } from '../../support/worker-process.ts';

const REFRESH_SECONDS = Number(process.env.SOAK_REFRESH_SECONDS ?? 1);
const REFRESHES = Number(process.env.SOAK_REFRESHES ?? 5);
const REQUEST_TIMEOUT_SECONDS = 10;
const CLIENTS = 3;
const SENDER = { institutionIdType: 'hci', institutionId: 'S1234A' } as const;
const PROVIDER = { institutionIdType: 'hci', institutionId: 'S9001Z' } as const;
const REQUESTER = 'dr.lim@bukittimah.example';

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

describe('the embedded default under mixed work', () => {
  let dataDir: string;
  let server: WorkerProcess;
  let keys: Record<string, string>;
  const failures: string[] = [];
  let answered = 0;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-soak-'));
    server = await startRefhubProcess('all', {
      databaseUrl: undefined,
      // As `npm start` runs it: the queues in the embedded database too.
      redisUrl: undefined,
      queuePrefix: `soak-${randomUUID()}`,
      env: {
        DATA_DIR: dataDir,
        PUBLIC_URL: 'http://127.0.0.1',
        LOG_LEVEL: 'info',
        DATA_KEY_REFRESH_SECONDS: String(REFRESH_SECONDS),
        AUDIT_SEAL_INTERVAL_SECONDS: '1',
        HTTP_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_SECONDS),
        RATE_LIMIT_PER_MINUTE: '1000000',
      },
      startTimeoutMs: 120_000,
    });
    // Each line of the key file: the label, the key and what it is for, tab-separated.
    keys = Object.fromEntries(
      fs
        .readFileSync(path.join(dataDir, 'demo-keys.txt'), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('demo-'))
        .map((line) => line.split('\t').slice(0, 2)),
    ) as Record<string, string>;
  }, 150_000);
  afterAll(async () => {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** One request, answered within the process's own request timeout (and a margin), or a failure. */
  async function send(
    what: string,
    key: string,
    method: 'GET' | 'POST',
    url: string,
    expected: readonly number[],
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer | undefined> {
    try {
      const res = await request(`${server.address}${url}`, {
        method,
        headers: {
          authorization: `ApiKey ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
        headersTimeout: (REQUEST_TIMEOUT_SECONDS + 5) * 1000,
        bodyTimeout: (REQUEST_TIMEOUT_SECONDS + 5) * 1000,
      });
      const text = await res.body.text();
      if (!expected.includes(res.statusCode)) {
        failures.push(`${what}: HTTP ${res.statusCode} ${text.slice(0, 300)}`);
        return undefined;
      }
      answered += 1;
      return { status: res.statusCode, body: text, headers: res.headers };
    } catch (error) {
      failures.push(`${what}: ${(error as Error).message}`);
      return undefined;
    }
  }

  async function keyLoads(): Promise<number> {
    const res = await request(`${server.address}/metrics`, {
      headers: { authorization: `ApiKey ${keys['demo-ops'] ?? ''}` },
    });
    const text = await res.body.text();
    return Number(/^refhub_data_key_loads_total (\d+)/m.exec(text)?.[1] ?? 0);
  }

  const senderQuery = new URLSearchParams({ ...SENDER, requesterIdentifier: REQUESTER }).toString();
  const providerQuery = new URLSearchParams({
    ...PROVIDER,
    requesterIdentifier: 'dr.ong@cgh.example',
  }).toString();

  /** One clinic's round: a referral from link to acceptance, with reads of everything between. */
  async function round(n: number, submitted: string[]): Promise<void> {
    const sender = keys['demo-sender'] ?? '';
    const provider = keys['demo-provider'] ?? '';
    const link = await send('link upsert', sender, 'POST', '/api/v1/links/upsert', [200, 201], {
      ...SENDER,
      requesterIdentifier: REQUESTER,
      offeringId: 'cgh-gastro',
      patientUin: CANARY.patientUin,
      patientName: CANARY.patientName,
      dob: '1960-02-29',
      nationality: 'SG',
      clinicalInfo: `Dyspepsia for 3 months (${n}).`,
    });
    if (link === undefined) return;
    const { referralId, url } = JSON.parse(link.body) as { referralId: string; url: string };
    // The clinician opens the one-time link: its redemption is a transaction of its own.
    const opened = await request(`${server.address}${new URL(url).pathname}`, { method: 'GET' });
    await opened.body.text();
    if (![200, 303].includes(opened.statusCode)) failures.push(`link: HTTP ${opened.statusCode}`);
    const referral = `/api/v1/referrals/${referralId}`;
    await send('file', sender, 'POST', `${referral}/attachments?${senderQuery}`, [201], `Letter ${n}\n`, {
      'content-type': 'text/plain',
      'content-disposition': 'attachment; filename="letter.txt"',
    });
    await send('submit', sender, 'POST', `${referral}/submit`, [200], SENDER);
    submitted.push(referralId);
    await send('read with form', sender, 'GET', `${referral}?${senderQuery}&additionalField=ehrForm`, [200]);
    await send('ledger', sender, 'GET', `${referral}/ehr-submissions?${senderQuery}`, [200]);
    await send('note', sender, 'POST', `${referral}/notes`, [201], {
      ...SENDER,
      requesterIdentifier: REQUESTER,
      content: `Please see soon (${n}).`,
    });
    await send('list', sender, 'GET', `/api/v1/institutions/hci/S1234A/referrals?pageSize=20`, [200]);
    await send('accept', provider, 'POST', `${referral}/accept`, [200], PROVIDER);
    await send('provider read', provider, 'GET', `${referral}?${providerQuery}`, [200]);
    await send('events', sender, 'GET', `/api/v1/institutions/hci/S1234A/events?limit=50`, [200]);
    await send(
      'access report',
      sender,
      'GET',
      `/api/v1/patients/access-report?${senderQuery}&patientUin=${CANARY.patientUin}`,
      [200],
    );
  }

  it('answers every request through several refresh intervals, forwards everything and stops promptly', async () => {
    const submitted: string[] = [];
    const began = Date.now();
    const target = (await keyLoads()) + REFRESHES;
    let n = 0;
    const client = async () => {
      while ((await keyLoads()) < target && failures.length === 0) await round(n++, submitted);
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
    expect(failures).toEqual([]);
    expect(submitted.length).toBeGreaterThan(0);

    // Every submitted referral reaches the sandbox EHR: the ledger of each says delivered.
    const sender = keys['demo-sender'] ?? '';
    for (const id of submitted) {
      await expect
        .poll(
          async () => {
            const ledger = await send(
              'ledger',
              sender,
              'GET',
              `/api/v1/referrals/${id}/ehr-submissions?${senderQuery}`,
              [200],
            );
            const attempts =
              (JSON.parse(ledger?.body ?? '{}') as { data?: { outcome: string }[] }).data ?? [];
            return attempts.some((a) => a.outcome === 'delivered');
          },
          { timeout: 60_000, interval: 250 },
        )
        .toBe(true);
    }
    expect(failures).toEqual([]);
    console.log(
      `[soak] ${answered} requests answered by ${CLIENTS} clients over ${REFRESHES} key refreshes of ` +
        `${REFRESH_SECONDS} s (${Math.round((Date.now() - began) / 1000)} s); ${submitted.length} referrals ` +
        'forwarded',
    );

    // It stops within its grace period, not after waiting it out.
    const exit = await server.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(server.output().stdout).toMatch(/"msg":"stopped"/);
    expect(server.output().stdout + server.output().stderr).not.toContain(CANARY.patientName);

    // The trail it kept is chained, under checkpoints.
    const store = await openStore({ engine: 'pglite', dataDir, command: 'test' });
    try {
      const audit = await store.db
        .selectFrom('audit_events')
        .select((eb) => eb.fn.count<string>('row_hash').as('sealed'))
        .executeTakeFirstOrThrow();
      expect(Number(audit.sealed)).toBeGreaterThan(0);
      const checkpoints = await store.db
        .selectFrom('audit_checkpoints')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(checkpoints.n)).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  }, 600_000);
});
