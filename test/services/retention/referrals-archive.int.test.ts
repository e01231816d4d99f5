// Archiving referrals on both engines, through the real bridge (the sandbox EHR takes each form, so a
// delivery ends as it does in service): a final referral whose delivery ended is written to an archive
// whose manifest matches its files, then its clinical content is purged (the tables are read directly
// for the canary patient), it answers 410 with the archive's reference and leaves the list, and the
// figures wait times read still count it. A referral not final, or whose forward has not ended, is
// never archived; and an archive that cannot be written leaves every referral as it was.
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitTimesRepository } from '../../../src/db/wait-times.repository.ts';
import { retentionSettings } from '../../../src/composition/context.ts';
import type { ArchiveManifest } from '../../../src/services/retention/archive.ts';
import { createRetention } from '../../../src/services/retention/retention.service.ts';
import {
  archiveStaleReferrals,
  openArchivedReferrals,
  REFERRALS_ARCHIVE_FILES,
} from '../../../src/services/retention/referrals-archive.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import { ENGINES } from '../../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call, createDraft, referralIn } from '../../support/scenarios.ts';
import { insertAttachment } from '../../support/stored-attachments.ts';

const MONTH_MS = 31 * 86_400_000;
const FILE = Buffer.from('%PDF-1.4 Canaryquokka ECG trace\n');

