// A reconciler pass that fails says why in its log line: the error's kind, code and message, so that
// an operator can act on it; a database's message, which may quote stored values, is left out, and
// its SQLSTATE code says what failed. Runs on in-memory PGlite, against a Redis port nobody serves.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import { createLogger } from '../../src/logger.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { redisQueueBackend } from '../../src/queue/backend.ts';
import { createQueueProducer } from '../../src/queue/producer.ts';
import { createReconciler } from '../../src/queue/reconciler.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { eventually } from '../support/bridge.ts';
import { openTestStore } from '../support/engines.ts';
import { freePort } from '../support/free-port.ts';
import { storesOf } from '../support/stores.ts';

describe('a failed reconciler pass', () => {
  let store: Store;
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger(
    { logLevel: 'info', env: 'test' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    }),
  );
  beforeAll(async () => {
    store = await openTestStore('pglite');
  });
  afterAll(async () => {
    await store.close();
  });

  const failures = () => lines.filter((l) => l.msg === 'reconciler run failed; it will run again');

  /** Runs passes until one fails; with `claimed`, each pass first claims the queues in Redis. */
  const runUntilFailed = async (claimed = false) => {
    lines.length = 0;
    const backend = redisQueueBackend(
      { redisUrl: `redis://127.0.0.1:${await freePort()}`, queuePrefix: `{test-${randomUUID()}}` },
      'producer',
      logger,
    );
    const reconciler = createReconciler({
      stores: storesOf(store.db),
      clock: systemClock,
      logger,
      producer: createQueueProducer(
        { ehrMaxAttempts: 3, webhookRetryScheduleMs: [] },
        backend,
        storesOf(store.db).forwarding.backlog,
        logger,
      ),
      metrics: createMetrics(),
      reminderScheduleFor: () => Promise.resolve(null),
      ...(claimed ? { claim: () => backend.claim(randomUUID(), 60_000) } : {}),
    });
    reconciler.start(10);
    try {
      return await eventually('a failed pass logged', () => Promise.resolve(failures()[0]));
    } finally {
      await reconciler.stop();
      await backend.close();
    }
  };

  it('logs the message and code of an error of its own work', async () => {
    const line = await runUntilFailed(true);
    expect(line.level).toBe(40);
    expect(line.failure).toEqual({
      type: 'Error',
      code: 'QUEUE_UNAVAILABLE',
      message: 'the queues are unavailable (Redis cannot be reached)',
    });
  });

  it('logs a database error’s SQLSTATE code, and not its message, which may quote stored values', async () => {
    await sql`ALTER TABLE referrals RENAME TO referrals_away`.execute(store.db);
    try {
      const line = await runUntilFailed();
      expect(line.failure).toEqual({
        type: 'error',
        code: '42P01',
        withheld: 'a database error quotes values',
      });
    } finally {
      await sql`ALTER TABLE referrals_away RENAME TO referrals`.execute(store.db);
    }
  });
});
