// Searching and replaying the ledgers on both engines, through the service and the real stores and
// queues: each filter narrows the forwards and the webhook deliveries as the rows say it should;
// keyset paging returns every row exactly once (rows sharing a time included); the export's NDJSON and
// CSV read back as the rows (the CSV by PostgreSQL's own CSV parser); a dry run changes nothing; and a
// replay skips what the receiver acknowledged, queues the rest linked to the attempt it repeats, and
// is audited and recorded.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { PGlite } from '@electric-sql/pglite';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerArg, searchLedger } from '../../src/cli/ledger-search.command.ts';
import { ehrSubmissionRepository } from '../../src/db/forwarding/ledger.ts';
import { webhookAttemptRepository } from '../../src/db/webhooks/attempts.repository.ts';
import { webhookSubscriptionRepository } from '../../src/db/webhooks/subscriptions.repository.ts';
import { EXPORT_COLUMNS, type LedgerFilter, type LedgerRow } from '../../src/domain/ledger-search.ts';
import { checkedLedgerFilter } from '../../src/services/ledger-search.service.ts';
import { createQueueApp, type QueueApp } from '../support/bridge.ts';
import { ENGINES } from '../support/engines.ts';
import { PATIENT } from '../support/fixtures/patients.ts';

const at = (minute: number, ms = 0) => new Date(Date.UTC(2026, 5, 4, 3, minute, 0, ms));
const range = { from: at(0), to: at(59) };

interface SeededForward {
  readonly id: string;
  readonly referralId: string;
  readonly offering: string;
  readonly sender: string;
  readonly minute: number;
  readonly outcome: 'delivered' | 'retrying' | 'failed';
  readonly httpStatus: number | null;
  readonly errorCode: string | null;
  readonly version: number;
}

