// A dump of the database holds no patient data. The canary patient goes through everything that
// stores patient data: a keyed create (its stored response), edits, notes, an attachment whose name
// and bytes carry the canary, a forward to the EHR (the kept form), a request to act, an
// appointment, the provider's outcome with its summary, and another referral's cancel note, each of
// the words people typed naming the patient (the timeline quotes them; the event feed does not).
// Then `pg_dump` writes the whole database, as a backup would, and none of the canary's values is
// in it, in clear text or as the hex of bytes; the API still returns them all.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createBridgeApp,
  databaseUrlOf,
  eventually,
  startEhr,
  type BridgeApp,
} from '../../support/bridge.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call } from '../../support/scenarios.ts';

/** A file that names the canary patient, in its name and in its bytes. */
const CANARY_FILE = {
  name: `${CANARY.patientName} ECG.txt`,
  bytes: Buffer.from(
    `ECG of ${CANARY.patientName} (${CANARY.patientUin}): sinus rhythm, Canaryquokka file marker\n`,
  ),
};
const MARKERS = [...CANARY_MARKERS, CANARY.clinicalInfo, 'Canaryquokka file marker'];

/** The whole database as `pg_dump` writes it (plain SQL, data included). */
function pgDump(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('pg_dump', ['--no-owner', '--dbname', url], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`pg_dump exited ${code}: ${err}`));
    });
  });
}

describe('a dump of the database', () => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  let referralId: string;

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp('postgres', ehr);
    t.startBackground();
    const created = await t.request(t.sender, {
      method: 'POST',
      url: '/api/v1/referrals',
      headers: { 'idempotency-key': 'canary-create-1' },
      payload: { ...t.sender.institution, offeringId: 'cgh-gastro', ...CANARY, patientGender: 'Male' },
    });
    expect(created.statusCode, created.body).toBe(201);
    referralId = created.json<{ id: string }>().id;
    const url = `/api/v1/referrals/${referralId}`;
    await call(t, t.sender, 'PATCH', url, { referrerName: 'Dr Lim Mei Ling', nationality: 'SG' });
    await call(t, t.sender, 'POST', `${url}/notes`, { content: CANARY.clinicalInfo }, 201);
    const uploaded = await t.request(t.sender, {
      method: 'POST',
      url: `${url}/attachments`,
      query: { ...t.sender.institution, requesterIdentifier: 'dr.tan@example.org' },
      headers: {
        'content-type': 'application/octet-stream',
        'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(CANARY_FILE.name)}`,
      },
      payload: CANARY_FILE.bytes,
    });
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    await call(t, t.sender, 'POST', `${url}/submit`, {});
    await eventually('the forward to the EHR', async () =>
      (await ehr.deliveries({ referralId })).length > 0 ? true : undefined,
    );
    await call(t, t.provider, 'POST', `${url}/request-action`, {
      reason: `Please confirm ${CANARY.patientName}'s phone number ${CANARY.patientPhoneNumber}`,
    });
    await call(t, t.sender, 'POST', `${url}/submit`, {});
    await call(t, t.provider, 'POST', `${url}/accept`, {});
    await call(t, t.provider, 'PUT', `${url}/appointments/appt-1`, {
      status: 'scheduled',
      startAt: '2030-01-15T01:30:00.000Z',
      location: `Home visit to ${CANARY.patientName}`,
    });
    await call(t, t.provider, 'POST', `${url}/complete`, {
      outcomeCode: 'seen-follow-up',
      summary: `${CANARY.patientName} (${CANARY.patientUin}): ${CANARY.clinicalInfo}`,
    });
    const other = (await call(
      t,
      t.sender,
      'POST',
      '/api/v1/referrals',
      { offeringId: 'cgh-gastro', ...CANARY, patientGender: 'Male' },
      201,
    )) as { id: string };
    await call(t, t.sender, 'POST', `/api/v1/referrals/${other.id}/submit`, {});
    await call(t, t.sender, 'POST', `/api/v1/referrals/${other.id}/cancel`, {
      cancelNote: `${CANARY.patientName} (${CANARY.patientUin}) recovered`,
    });
  });
  afterAll(async () => {
    await t.close();
    await ehr.stop();
  });

  it('holds every part of the referral, and no value of the canary patient', async () => {
    // Each table that holds patient data has the canary's rows (sealed), so the dump is no empty one.
    for (const table of [
      'referrals',
      'notes',
      'appointments',
      'referral_outcomes',
      'attachments',
      'attachment_contents',
      'ehr_forms',
      'idempotency_keys',
      'timeline_events',
      'referral_events',
    ] as const) {
      const rows = await t.ctx.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(rows.n), table).toBeGreaterThan(0);
    }
    const dump = await pgDump(await databaseUrlOf(t));
    expect(dump).toContain('COPY public.referrals');
    expect(dump).toContain(referralId);
    // Where a marker is, if anywhere: the table whose COPY section holds it.
    const tableHolding = (text: string) => {
      const at = dump.indexOf(text);
      if (at === -1) return undefined;
      return /COPY (\S+)/.exec(dump.slice(dump.lastIndexOf('\nCOPY ', at), at))?.[1] ?? 'the schema';
    };
    for (const marker of MARKERS) {
      expect(tableHolding(marker), `the dump holds "${marker}"`).toBeUndefined();
      expect(
        tableHolding(Buffer.from(marker).toString('hex')),
        `the dump holds "${marker}" as bytes`,
      ).toBeUndefined();
    }

    // Nothing was lost: the API gives every value back.
    const read = (await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${referralId}?${new URLSearchParams({ ...t.sender.institution, requesterIdentifier: 'dr.tan@example.org' }).toString()}`,
    )) as {
      patient: { name: string; uin: string };
      clinicalInfo: string;
      notes: { content: string }[];
      outcome: { summary: string };
      timelineEvents: { description: string }[];
    };
    expect(read.patient).toMatchObject({ name: CANARY.patientName, uin: CANARY.patientUin });
    expect(read.clinicalInfo).toBe(CANARY.clinicalInfo);
    expect(read.notes.map((n) => n.content)).toEqual([CANARY.clinicalInfo]);
    expect(read.outcome.summary).toContain(CANARY.patientName);
    expect(read.timelineEvents.map((e) => e.description)).toEqual(
      expect.arrayContaining([
        `Central General Hospital asked the sender to act on the referral: Please confirm ${CANARY.patientName}'s phone number ${CANARY.patientPhoneNumber}`,
        `Central General Hospital scheduled an appointment for Tue 15 Jan 2030, 09:30 SGT at Home visit to ${CANARY.patientName}.`,
      ]),
    );
  });
});
