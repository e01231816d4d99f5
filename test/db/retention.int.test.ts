// Retention on real partitions, on both engines: rows of a month with no partition land in the
// DEFAULT partition (no insert fails) and the run's maintenance moves them into a partition of their
// own; a month past its setting is archived (NDJSON and a manifest, the audit trail with its
// checkpoints), the archive verified, the partition detached and dropped, recorded, audited and
// counted; `refhub audit verify` still holds after a month of the trail is gone; and a month holding a
// webhook delivery still being retried waits until the delivery ends. One run at a time: a second one
// while the first runs does nothing and says which holds retention, and a run not heard from for
// five minutes (its process died) is ended as abandoned by the next.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import type { Stores } from '../../src/db/stores.ts';
import { auditEventOf, systemActor } from '../../src/domain/audit.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { createAuditChain } from '../../src/services/audit/audit-chain.service.ts';
import { verifyArchive } from '../../src/services/retention/archive.ts';
import { archiveStaleReferrals } from '../../src/services/retention/referrals-archive.ts';
import { createRetention, type ArchiveReferrals } from '../../src/services/retention/retention.service.ts';
import { RETENTION_RUN_STALE_MS, RetentionBusyError } from '../../src/services/retention/runs.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';
import { storesOf } from '../support/stores.ts';

