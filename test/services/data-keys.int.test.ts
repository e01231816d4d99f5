// Patient data sealed field by field, checked from the database's side on both engines: every column
// that holds patient data holds ciphertext (SQL finds no plaintext, and no column of any table holds
// the canary patient), data written before encryption is sealed by the sweep (the timeline's sentences
// too, as a start after migration 0019 finds them), and a rotation while requests keep writing loses
// and corrupts nothing.
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealExistingData } from '../../src/composition/context.ts';
import {
  openDataKeys,
  SEALED_COLUMNS,
  type SealedTable,
} from '../../src/db/data-keys/data-keys.repository.ts';
import { up as migration0019 } from '../../src/db/migrations/0019-events-without-free-text.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { localKeyRing, sealedUnderPattern } from '../../src/domain/data-keys.ts';
import type { Logger } from '../../src/logger.ts';
import { createStores } from '../../src/db/stores.ts';
import { createDataKeyRotation, type SweepProgress } from '../../src/services/data-keys.service.ts';
import { ENGINES } from '../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../support/fixtures/patients.ts';
import { dataKeysSetting, testKeyEncryptionKey } from '../support/data-keys.ts';
import { call, createDraft, referralIn } from '../support/scenarios.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const TABLES = Object.keys(SEALED_COLUMNS) as SealedTable[];
/** Short enough for a test; the sweep's last pass waits it out after a new key is made. */
const REFRESH_MS = 500;