describe.each(ENGINES)('archiving referrals on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  let root: string;
  let canaryId: string;
  let rejectedId: string;
  let pendingId: string;
  let undeliveredId: string;

  const deps = (dir: string) => ({
    stores: t.ctx.stores,
    config: { retentionArchiveDir: dir, referralArchiveAfterMonths: 18 },
  });
  const later = () => new Date(Date.now() + 19 * MONTH_MS);
  const row = (id: string) =>
    t.ctx.db.selectFrom('referrals').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const asSender = 'institutionIdType=hci&institutionId=S1234A';

  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-archive-'));
    ehr = await startEhr();
    t = await createBridgeApp(engine, ehr);
    t.startBackground();
    // The canary: a file (its name and bytes name the patient), submitted, then cancelled.
    const draft = await createDraft(t, {
      patientName: CANARY.patientName,
      patientUin: CANARY.patientUin,
      dob: CANARY.dob,
      patientPhoneNumber: CANARY.patientPhoneNumber,
      clinicalInfo: CANARY.clinicalInfo,
    });
    canaryId = draft.id;
    await insertAttachment(
      t.ctx.db,
      t.ctx.dataKeys,
      {
        id: randomUUID(),
        referralId: canaryId,
        fileName: 'Canaryquokka-ecg.pdf',
        mediaType: 'application/pdf',
        sizeBytes: FILE.length,
        sha256: createHash('sha256').update(FILE).digest('hex'),
        scanState: 'not-scanned',
        addedBy: 'sender',
        authorInstitution: { idType: 'hci', id: 'S1234A' },
        requesterIdentifier: null,
        system: 'HAS',
        createdAt: new Date(),
      },
      FILE,
    );
    await call(t, t.sender, 'POST', `/api/v1/referrals/${canaryId}/submit`, {});
    await call(t, t.sender, 'POST', `/api/v1/referrals/${canaryId}/cancel`, {
      cancelNote: `${CANARY.patientName} recovered`,
    });
    // Rejected, with a note; and one still waiting for the provider.
    rejectedId = (await referralIn(t, 'rejected')).id;
    await call(
      t,
      t.provider,
      'POST',
      `/api/v1/referrals/${rejectedId}/notes`,
      {
        content: `${CANARY.patientName} was told by phone`,
      },
      201,
    );
    pendingId = (await referralIn(t, 'pending-acceptance')).id;
    // Every forward delivered; then the background stops, and a cancel's forward is left due.
    await eventually(
      'every forward delivered',
      async () => {
        const rows = await t.ctx.db
          .selectFrom('referrals')
          .select('ehr_state')
          .where('id', 'in', [canaryId, rejectedId, pendingId])
          .execute();
        const open = await t.ctx.db
          .selectFrom('outbox')
          .select('id')
          .where('processed_at', 'is', null)
          .execute();
        return rows.every((r) => r.ehr_state === 'forwarded') && open.length === 0 ? true : undefined;
      },
      3 * t.forwardWithinMs,
    );
    await t.stopBackground();
    undeliveredId = (await referralIn(t, 'cancelled')).id;
  }, 180_000);

  afterAll(async () => {
    await t.close();
    await ehr.stop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('leaves every referral as it was when the archive cannot be written', async () => {
    const blocked = path.join(root, 'a-file');
    fs.writeFileSync(blocked, 'not a directory');
    const before = await row(canaryId);
    await expect(
      archiveStaleReferrals(deps(path.join(blocked, 'archives')), { now: later() }),
    ).rejects.toThrow();
    expect(await row(canaryId)).toEqual(before);
    expect(before.status).toBe('cancelled');
    expect(before.personal_data).not.toBeNull();
  });

  it('archives none before REFERRAL_ARCHIVE_AFTER_MONTHS', async () => {
    expect(await archiveStaleReferrals(deps(root), { now: new Date() })).toEqual({
      archived: 0,
      archive: undefined,
    });
  });

  // Through retention's run, as the scheduled job and `refhub retention run` do it.
  it('writes, verifies and purges; the referral answers 410 and its figures still count', async () => {
    const now = later();
    const window = { start: new Date(Date.now() - 86_400_000), end: new Date(Date.now() + 86_400_000) };
    const figures = await waitTimesRepository(t.ctx.db).compute(window);

    const retention = createRetention({
      stores: t.ctx.stores,
      archiveReferrals: (options) => archiveStaleReferrals(deps(root), options),
      auditChain: t.ctx.auditChain,
      clock: { now: () => now },
      metrics: t.ctx.metrics,
      settings: { ...retentionSettings(t.ctx.config), archiveDir: root },
    });
    const run = await retention.run('retention.test');
    const result = { archived: run.referralsArchived, archive: run.referralsArchive };
    expect(result).toEqual({ archived: 2, archive: `referrals-${now.toISOString().replaceAll(':', '-')}` });
    const dir = path.join(root, result.archive ?? '');

    // The manifest's hashes and row counts are its files'.
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as ArchiveManifest;
    expect(manifest).toMatchObject({
      format: 'refhub-archive/1',
      kind: 'referrals',
      createdAt: now.toISOString(),
      range: null,
      auditCheckpoint: null,
    });
    expect(manifest.files.map((f) => f.name).sort()).toEqual(Object.values(REFERRALS_ARCHIVE_FILES).sort());
    for (const file of manifest.files) {
      const bytes = fs.readFileSync(path.join(dir, file.name));
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(file.sha256);
      expect(bytes.toString('utf8').split('\n').slice(0, -1)).toHaveLength(file.rows);
    }
    expect(manifest.files.find((f) => f.name === REFERRALS_ARCHIVE_FILES.referrals)?.rows).toBe(2);
    // Sealed on disk: the canary is nowhere in the archive's bytes...
    const onDisk = manifest.files.map((f) => fs.readFileSync(path.join(dir, f.name), 'utf8')).join('\n');
    for (const marker of CANARY_MARKERS) expect(onDisk).not.toContain(marker);
    // ...and an operator with the key ring reads all of it back.
    const opened = await openArchivedReferrals(dir, t.ctx.dataKeys.ring);
    const canary = opened.find((r) => r.referral.id === canaryId);
    expect(canary?.referral).toMatchObject({
      patient_name: CANARY.patientName,
      clinical_info: CANARY.clinicalInfo,
    });
    expect(canary?.attachments[0]).toMatchObject({ file_name: 'Canaryquokka-ecg.pdf' });
    expect([...(canary?.files.values() ?? [])]).toEqual([FILE]);
    expect(canary?.forms.length).toBeGreaterThan(0);
    expect(
      canary?.forms.every((f) => typeof f.html === 'string' && f.html.includes(CANARY.patientName)),
    ).toBe(true);
    expect(canary?.timeline.map((e) => e.description).join(' ')).toContain(`${CANARY.patientName} recovered`);
    const rejected = opened.find((r) => r.referral.id === rejectedId);
    expect(rejected?.notes.map((n) => n.content)).toEqual([`${CANARY.patientName} was told by phone`]);

    // Purged: the tables themselves hold none of it.
    for (const id of [canaryId, rejectedId]) {
      expect(await row(id)).toMatchObject({
        status: 'archived',
        archive_name: result.archive,
        personal_data: null,
        patient_name: null,
        clinical_info: null,
        patient_uin_index: null,
      });
    }
    const leftover = await sql<{ text: string }>`
      select concat_ws(' ',
        (select string_agg(r::text, ' ') from referrals r where r.id in (${canaryId}::uuid, ${rejectedId}::uuid)),
        (select string_agg(n::text, ' ') from notes n where n.referral_id in (${canaryId}::uuid, ${rejectedId}::uuid)),
        (select string_agg(a::text, ' ') from attachments a where a.referral_id = ${canaryId}::uuid),
        (select string_agg(f::text, ' ') from ehr_forms f where f.referral_id = ${canaryId}::uuid),
        (select string_agg(e::text, ' ') from timeline_events e where e.referral_id = ${canaryId}::uuid)
      ) as text`.execute(t.ctx.db);
    for (const marker of CANARY_MARKERS) expect(leftover.rows[0]?.text).not.toContain(marker);
    const counts = await sql<{ notes: number; contents: number; sealed: number }>`
      select
        (select count(*)::int from notes where referral_id in (${canaryId}::uuid, ${rejectedId}::uuid)) as notes,
        (select count(*)::int from attachment_contents c join attachments a on a.id = c.attachment_id
          where a.referral_id = ${canaryId}::uuid) as contents,
        (select count(*)::int from timeline_events where referral_id = ${canaryId}::uuid
          and description is not null and type <> 'referral.archived') as sealed`.execute(t.ctx.db);
    expect(counts.rows[0]).toEqual({ notes: 0, contents: 0, sealed: 0 });
    // What stays: the forms' hashes, the files' hashes, the timeline's steps and the feed's event.
    const kept = await t.ctx.db
      .selectFrom('ehr_forms')
      .select(['sha256', sql<boolean>`html is null`.as('purged')])
      .where('referral_id', '=', canaryId)
      .execute();
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.every((f) => /^[0-9a-f]{64}$/.test(f.sha256) && f.purged)).toBe(true);
    const steps = await t.ctx.db
      .selectFrom('timeline_events')
      .select('type')
      .where('referral_id', '=', canaryId)
      .orderBy('seq')
      .execute();
    // Every step stays, the archive's last (forwards of versions in a row may be delivered as one).
    expect(new Set(steps.map((s) => s.type))).toEqual(
      new Set([
        'referral.created',
        'referral.pending-acceptance',
        'ehr.forwarded',
        'referral.cancelled',
        'referral.archived',
      ]),
    );
    expect(steps.at(-1)?.type).toBe('referral.archived');
    const feed = await t.ctx.db
      .selectFrom('referral_events')
      .select(['type', 'description'])
      .where('referral_id', '=', canaryId)
      .where('type', '=', 'referral.archived')
      .execute();
    expect(feed).toHaveLength(1);
    expect(feed[0]?.description).toContain(result.archive ?? 'no archive');

    // The figures wait times read are the same as before.
    expect(await waitTimesRepository(t.ctx.db).compute(window)).toEqual(figures);
    expect(figures.find((f) => f.offeringId === 'cgh-gastro')).toMatchObject({ decided: 1, declined: 1 });

    // Reads and steps answer 410 with the archive's reference; the list leaves it out.
    const get = await t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/referrals/${canaryId}?${asSender}&requesterIdentifier=dr@example.org`,
    });
    expect(get.statusCode).toBe(410);
    expect(get.headers['content-type']).toContain('application/problem+json');
    expect(get.json()).toMatchObject({
      code: 'referral_archived',
      status: 410,
      referralId: canaryId,
      archive: { name: result.archive, archivedAt: now.toISOString() },
    });
    const note = await t.request(t.provider, {
      method: 'POST',
      url: `/api/v1/referrals/${rejectedId}/notes`,
      payload: { ...t.provider.institution, content: 'One more thing' },
    });
    expect(note.statusCode).toBe(410);
    const list = (await call(
      t,
      t.sender,
      'GET',
      '/api/v1/institutions/hci/S1234A/referrals?pageSize=100',
    )) as { data: { id: string }[] };
    const listed = list.data.map((r) => r.id);
    expect(listed).toContain(pendingId);
    expect(listed).not.toContain(canaryId);
    expect(listed).not.toContain(rejectedId);
  });

  it('never archives a referral that is not final, or whose forward has not ended', async () => {
    expect(await archiveStaleReferrals(deps(root), { now: later() })).toEqual({
      archived: 0,
      archive: undefined,
    });
    expect(await row(pendingId)).toMatchObject({ status: 'pending-acceptance', archive_name: null });
    const undelivered = await row(undeliveredId);
    expect(undelivered).toMatchObject({ status: 'cancelled', ehr_state: 'queued', archive_name: null });
    expect(undelivered.personal_data).not.toBeNull();
  });
});