describe.each(ENGINES)('retention on %s', (engine) => {
  let store: Store;
  let stores: Stores;
  let root: string;
  let now = new Date('2001-03-10T00:00:05.000Z');
  const clock = { now: () => now };
  const metrics = createMetrics();
  const auditChain = () => createAuditChain({ stores, clock });
  const archiveReferrals: ArchiveReferrals = (options) =>
    archiveStaleReferrals(
      { stores, config: { retentionArchiveDir: root, referralArchiveAfterMonths: 18 } },
      options,
    );
  const retention = (archive: ArchiveReferrals = archiveReferrals) =>
    createRetention({
      stores,
      archiveReferrals: archive,
      auditChain: auditChain(),
      clock,
      metrics,
      settings: {
        months: { audit_events: 72, referral_events: 36, webhook_attempts: 3, ehr_submissions: 72 },
        archiveDir: root,
        monthsAhead: 3,
      },
    });
  const partitionOf = async (table: string, id: string) =>
    (
      await sql<{
        p: string;
      }>`select tableoid::regclass::text as p from ${sql.table(table)} where id = ${id}`.execute(store.db)
    ).rows[0]?.p;
  const metric = async (name: string) =>
    (await metrics.registry.getSingleMetric(name)?.get())?.values.map((v) => [v.labels, v.value]);

  beforeAll(async () => {
    store = await openTestStore(engine);
    stores = storesOf(store.db);
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-retention-'));
  });
  afterAll(async () => {
    await store.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('takes rows of a month with no partition in the DEFAULT one, then archives, verifies and drops the month', async () => {
    // Two audit rows of March 2001, sealed by the chain five seconds later.
    const events = [0, 1].map((n) =>
      auditEventOf(systemActor(`request-${n}`), 'test.read', [], new Date(Date.UTC(2001, 2, 10, 0, 0, n))),
    );
    for (const event of events) await stores.audit.record(event);
    expect(await partitionOf('audit_events', events[0]?.id ?? '')).toBe('audit_events_default');
    expect(await auditChain().seal()).toBe(2);

    now = new Date();
    expect(await retention().makePartitions()).toBeGreaterThan(0);
    expect(await partitionOf('audit_events', events[0]?.id ?? '')).toBe('audit_events_p2001_03');

    const run = await retention().run('retention.test');
    const archived = run.archived.find((a) => a.table === 'audit_events' && a.month === '2001-03');
    expect(archived).toMatchObject({ rows: 2, archive: path.join(root, 'audit_events-2001-03') });
    expect(await partitionOf('audit_events', events[0]?.id ?? '')).toBeUndefined();
    expect(
      (
        await sql<{
          found: boolean;
        }>`select to_regclass('audit_events_p2001_03') is not null as found`.execute(store.db)
      ).rows[0]?.found,
    ).toBe(false);

    const verified = await verifyArchive(path.join(root, 'audit_events-2001-03'));
    expect(verified.manifest.kind).toBe('audit_events');
    expect(verified.manifest.range).toEqual({
      from: '2001-03-01T00:00:00.000Z',
      to: '2001-04-01T00:00:00.000Z',
    });
    expect(verified.audit).toMatchObject({ chains: 1, rows: 2 });
    expect(verified.manifest.auditCheckpoint?.days).toEqual({ from: '2001-03-01', to: '2001-03-31' });

    expect(await stores.retention.archived('audit_events')).toEqual([
      expect.objectContaining({ month: '2001-03', rows: 2, manifestSha256: archived?.manifestSha256 }),
    ]);
    const audited = await store.db
      .selectFrom('audit_events')
      .select(['request_id', 'referral_ids'])
      .where('action', '=', 'retention.partition-dropped')
      .execute();
    expect(audited.map((r) => r.request_id)).toEqual([
      `retention.audit_events.2001-03.rows-2.manifest-sha256-${archived?.manifestSha256}`,
    ]);
    expect(await metric('refhub_retention_partitions_dropped_total')).toEqual([
      [{ table: 'audit_events' }, 1],
    ]);
    expect(await metric('refhub_retention_runs_total')).toEqual([[{ outcome: 'succeeded' }, 1]]);

    // The trail left in the database still verifies: the dropped month is its archive's to check.
    await auditChain().seal();
    expect((await auditChain().verify()).broken).toBeUndefined();
  });

  it('keeps a month holding a webhook delivery still being retried, and drops it once the delivery ended', async () => {
    const subscription = randomUUID();
    const event = randomUUID();
    await sql`insert into institutions (id_type, id, name) values ('hci', 'R1', 'Retention Clinic')`.execute(
      store.db,
    );
    await sql`
      insert into webhook_subscriptions (id, institution_id_type, institution_id, url, secret, created_at, updated_at)
      values (${subscription}, 'hci', 'R1', 'https://example.org/hook', 'whsec', now(), now())`.execute(
      store.db,
    );
    const attempt = (n: number, outcome: string, at: string) => sql`
      insert into webhook_attempts (id, subscription_id, event_id, event_type, attempt, attempted_at, outcome,
                                    http_status, duration_ms)
      values (${randomUUID()}, ${subscription}, ${event}, 'referral.submitted', ${n}, ${at}, ${outcome}, 503, 12)`;
    await attempt(1, 'retrying', '2001-05-02T10:00:00Z').execute(store.db);

    const first = await retention().run('retention.test');
    expect(first.waiting).toEqual([
      { table: 'webhook_attempts', month: '2001-05', reason: 'it holds a delivery that has not ended' },
    ]);
    expect(first.archived.filter((a) => a.table === 'webhook_attempts')).toEqual([]);

    await attempt(2, 'delivered', '2001-05-02T10:05:00Z').execute(store.db);
    const second = await retention().run('retention.test');
    expect(second.waiting).toEqual([]);
    expect(second.archived.filter((a) => a.table === 'webhook_attempts')).toMatchObject([
      { month: '2001-05', rows: 2 },
    ]);
    const verified = await verifyArchive(path.join(root, 'webhook_attempts-2001-05'));
    expect(verified.rows).toBe(2);
    const [firstRow] = fs
      .readFileSync(path.join(root, 'webhook_attempts-2001-05', 'webhook_attempts.ndjson'), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .sort((a, b) => Number(a.attempt) - Number(b.attempt));
    expect(firstRow).toMatchObject({ subscription_id: subscription, event_id: event, outcome: 'retrying' });
    const left = await sql<{ n: number }>`select count(*)::int as n from webhook_attempts`.execute(store.db);
    expect(left.rows[0]?.n).toBe(0);
  });
  it('runs one at a time: a second run while one runs does nothing and says which holds retention', async () => {
    let release: () => void = () => undefined;
    let started: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (started = resolve));
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first run holds retention as it comes to its referrals: it waits there until released.
    const first = retention(async (options) => {
      started();
      await held;
      return archiveReferrals(options);
    }).run('retention.first');
    await running;

    const second = retention().run('retention.second');
    await expect(second).rejects.toBeInstanceOf(RetentionBusyError);
    await expect(second).rejects.toThrow(
      /another retention run is in progress \(retention\.first, started at /,
    );
    await expect(retention().archiveReferrals('retention.referrals')).rejects.toBeInstanceOf(
      RetentionBusyError,
    );

    release();
    await first;
    const runs = await store.db
      .selectFrom('retention_runs')
      .select(['started_by', 'outcome'])
      .where('started_by', 'in', ['retention.first', 'retention.second', 'retention.referrals'])
      .execute();
    expect(runs).toEqual([{ started_by: 'retention.first', outcome: 'succeeded' }]);
    // Released, the next run goes.
    await expect(retention().run('retention.after')).resolves.toMatchObject({ referralsArchived: 0 });
  });

  it('ends a run not heard from for five minutes as abandoned, and starts', async () => {
    const id = randomUUID();
    const heardFrom = new Date(now.getTime() - RETENTION_RUN_STALE_MS - 1_000);
    await store.db
      .insertInto('retention_runs')
      .values({ id, started_by: 'retention.died', started_at: heardFrom, heartbeat_at: heardFrom })
      .execute();
    await expect(retention().run('retention.next')).resolves.toMatchObject({ waiting: [] });
    const rows = await store.db
      .selectFrom('retention_runs')
      .select(['started_by', 'outcome'])
      .where('started_by', 'in', ['retention.died', 'retention.next'])
      .orderBy('started_at')
      .execute();
    expect(rows).toEqual([
      { started_by: 'retention.died', outcome: 'abandoned' },
      { started_by: 'retention.next', outcome: 'succeeded' },
    ]);
  });
});