describe.each(ENGINES)('patient data sealed field by field on %s', (engine) => {
  const kek = testKeyEncryptionKey('kek-1');
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine, {
      env: { DATA_KEYS: dataKeysSetting(kek) },
      dataKeys: { refreshMs: REFRESH_MS },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  const query = (who = t.sender) =>
    new URLSearchParams({ ...who.institution, requesterIdentifier: 'dr.tan@example.org' }).toString();
  const read = (id: string) => call(t, t.sender, 'GET', `/api/v1/referrals/${id}?${query()}`);
  const byPatient = async (uin: string) => {
    const res = await t.request(t.sender, {
      method: 'POST',
      url: '/api/v1/institutions/hci/S1234A/referrals/search',
      payload: { patientUin: uin, requesterIdentifier: 'dr.tan@example.org' },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ data: { id: string }[] }>().data.map((r) => r.id);
  };

  /** Rows of each table whose patient data is not all sealed under `keyId` (or lacks its blind index). */
  const staleUnder = async (keyId: string) =>
    Object.fromEntries(
      await Promise.all(
        TABLES.map(async (table) => {
          const spec: { columns: readonly string[]; together?: string } = SEALED_COLUMNS[table];
          const notUnder = (c: string) =>
            sql`(${sql.ref(c)} is not null and ${sql.ref(c)} not like ${sealedUnderPattern(keyId)})`;
          // Columns sealed together hold nothing of their own.
          const conditions =
            spec.together === undefined
              ? spec.columns.map(notUnder)
              : [notUnder(spec.together), ...spec.columns.map((c) => sql`${sql.ref(c)} is not null`)];
          const { rows } = await sql<{
            n: number;
          }>`select count(*)::int as n from ${sql.table(table)} where ${sql.join(
            conditions,
            sql` or `,
          )}`.execute(t.ctx.db);
          return [table, rows[0]?.n] as const;
        }),
      ),
    );

  it('holds every value of patient data sealed, and the canary in no column of any table', async () => {
    const referral = await referralIn(t, 'completed', CANARY);
    const id = referral.id;
    await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/notes`, { content: CANARY.clinicalInfo }, 201);
    await referralIn(t, 'scheduled', CANARY);
    // What people type may name the patient: a request to act, a cancel note, an appointment's
    // location, a rejection. The timeline quotes each one, sealed; the event feed none.
    const said = `${CANARY.patientName} (${CANARY.patientUin})`;
    const typed = await referralIn(t, 'pending-acceptance', CANARY);
    const act = (who: typeof t.sender, op: string, body: Record<string, unknown>) =>
      call(
        t,
        who,
        op.startsWith('appointments/') ? 'PUT' : 'POST',
        `/api/v1/referrals/${typed.id}/${op}`,
        body,
      );
    await act(t.provider, 'request-action', { reason: `${said}: attach the ECG` });
    await act(t.sender, 'submit', {});
    await act(t.provider, 'accept', {});
    await act(t.provider, 'appointments/appt-1', {
      status: 'scheduled',
      startAt: '2030-01-15T01:30:00.000Z',
      location: `Home of ${said}`,
    });
    const rejected = await referralIn(t, 'pending-acceptance', CANARY);
    await call(t, t.provider, 'POST', `/api/v1/referrals/${rejected.id}/reject`, {
      reason: `${said} is out of scope`,
    });
    const cancelled = await referralIn(t, 'pending-acceptance', CANARY);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${cancelled.id}/cancel`, {
      cancelNote: `${said} recovered`,
    });
    const { activeKeyId } = await t.ctx.dataKeys.cipher(t.ctx.db);
    expect(await staleUnder(activeKeyId)).toEqual(Object.fromEntries(TABLES.map((table) => [table, 0])));
    for (const table of [
      'referrals',
      'notes',
      'appointments',
      'referral_outcomes',
      'timeline_events',
      'referral_events',
    ]) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(
        t.ctx.db,
      );
      expect(rows[0]?.n, `${table} has rows to check`).toBeGreaterThan(0);
    }
    // Every column of every table, as text: no canary value anywhere (bytes as their hex too).
    const { rows: columns } = await sql<{ table_name: string; column_name: string }>`
      select table_name, column_name from information_schema.columns
      where table_schema = current_schema()`.execute(t.ctx.db);
    const markers = [...CANARY_MARKERS, CANARY.clinicalInfo];
    for (const { table_name, column_name } of columns) {
      for (const marker of markers) {
        const hex = `\\x${Buffer.from(marker).toString('hex')}`;
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from ${sql.table(table_name)}
          where position(${marker} in ${sql.ref(column_name)}::text) > 0
             or position(${hex.slice(2)} in ${sql.ref(column_name)}::text) > 0`.execute(t.ctx.db);
        expect(rows[0]?.n, `${table_name}.${column_name} holds "${marker}"`).toBe(0);
      }
    }
    // And the API gives it back whole, and finds the patient by the UIN.
    expect(await read(id)).toMatchObject({ patient: { name: CANARY.patientName, uin: CANARY.patientUin } });
    expect(await byPatient(CANARY.patientUin)).toContain(id);
    const timelineOf = async (referralId: string) =>
      ((await read(referralId)) as { timelineEvents: { description: string }[] }).timelineEvents.map(
        (e) => e.description,
      );
    expect(await timelineOf(typed.id)).toEqual(
      expect.arrayContaining([
        `Central General Hospital asked the sender to act on the referral: ${said}: attach the ECG`,
        `Central General Hospital scheduled an appointment for Tue 15 Jan 2030, 09:30 SGT at Home of ${said}.`,
      ]),
    );
    expect(await timelineOf(rejected.id)).toContain(
      `Central General Hospital rejected the referral: ${said} is out of scope`,
    );
    expect(await timelineOf(cancelled.id)).toContain(
      `Bukit Timah Family Clinic cancelled the referral: ${said} recovered`,
    );
  });

  it('seals what was written before field encryption, which the patient filter then finds', async () => {
    const draft = await createDraft(t, { patientUin: 'S1000009J', patientName: 'Lim Bee Hoon' });
    const note = await call(
      t,
      t.sender,
      'POST',
      `/api/v1/referrals/${draft.id}/notes`,
      { content: 'Fasting from midnight.' },
      201,
    );
    // The row as a refhub before field encryption wrote it: in the clear, without a blind index.
    await sql`update referrals set patient_uin = 'S1000009J', patient_name = 'Lim Bee Hoon',
      clinical_info = 'Legacy clinical text', patient_uin_index = null, personal_data = null
      where id = ${draft.id}`.execute(t.ctx.db);
    await sql`update notes set content = 'Fasting from midnight.' where referral_id = ${draft.id}`.execute(
      t.ctx.db,
    );
    // Its timeline, as a refhub before the timeline was sealed wrote it.
    const sentences = ((await read(draft.id)) as { timelineEvents: { id: string; description: string }[] })
      .timelineEvents;
    expect(sentences).toHaveLength(2);
    for (const event of sentences) {
      await sql`update timeline_events set description = ${event.description} where id = ${event.id}`.execute(
        t.ctx.db,
      );
    }
    expect(await read(draft.id)).toMatchObject({
      patient: { name: 'Lim Bee Hoon' },
      clinicalInfo: 'Legacy clinical text',
    });
    expect(await byPatient('S1000009J')).toEqual([]);

    const { activeKeyId } = await t.ctx.dataKeys.cipher(t.ctx.db);
    const stale = await staleUnder(activeKeyId);
    expect(stale.referrals).toBe(1);
    expect(stale.notes).toBe(1);
    expect(stale.timeline_events).toBe(2);
    const { sealed } = await t.ctx.dataKeyRotation.sweep();
    expect(sealed).toBe(4);
    expect(Object.values(await staleUnder(activeKeyId))).toEqual(TABLES.map(() => 0));
    const row = await t.ctx.db
      .selectFrom('referrals')
      .select(['patient_name', 'clinical_info', 'personal_data'])
      .where('id', '=', draft.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ patient_name: null, clinical_info: null });
    expect(row.personal_data).toMatch(/^rh1:/);
    expect(row.personal_data).not.toContain('Legacy');
    expect(await read(draft.id)).toMatchObject({
      patient: { name: 'Lim Bee Hoon' },
      clinicalInfo: 'Legacy clinical text',
      notes: [expect.objectContaining({ id: note.id, content: 'Fasting from midnight.' })],
    });
    expect(((await read(draft.id)) as { timelineEvents: unknown[] }).timelineEvents).toMatchObject(sentences);
    const timelineRows = await t.ctx.db
      .selectFrom('timeline_events')
      .select('description')
      .where('referral_id', '=', draft.id)
      .execute();
    expect(timelineRows.map((r) => r.description.startsWith(`rh1:${activeKeyId}:`))).toEqual([true, true]);
    expect(await byPatient('S1000009J')).toEqual([draft.id]);
    // Nothing left: a second sweep seals nothing.
    expect((await t.ctx.dataKeyRotation.sweep()).sealed).toBe(0);
  });

  it('moves patient data sealed a column each, as refhub sealed it before, into one value', async () => {
    const fields = { patientUin: 'S1000017C', patientName: 'Ong Siew Lan', dob: '1975-03-02' };
    const draft = await createDraft(t, { ...fields, clinicalInfo: 'Chest pain on exertion.' });
    const opened = { patient: { dob: fields.dob }, clinicalInfo: 'Chest pain on exertion.' };
    // The row as field encryption first wrote it: each value sealed in its own column.
    const cipher = await t.ctx.dataKeys.cipher(t.ctx.db);
    const own = (column: string, value: string) =>
      cipher.seal(value, { table: 'referrals', column, row: draft.id });
    await t.ctx.db
      .updateTable('referrals')
      .set({
        personal_data: null,
        patient_uin: own('patient_uin', 'S1000017C'),
        patient_name: own('patient_name', 'Ong Siew Lan'),
        patient_dob: own('patient_dob', opened.patient.dob),
        clinical_info: own('clinical_info', opened.clinicalInfo),
      })
      .where('id', '=', draft.id)
      .execute();
    expect(await read(draft.id)).toMatchObject({
      patient: { uin: 'S1000017C', name: 'Ong Siew Lan', dob: opened.patient.dob },
      clinicalInfo: opened.clinicalInfo,
    });
    expect((await staleUnder(cipher.activeKeyId)).referrals).toBe(1);

    expect((await t.ctx.dataKeyRotation.sweep()).sealed).toBe(1);
    expect((await staleUnder(cipher.activeKeyId)).referrals).toBe(0);
    const row = await t.ctx.db
      .selectFrom('referrals')
      .select(['patient_uin', 'patient_name', 'patient_dob', 'clinical_info', 'personal_data'])
      .where('id', '=', draft.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      patient_uin: null,
      patient_name: null,
      patient_dob: null,
      clinical_info: null,
    });
    expect(row.personal_data).toMatch(/^rh1:/);
    expect(await read(draft.id)).toMatchObject({
      patient: { uin: 'S1000017C', name: 'Ong Siew Lan', dob: opened.patient.dob },
      clinicalInfo: opened.clinicalInfo,
    });
    expect(await byPatient('S1000017C')).toEqual([draft.id]);
  });

  /** A draft whose timeline sentence is in the clear, as a refhub before 0019 wrote it; then 0019. */
  const timelineBefore0019 = async () => {
    const draft = await createDraft(t);
    const [event] = ((await read(draft.id)) as { timelineEvents: { id: string; description: string }[] })
      .timelineEvents;
    if (event === undefined) throw new Error('the draft has no timeline');
    await sql`update timeline_events set description = ${event.description} where id = ${event.id}`.execute(
      t.ctx.db,
    );
    await migration0019(t.ctx.db as unknown as Kysely<unknown>);
    const stored = async () =>
      (
        await t.ctx.db
          .selectFrom('timeline_events')
          .select('description')
          .where('id', '=', event.id)
          .executeTakeFirstOrThrow()
      ).description;
    return { draft, event, stored };
  };
  const recording = () => {
    const lines: { level: string; message: string }[] = [];
    const logger = {
      info: (_fields: object, message: string) => lines.push({ level: 'info', message }),
      warn: (_fields: object, message: string) => lines.push({ level: 'warn', message }),
    } as unknown as Pick<Logger, 'info' | 'warn'>;
    return { lines, logger };
  };

  it('seals the timeline written before 0019 at the next start, with one fields key', async () => {
    const { draft, event, stored } = await timelineBefore0019();
    const { activeKeyId } = await t.ctx.dataKeys.cipher(t.ctx.db);
    expect(await t.ctx.dataKeyRotation.pending()).toEqual({ keyId: activeKeyId, first: true });
    expect(await stored()).toBe(event.description);

    const { lines, logger } = recording();
    expect(await sealExistingData(t.ctx.dataKeyRotation, logger)).toBe(1);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    expect(await stored()).toMatch(new RegExp(`^rh1:${activeKeyId}:`));
    expect(await t.ctx.dataKeyRotation.pending()).toBeUndefined();
    expect(await read(draft.id)).toMatchObject({ timelineEvents: [event] });
  });

  it('rotates while requests write, losing and corrupting nothing', async () => {
    // What a start after the migration does: the first key swept to, so this is a rotation proper.
    await t.ctx.dataKeyRotation.sweep();
    const written = new Map<string, { clinicalInfo: string; notes: string[] }>();
    for (let i = 0; i < 12; i++) {
      const draft = await createDraft(t, { clinicalInfo: `Before the rotation ${i}` });
      written.set(draft.id, { clinicalInfo: `Before the rotation ${i}`, notes: [] });
    }
    const before = (await t.ctx.dataKeys.cipher(t.ctx.db)).activeKeyId;

    // The writers: each round patches a referral's clinical information and adds a note, through the
    // API, until the rotation has finished.
    let writes = 0;
    let rotating = true;
    const ids = [...written.keys()];
    const writer = async (w: number) => {
      for (let round = 0; rotating; round++) {
        const id = ids[(w * 5 + round) % ids.length] as string;
        const text = `Writer ${w}, round ${round}`;
        await call(t, t.sender, 'PATCH', `/api/v1/referrals/${id}`, { clinicalInfo: text });
        const entry = written.get(id) as { clinicalInfo: string; notes: string[] };
        entry.clinicalInfo = text;
        await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/notes`, { content: `${text}: note` }, 201);
        entry.notes.push(`${text}: note`);
        writes += 1;
      }
    };
    // The rotation runs as `refhub data-keys rotate` does, in a process of its own: keys of its own.
    const rotation = createDataKeyRotation({
      stores: createStores(t.ctx.db, openDataKeys(localKeyRing([kek]), { refreshMs: REFRESH_MS })),
      clock: systemClock,
      batchSize: 4,
    });
    const progress: SweepProgress[] = [];
    const writesDuringSweep: number[] = [];
    const writers = [0, 1, 2].map(writer);
    const rotated = rotation
      .rotate(async (p) => {
        progress.push(p);
        // Between batches, the sweep lets the writers write: it goes on once two more writes landed.
        const target = writes + 2;
        while (writes < target) await new Promise((resolve) => setImmediate(resolve));
        writesDuringSweep.push(writes);
      })
      .finally(() => {
        rotating = false;
      });
    const result = await rotated;
    await Promise.all(writers);

    expect(result.resumed).toBe(false);
    expect(result.keyId).not.toBe(before);
    expect(progress.filter((p) => p.table === 'referrals').length).toBeGreaterThan(2);
    expect(writesDuringSweep.length).toBe(progress.length);
    // Every value is under the new key, and the API's own keys seal under it too.
    expect(Object.values(await staleUnder(result.keyId))).toEqual(TABLES.map(() => 0));
    expect((await t.ctx.dataKeys.reload(t.ctx.db)).activeKeyId).toBe(result.keyId);
    expect((await t.ctx.dataKeyRotation.status()).swept).toBe(true);
    for (const [id, expected] of written) {
      const got = (await read(id)) as { clinicalInfo: string; notes: { content: string }[] };
      expect(got.clinicalInfo).toBe(expected.clinicalInfo);
      expect(got.notes.map((n) => n.content)).toEqual(expected.notes);
    }
  });

  it('after a rotation, leaves the timeline written before 0019 to `refhub data-keys rotate`', async () => {
    // The rotation above made a second fields key: a start cannot tell 0019's mark from a rotation
    // left unfinished, and does not hold itself up for a whole sweep.
    const { draft, event, stored } = await timelineBefore0019();
    const { activeKeyId } = await t.ctx.dataKeys.cipher(t.ctx.db);
    expect(await t.ctx.dataKeyRotation.pending()).toEqual({ keyId: activeKeyId, first: false });
    const { lines, logger } = recording();
    expect(await sealExistingData(t.ctx.dataKeyRotation, logger)).toBe(0);
    expect(lines.map((l) => l.level)).toEqual(['warn']);
    expect(lines[0]?.message).toContain('`refhub data-keys rotate` seals them');
    expect(await stored()).toBe(event.description);
    expect(await read(draft.id)).toMatchObject({ timelineEvents: [event] });

    // What the operator runs: it seals the timeline under the active key, and makes no new one.
    const rotated = await t.ctx.dataKeyRotation.rotate();
    expect(rotated).toMatchObject({ keyId: activeKeyId, resumed: true, sealed: 1 });
    expect(await stored()).toMatch(new RegExp(`^rh1:${activeKeyId}:`));
    expect(await t.ctx.dataKeyRotation.pending()).toBeUndefined();
    expect(await read(draft.id)).toMatchObject({ timelineEvents: [event] });
  });
});