describe.each(ENGINES)('the ledger search on %s', (engine) => {
  let t: QueueApp;
  const forwards: SeededForward[] = [];
  const referrals: { id: string; offering: string; sender: string; version: number }[] = [];
  let subscriptionA: string;
  let subscriptionB: string;
  const deliveries: {
    id: string;
    subscriptionId: string;
    eventId: string;
    referralId: string;
    minute: number;
    outcome: 'delivered' | 'retrying' | 'failed';
    httpStatus: number | null;
  }[] = [];

  beforeAll(async () => {
    t = await createQueueApp(engine);
    // Four referrals: two offerings, two senders.
    const shapes = [
      { offering: 'cgh-gastro', party: t.sender, sender: 'hci:S1234A' },
      { offering: 'cgh-gpfirst', party: t.sender, sender: 'hci:S1234A' },
      { offering: 'cgh-gastro', party: t.otherSender, sender: 'hci:S2345B' },
      { offering: 'erh-cardio', party: t.otherSender, sender: 'hci:S2345B' },
    ];
    for (const s of shapes) {
      const draft = (
        await t.request(s.party, {
          method: 'POST',
          url: '/api/v1/referrals',
          payload: { ...s.party.institution, ...PATIENT, offeringId: s.offering },
        })
      ).json<{ id: string; version: number }>();
      referrals.push({ id: draft.id, offering: s.offering, sender: s.sender, version: draft.version });
    }
    const ledger = ehrSubmissionRepository(t.ctx.db);
    // Three rows per referral; several share minute 10 to the millisecond, so paging must order by ID.
    const plan: [number, 'delivered' | 'retrying' | 'failed', number | null, string | null][] = [
      [10, 'retrying', 503, null],
      [20, 'retrying', null, 'ECONNRESET'],
      [30, 'failed', 422, null],
    ];
    for (const [i, r] of referrals.entries()) {
      for (const [minute, outcome, httpStatus, errorCode] of plan) {
        const row = {
          id: uuidv7(),
          referralId: r.id,
          offering: r.offering,
          sender: r.sender,
          minute: minute === 10 ? 10 : minute + i,
          outcome,
          httpStatus,
          errorCode,
          version: r.version,
        };
        forwards.push(row);
        await ledger.insert({
          id: row.id,
          referralId: r.id,
          messageId: `${r.id}.v${r.version}`,
          version: r.version,
          attempt: 1,
          attemptedAt: at(row.minute),
          outcome,
          httpStatus,
          errorCode,
          sha256: null,
          ehrReference: null,
          durationMs: 5,
          requestId: uuidv7(),
        });
      }
    }
    // A row outside the range, which no search of the range returns.
    await ledger.insert({
      id: uuidv7(),
      referralId: referrals[0]?.id ?? '',
      messageId: 'x.v1',
      version: 1,
      attempt: 1,
      attemptedAt: new Date(Date.UTC(2026, 5, 5)),
      outcome: 'failed',
      httpStatus: 422,
      errorCode: null,
      sha256: null,
      ehrReference: null,
      durationMs: 5,
      requestId: uuidv7(),
    });

    // Two subscriptions of two institutions, and deliveries of each referral's first event.
    const subs = webhookSubscriptionRepository(t.ctx.db);
    const subscribe = async (idType: string, id: string) =>
      (
        await subs.insert({
          id: uuidv7(),
          institution: { idType, id },
          url: 'https://receiver.example.org/hook',
          eventTypes: null,
          description: null,
          secret: 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdA==',
          now: at(0),
        })
      ).id;
    subscriptionA = await subscribe('hci', 'S1234A');
    subscriptionB = await subscribe('hci', 'S2345B');
    const attempts = webhookAttemptRepository(t.ctx.db);
    for (const [i, r] of referrals.entries()) {
      const event = await t.ctx.db
        .selectFrom('referral_events')
        .select(['id', 'type'])
        .where('referral_id', '=', r.id)
        .executeTakeFirstOrThrow();
      const subscriptionId = r.sender === 'hci:S1234A' ? subscriptionA : subscriptionB;
      for (const [minute, outcome, httpStatus] of [
        [11 + i, 'retrying', 500],
        [21 + i, i % 2 === 0 ? 'failed' : 'delivered', i % 2 === 0 ? 503 : 204],
      ] as const) {
        const row = {
          id: uuidv7(),
          subscriptionId,
          eventId: event.id,
          referralId: r.id,
          minute,
          outcome,
          httpStatus,
        };
        deliveries.push(row);
        await attempts.insert({
          id: row.id,
          subscriptionId,
          eventId: event.id,
          eventType: event.type,
          attempt: 1,
          attemptedAt: at(minute),
          outcome,
          httpStatus,
          durationMs: 3,
          errorCode: null,
        });
      }
    }
  });
  afterAll(async () => {
    await t.close();
  });

  const all = async (ledger: 'forwards' | 'webhooks', filter: LedgerFilter) => {
    const rows: LedgerRow[] = [];
    for await (const row of t.ctx.ledgerSearch.rows(ledger, filter)) rows.push(row);
    return rows;
  };
  const ids = (rows: readonly { id: string }[]) => rows.map((r) => r.id).sort();

  it('narrows the forwards by each filter, and by the time range always', async () => {
    const cases: [Partial<LedgerFilter>, (f: SeededForward) => boolean][] = [
      [{}, () => true],
      [{ outcome: 'failed' }, (f) => f.outcome === 'failed'],
      [{ httpStatus: 503 }, (f) => f.httpStatus === 503],
      [{ errorCode: 'ECONNRESET' }, (f) => f.errorCode === 'ECONNRESET'],
      [{ offering: 'cgh-gastro' }, (f) => f.offering === 'cgh-gastro'],
      [{ institution: { idType: 'hci', id: 'S2345B' } }, (f) => f.sender === 'hci:S2345B'],
      // The provider of the cgh-* offerings sees those referrals' forwards.
      [{ institution: { idType: 'hci', id: 'S9001Z' } }, (f) => f.offering.startsWith('cgh-')],
      [{ referralId: referrals[1]?.id ?? '' }, (f) => f.referralId === referrals[1]?.id],
      [{ from: at(20), to: at(31) }, (f) => f.minute >= 20 && f.minute < 31],
      [
        { outcome: 'failed', offering: 'cgh-gastro' },
        (f) => f.outcome === 'failed' && f.offering === 'cgh-gastro',
      ],
    ];
    for (const [narrowing, keep] of cases) {
      const found = await all('forwards', { ...range, ...narrowing });
      const expected = forwards.filter(keep);
      expect(expected.length, JSON.stringify(narrowing)).toBeGreaterThan(0);
      expect(ids(found), JSON.stringify(narrowing)).toEqual(ids(expected));
    }
  });

  it('narrows the webhook deliveries by each filter', async () => {
    const cases: [Partial<LedgerFilter>, (d: (typeof deliveries)[number]) => boolean][] = [
      [{}, () => true],
      [{ outcome: 'delivered' }, (d) => d.outcome === 'delivered'],
      [{ httpStatus: 500 }, (d) => d.httpStatus === 500],
      [{ institution: { idType: 'hci', id: 'S1234A' } }, (d) => d.subscriptionId === subscriptionA],
      [{ referralId: referrals[2]?.id ?? '' }, (d) => d.referralId === referrals[2]?.id],
      [
        { offering: 'cgh-gastro' },
        (d) => referrals.find((r) => r.id === d.referralId)?.offering === 'cgh-gastro',
      ],
      [{ from: at(21), to: at(24) }, (d) => d.minute >= 21 && d.minute < 24],
    ];
    for (const [narrowing, keep] of cases) {
      const found = await all('webhooks', { ...range, ...narrowing });
      const expected = deliveries.filter(keep);
      expect(expected.length, JSON.stringify(narrowing)).toBeGreaterThan(0);
      expect(ids(found), JSON.stringify(narrowing)).toEqual(ids(expected));
    }
    expect(await all('webhooks', { ...range, errorCode: 'ECONNRESET' })).toEqual([]);
  });

  it('pages by keyset: every row exactly once, in time then ID order, rows sharing a time included', async () => {
    const filter = checkedLedgerFilter({ from: range.from.toISOString(), to: range.to.toISOString() });
    for (const ledger of ['forwards', 'webhooks'] as const) {
      const seen: LedgerRow[] = [];
      let after: string | undefined;
      let pages = 0;
      do {
        const page = await t.ctx.ledgerSearch.page(ledger, filter, after, 3);
        seen.push(...page.rows);
        after = page.next;
        pages += 1;
      } while (after !== undefined && pages < 100);
      const expected = ledger === 'forwards' ? forwards : deliveries;
      expect(seen).toHaveLength(expected.length);
      expect(new Set(seen.map((r) => r.id)).size).toBe(expected.length);
      const order = seen.map((r) => [r.attemptedAt.getTime(), r.id] as const);
      expect(order).toEqual([...order].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1)));
    }
    await expect(t.ctx.ledgerSearch.page('forwards', filter, 'not-a-cursor', 3)).rejects.toMatchObject({
      status: 400,
      errors: [{ path: 'after' }],
    });
  });

  it('refuses an unbounded search, naming the field', () => {
    expect(() => checkedLedgerFilter({ to: range.to.toISOString() })).toThrow(/from is required/);
    expect(() => checkedLedgerFilter({ from: range.from.toISOString() })).toThrow(/to is required/);
  });

  it('exports NDJSON and CSV that read back as the rows', async () => {
    const filter = { ...range };
    const rows = await all('forwards', filter);
    const lines = async (format: 'ndjson' | 'csv') => {
      let text = '';
      for await (const line of t.ctx.ledgerSearch.exportLines('forwards', filter, format)) text += line;
      return text;
    };
    const expected = rows.map((r) => {
      const row = r as unknown as Record<string, unknown>;
      return Object.fromEntries(
        EXPORT_COLUMNS.forwards.map((c) => {
          const value = row[c];
          return [c, value instanceof Date ? value.toISOString() : (value as string | number | null)];
        }),
      );
    });
    const ndjson = (await lines('ndjson'))
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
    expect(ndjson).toEqual(expected);

    // PostgreSQL's CSV parser reads the file back, every column as text.
    const csv = await lines('csv');
    const pg = new PGlite();
    try {
      const columns = EXPORT_COLUMNS.forwards.map((c) => `"${c}" text`).join(', ');
      await pg.exec(`create table back (${columns})`);
      await pg.query(`copy back from '/dev/blob' with (format csv, header match)`, [], {
        blob: new Blob([csv]),
      });
      const back = await pg.query<Record<string, string | null>>('select * from back');
      expect(back.rows).toEqual(
        expected.map((e) =>
          Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v === null ? null : `${v}`])),
        ),
      );
    } finally {
      await pg.close();
    }
    // A fresh PGlite (PostgreSQL's CSV parser) starts in seconds, longer on a busy machine.
  }, 120_000);

  // `refhub ledger search` as commander hands it the flags: strings, checked here.
  it('refhub ledger search: the flags as typed, to stdout or a file, and each bad flag named', async () => {
    const deps = { ledgerSearch: t.ctx.ledgerSearch };
    const flags = { from: range.from.toISOString(), to: range.to.toISOString() };
    let printed = '';
    const stdout = new Writable({
      write(chunk: Buffer, _encoding, done) {
        printed += chunk.toString('utf8');
        done();
      },
    });
    await searchLedger(deps, 'forwards', { ...flags, status: '503' }, stdout);
    const ids = printed
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { id: string }).id);
    expect(ids.sort()).toEqual(
      forwards
        .filter((f) => f.httpStatus === 503)
        .map((f) => f.id)
        .sort(),
    );

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-ledger-'));
    try {
      const out = path.join(dir, 'failed.csv');
      await searchLedger(deps, 'forwards', { ...flags, outcome: 'failed', format: 'csv', out });
      const records = fs.readFileSync(out, 'utf8').trimEnd().split('\r\n');
      expect(records[0]).toBe(EXPORT_COLUMNS.forwards.join(','));
      expect(records).toHaveLength(1 + forwards.filter((f) => f.outcome === 'failed').length);
      // Only its owner reads the export: it names referrals and their deliveries.
      expect(fs.statSync(out).mode & 0o777).toBe(0o600);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }

    await expect(searchLedger(deps, 'forwards', { to: flags.to }, stdout)).rejects.toThrow(/--from/);
    await expect(searchLedger(deps, 'forwards', { ...flags, status: 'teapot' }, stdout)).rejects.toThrow(
      /--status/,
    );
    await expect(searchLedger(deps, 'webhooks', { ...flags, format: 'xml' }, stdout)).rejects.toThrow(
      /--format must be ndjson or csv/,
    );
    expect(() => ledgerArg('invoices')).toThrow(/expected forwards or webhooks/);
  });

  /** What a replay may change: the referrals' forwarding columns, the outbox, the ledgers, the audit. */
  const snapshot = async () => ({
    referrals: await t.ctx.db
      .selectFrom('referrals')
      .select(['id', 'ehr_state', 'ehr_due_version', 'ehr_attempts', 'ehr_replay_of'])
      .orderBy('id')
      .execute(),
    outbox: await t.ctx.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirst(),
    audit: await t.ctx.db
      .selectFrom('audit_events')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirst(),
    replays: await t.ctx.db.selectFrom('ledger_replays').selectAll().execute(),
    jobs: await t.ctx.queues.queues.webhooks.getJobCounts(),
  });

  it('replays forwards: a dry run changes nothing; the replay skips what the EHR acknowledged and links the rest', async () => {
    const [failed, acknowledged, queued] = referrals;
    if (failed === undefined || acknowledged === undefined || queued === undefined) throw new Error('seed');
    // The first referral's forward failed for good; the EHR accepted the second's version since; the
    // third is queued again already.
    const set = async (id: string, change: { ehr_state: string; ehr_forwarded_version?: number }) =>
      t.ctx.db.updateTable('referrals').set(change).where('id', '=', id).execute();
    await set(failed.id, { ehr_state: 'failed' });
    await set(acknowledged.id, { ehr_state: 'forwarded', ehr_forwarded_version: acknowledged.version });
    await set(queued.id, { ehr_state: 'queued' });
    const filter: LedgerFilter = { ...range, outcome: 'failed', offering: 'cgh-gastro' };
    const gastro = { ...range, offering: 'cgh-gpfirst' };

    const before = await snapshot();
    const dry = await t.ctx.ledgerSearch.dryRun('forwards', { ...range, outcome: 'failed' });
    expect(await snapshot()).toEqual(before);
    const failedRow = forwards.find((f) => f.referralId === failed.id && f.outcome === 'failed');
    expect(dry.matched).toBe(forwards.filter((f) => f.outcome === 'failed').length);
    expect(dry.candidates.find((c) => c.skip === undefined)).toEqual({
      attemptId: failedRow?.id,
      referralId: failed.id,
      version: failed.version,
      lastOutcome: 'failed',
    });
    expect(dry.skipped).toEqual({ acknowledged: 1, 'not-failed': 2 });
    expect(dry.replay).toBe(1);

    // The acknowledged referral's own offering: everything skipped, nothing changes.
    const none = await t.ctx.ledgerSearch.replay('forwards', gastro, operator('none'));
    expect(none.replay).toBe(0);
    expect(none.skipped).toEqual({ acknowledged: 3 });

    const done = await t.ctx.ledgerSearch.replay('forwards', filter, operator('gastro'), () => undefined);
    expect(done.replay).toBe(1);
    const row = await t.ctx.db
      .selectFrom('referrals')
      .select(['ehr_state', 'ehr_replay_of', 'ehr_due_version'])
      .where('id', '=', failed.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      ehr_state: 'queued',
      ehr_replay_of: failedRow?.id,
      ehr_due_version: failed.version,
    });
    const outbox = await t.ctx.db
      .selectFrom('outbox')
      .select(['topic', 'referral_id'])
      .where('request_id', '=', 'gastro')
      .execute();
    expect(outbox).toEqual([{ topic: 'ehr-forward-again', referral_id: failed.id }]);

    // The worker's next attempt names the attempt it repeats; the one that settles the forward ends it.
    await t.ctx.ehrForwarding.recordAttempt({
      referralId: failed.id,
      messageId: `${failed.id}.v${failed.version}`,
      version: failed.version,
      attempt: 1,
      startedAt: at(50),
      durationMs: 4,
      sha256: null,
      outcome: 'delivered',
      httpStatus: 201,
      errorCode: null,
      reference: 'EHR-1',
      requestId: 'gastro',
    });
    const latest = (await ehrSubmissionRepository(t.ctx.db).list(failed.id)).find(
      (s) => s.outcome === 'delivered',
    );
    expect(latest).toMatchObject({ outcome: 'delivered', replayOf: failedRow?.id });
    const after = await t.ctx.db
      .selectFrom('referrals')
      .select(['ehr_state', 'ehr_replay_of'])
      .where('id', '=', failed.id)
      .executeTakeFirstOrThrow();
    expect(after).toEqual({ ehr_state: 'forwarded', ehr_replay_of: null });
    // Replayed again, it is acknowledged now.
    const again = await t.ctx.ledgerSearch.dryRun('forwards', filter);
    expect(again.replay).toBe(0);

    // Audited and recorded: who, the filter, the counts.
    const audit = await t.ctx.db
      .selectFrom('audit_events')
      .select(['action', 'referral_ids', 'requester_identifier'])
      .where('request_id', '=', 'gastro')
      .orderBy('seq')
      .execute();
    expect(audit.map((a) => a.action)).toEqual([
      'ehr.forward.replay',
      'ledger.replay.forwards',
      'ehr.forward.delivered',
    ]);
    expect(audit[1]).toMatchObject({ referral_ids: [failed.id], requester_identifier: 'dr.ops' });
    const record = await t.ctx.db
      .selectFrom('ledger_replays')
      .selectAll()
      .where('request_id', '=', 'gastro')
      .executeTakeFirstOrThrow();
    expect(record).toMatchObject({
      ledger: 'forwards',
      requester_identifier: 'dr.ops',
      matched: done.matched,
      replayed: 1,
      filter: {
        from: range.from.toISOString(),
        to: range.to.toISOString(),
        outcome: 'failed',
        offering: 'cgh-gastro',
      },
      skipped: done.skipped,
    });
  });

  it('replays webhook deliveries on the webhooks queue, skipping those the receiver took', async () => {
    const filter: LedgerFilter = { ...range, from: at(21), to: at(25) };
    const before = await snapshot();
    const dry = await t.ctx.ledgerSearch.dryRun('webhooks', filter);
    expect(await snapshot()).toEqual(before);
    const expected = deliveries.filter((d) => d.minute >= 21 && d.minute < 25 && d.outcome === 'failed');
    expect(dry.replay).toBe(expected.length);
    expect(dry.skipped).toEqual({
      acknowledged: deliveries.filter((d) => d.minute >= 21 && d.minute < 25).length - expected.length,
    });

    const done = await t.ctx.ledgerSearch.replay('webhooks', filter, operator('hooks'));
    expect(done.replay).toBe(expected.length);
    const jobs = await t.ctx.queues.queues.webhooks.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(
      jobs
        .map((j) => ({
          eventId: j.data.eventId,
          subscriptionId: j.data.subscriptionId,
          replayOf: j.data.replayOf,
        }))
        .sort((a, b) => (a.replayOf ?? '').localeCompare(b.replayOf ?? '')),
    ).toEqual(
      expected
        .map((d) => ({ eventId: d.eventId, subscriptionId: d.subscriptionId, replayOf: d.id }))
        .sort((a, b) => a.replayOf.localeCompare(b.replayOf)),
    );
    // A disabled subscription's deliveries are skipped.
    await t.ctx.db
      .updateTable('webhook_subscriptions')
      .set({ disabled_at: at(40), disabled_reason: 'failing' })
      .execute();
    const disabled = await t.ctx.ledgerSearch.dryRun('webhooks', filter);
    expect(disabled.skipped['subscription-disabled']).toBe(expected.length);
  });

  function operator(requestId: string) {
    return { requestId, apiKeyId: null, system: null, requester: 'dr.ops' };
  }
});
