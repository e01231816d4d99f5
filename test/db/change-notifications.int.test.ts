// Wake-ups on PostgreSQL: the triggers notify when an outbox row or a feed event commits (never for a
// rollback), the listener calls the channel's handler, comes back after its connection is cut, and
// calls every handler once it is back. Then an outbox relay that would poll only once an hour finds a
// new row at once, woken by the commit.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenForChanges, type ChangeListener } from '../../src/db/change-notifications.ts';
import { outboxRepository } from '../../src/db/outbox.repository.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { createOutboxRelay } from '../../src/queue/outbox-relay.ts';
import { createDraft } from '../support/scenarios.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

describe('change notifications on PostgreSQL', () => {
  let t: TestApp;
  /** The test database's own URL, as refhub reaches it. */
  let url = '';
  let referralId: string;

  beforeAll(async () => {
    t = await createTestApp('postgres', {
      store: {
        reach: (reached) => {
          url = reached.toString();
          return reached;
        },
      },
    });
    referralId = (await createDraft(t)).id;
  });
  afterAll(async () => {
    await t.close();
  });

  /** A raw connection of the test's own, for transactions it commits or rolls back by hand. */
  async function withClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  const outboxRow = (client: pg.Client) =>
    client.query(
      `INSERT INTO outbox (topic, referral_id, version, request_id, created_at, available_at)
       VALUES ('reminders', $1, 1, $2, now(), now() + interval '1 day')`,
      [referralId, randomUUID()],
    );

  function counting(name: string) {
    const counts = { outbox: 0, events: 0 };
    const listener = listenForChanges(
      url,
      { outbox: () => counts.outbox++, events: () => counts.events++ },
      { logger: t.ctx.logger, retryMs: 50, maxRetryMs: 200, applicationName: name },
    );
    return { counts, listener };
  }

  it('calls the handler of a channel when its change commits, and not for a rollback', async () => {
    const { counts, listener } = counting(`listener-${randomUUID()}`);
    try {
      // Once connected, every handler is called once, for what committed while nobody listened.
      await expect.poll(() => counts, { timeout: 10_000 }).toEqual({ outbox: 1, events: 1 });
      await withClient(async (client) => {
        await client.query('BEGIN');
        await outboxRow(client);
        await client.query('ROLLBACK');
        // Notifications arrive in commit order: this one marks the point after the rollback.
        await client.query(`SELECT pg_notify('refhub_events', '')`);
      });
      await expect.poll(() => counts.events, { timeout: 10_000 }).toBe(2);
      expect(counts.outbox).toBe(1);
      await withClient(async (client) => {
        await client.query('BEGIN');
        await outboxRow(client);
        await outboxRow(client);
        await client.query('COMMIT');
      });
      // Two rows in one transaction: one wake-up.
      await expect.poll(() => counts.outbox, { timeout: 10_000 }).toBe(2);
    } finally {
      await listener.close();
    }
  });

  it('listens again after its connection is cut, and wakes every handler when it is back', async () => {
    const name = `listener-${randomUUID()}`;
    const { counts, listener } = counting(name);
    try {
      await expect.poll(() => counts.outbox, { timeout: 10_000 }).toBe(1);
      const cut = await withClient(async (client) => {
        const result = await client.query(
          'SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE application_name = $1',
          [name],
        );
        return result.rows.length;
      });
      expect(cut).toBe(1);
      // Back: the catch-up wake, then a commit's own.
      await expect.poll(() => counts.events, { timeout: 10_000 }).toBe(2);
      await withClient(outboxRow);
      await expect.poll(() => counts.outbox, { timeout: 10_000 }).toBe(3);
    } finally {
      await listener.close();
    }
  });

  it('wakes an outbox relay, which finds a committed row long before its next poll', async () => {
    const dispatched: string[] = [];
    const relay = createOutboxRelay({
      stores: t.ctx.stores,
      clock: systemClock,
      logger: t.ctx.logger,
      idleMs: 3_600_000,
      handlers: {
        'ehr-forward': () => Promise.resolve(),
        'ehr-forward-again': () => Promise.resolve(),
        'attachment-scan': () => Promise.resolve(),
        reminders: (message) => {
          dispatched.push(message.id);
          return Promise.resolve();
        },
      },
    });
    await t.ctx.db.deleteFrom('outbox').execute();
    relay.start();
    let listener: ChangeListener | undefined;
    const woken = { count: 0 };
    try {
      listener = listenForChanges(
        url,
        {
          outbox: () => {
            woken.count++;
            relay.wake();
          },
        },
        { logger: t.ctx.logger, applicationName: `listener-${randomUUID()}` },
      );
      // Listening (its first wake-up is the catch-up), and the relay's first pass found nothing.
      await expect.poll(() => woken.count, { timeout: 10_000 }).toBe(1);
      await outboxRepository(t.ctx.db).add([
        { topic: 'reminders', referralId, version: 1, requestId: randomUUID(), at: new Date() },
      ]);
      await expect.poll(() => dispatched.length, { timeout: 10_000 }).toBe(1);
    } finally {
      await listener?.close();
      await relay.stop();
    }
  });
});
