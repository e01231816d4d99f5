// The EHR bridge for tests: the real application on a test store, with the outbox relay, the workers
// and the reconciler running against real Redis under a queue prefix of its own, forwarding to a
// sandbox EHR that runs as a separate process.
import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Engine } from '../../src/db/database.ts';
import { testDatabaseUrl } from './engines.ts';
import { queueKeyPrefix } from '../../src/queue/prefix-claim.ts';
import { QUEUE_NAMES, type QueuePayloads } from '../../src/queue/registry.ts';
import { startBackground, type Background } from '../../src/composition/background.ts';
import { forwardBackoff } from '../../src/workers/forwarding/forward-policy.ts';
import { startSandboxEhrProcess, type SandboxEhrProcess } from './sandbox-ehr-process.ts';
import { call, createDraft } from './scenarios.ts';
import { createTestApp, type TestApp, type TestAppOptions } from './test-app.ts';

import { testRedisUrl } from './servers.ts';

export { testRedisUrl };

export interface BridgeApp extends TestApp {
  readonly prefix: string;
  readonly ehr: SandboxEhrProcess;
  /** Starts the relay, workers and reconciler (tests may act before the background runs). */
  startBackground(options?: { reconcileEveryMs?: number }): Background;
  readonly background: Background | undefined;
  /** Stops the background now (once: `close()` then leaves it alone), for a test that needs work left due. */
  stopBackground(): Promise<void>;
  /**
   * How long a forward may take once its job runs, by the app's settings: every attempt to its
   * deadline (EHR_ATTEMPT_TIMEOUT_SECONDS) and the longest backoff after it (EHR_MAX_ATTEMPTS,
   * EHR_BACKOFF_BASE_MS). A wait for a delivery is bounded by this, not by a guess at the machine's speed.
   */
  readonly forwardWithinMs: number;
  /** Every key under this app's queue prefix, as text: for searching Redis for patient data. */
  redisDump(): Promise<string>;
}

export interface QueueApp extends TestApp {
  /** The bare queue prefix (QUEUE_PREFIX); each queue's keys are under `{prefix:<queue>}`. */
  readonly prefix: string;
}

/**
 * The application on real Redis under a queue prefix of its own, with no background running: for
 * tests that drive the relay, the producer and the reconciler themselves. Closing it removes its
 * queues.
 */
export async function createQueueApp(engine: Engine, options: TestAppOptions = {}): Promise<QueueApp> {
  const prefix = `test-${randomUUID()}`;
  const t = await createTestApp(engine, {
    ...options,
    env: { REDIS_URL: testRedisUrl(), QUEUE_PREFIX: prefix, ...options.env },
  });
  return {
    ...t,
    prefix,
    async close() {
      await Promise.all(QUEUE_NAMES.map((name) => t.ctx.queues.queues[name].obliterate({ force: true })));
      await t.ctx.releaseQueues();
      await t.close();
    },
  };
}

/**
 * A worker on one of the app's queues that takes jobs by hand (BullMQ's manual processing), so a test
 * can hold a job in the active state, or finish it, the way a running worker would.
 */
export function manualWorker<Q extends keyof QueuePayloads>(
  t: TestApp,
  queue: Q,
): {
  readonly worker: Worker<QueuePayloads[Q]>;
  close(): Promise<void>;
} {
  const connection = new Redis(t.ctx.config.redisUrl, { maxRetriesPerRequest: null });
  const worker = new Worker<QueuePayloads[Q]>(queue, null, {
    connection,
    prefix: queueKeyPrefix(t.ctx.config.queuePrefix, queue),
    autorun: false,
  });
  return {
    worker,
    async close() {
      await worker.close();
      connection.disconnect();
    },
  };
}

/** A worker on the app's forward queue that takes jobs by hand (see manualWorker). */
export const manualForwardWorker = (t: TestApp) => manualWorker(t, 'ehr-forward');

/** A sandbox EHR process, shared by the tests of one file. */
export function startEhr(): Promise<SandboxEhrProcess> {
  return startSandboxEhrProcess();
}

export async function createBridgeApp(
  engine: Engine,
  ehr: SandboxEhrProcess,
  options: TestAppOptions = {},
): Promise<BridgeApp> {
  const prefix = `test-${randomUUID()}`;
  // A test that stops or flushes Redis gives the app a server of its own through REDIS_URL.
  const redisUrl = options.env?.REDIS_URL ?? testRedisUrl();
  const t = await createTestApp(engine, {
    ...options,
    env: {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      EHR_URL: ehr.url,
      EHR_BACKOFF_BASE_MS: '20',
      ...options.env,
    },
  });
  let background: Background | undefined;
  const inspector = new Redis(redisUrl, { lazyConnect: true });
  return {
    ...t,
    prefix,
    ehr,
    forwardWithinMs: forwardBoundMs(t.ctx.config),
    get background() {
      return background;
    },
    startBackground(opts = {}) {
      background ??= startBackground(t.ctx, {
        ehrUrl: ehr.url,
        reconcileEveryMs: opts.reconcileEveryMs ?? 3_600_000,
      });
      return background;
    },
    async stopBackground() {
      const running = background;
      background = undefined;
      await running?.stop();
    },
    async redisDump() {
      // The claim under `{prefix}`, each queue under `{prefix:<queue>}`.
      const keys = await inspector.keys(`{${prefix}[}:]*`);
      const parts: string[] = [];
      for (const key of keys) {
        const type = await inspector.type(key);
        const value =
          type === 'string'
            ? await inspector.get(key)
            : type === 'hash'
              ? await inspector.hgetall(key)
              : type === 'list'
                ? await inspector.lrange(key, '0', '-1')
                : type === 'set'
                  ? await inspector.smembers(key)
                  : type === 'zset'
                    ? await inspector.zrange(key, '0', '-1')
                    : type === 'stream'
                      ? await inspector.xrange(key, '-', '+')
                      : null;
        parts.push(key, JSON.stringify(value));
      }
      return parts.join('\n');
    },
    async close() {
      await background?.stop();
      await Promise.all(QUEUE_NAMES.map((name) => t.ctx.queues.queues[name].obliterate({ force: true })));
      await t.ctx.releaseQueues();
      inspector.disconnect();
      await t.close();
    },
  };
}

/** The time every attempt of one forward may take, to its deadline and the longest backoff after it. */
function forwardBoundMs(config: {
  readonly ehrMaxAttempts: number;
  readonly ehrAttemptTimeoutSeconds: number;
  readonly ehrBackoffBaseMs: number;
}): number {
  const longestBackoff = forwardBackoff(config.ehrBackoffBaseMs, () => 1);
  let total = 0;
  for (let attempt = 1; attempt <= config.ehrMaxAttempts; attempt += 1) {
    total += config.ehrAttemptTimeoutSeconds * 1000 + longestBackoff(attempt);
  }
  return total;
}

/** Polls `probe` until it returns a value that is not undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) expect.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Creates and submits `count` referrals through the API, `concurrency` at a time, as clinic systems
 * do; every request must succeed. `fields(i)` adds to the i-th draft. Returns the IDs in order.
 */
export async function submitReferrals(
  t: TestApp,
  count: number,
  options: { concurrency?: number; fields?: (index: number) => Record<string, unknown> } = {},
): Promise<string[]> {
  const concurrency = options.concurrency ?? 10;
  const ids: string[] = [];
  for (let start = 0; start < count; start += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, count - start) }, (_, k) => start + k);
    ids.push(
      ...(await Promise.all(
        batch.map(async (index) => {
          const draft = await createDraft(t, options.fields?.(index) ?? {});
          await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
          return draft.id;
        }),
      )),
    );
  }
  return ids;
}

/** How many of `ids` are in each forwarding state (`ehrForwarding.state`), read from the store. */
export async function forwardingStates(t: TestApp, ids: readonly string[]): Promise<Record<string, number>> {
  const rows = await t.ctx.db
    .selectFrom('referrals')
    .select('ehr_state')
    .where('id', 'in', [...ids])
    .execute();
  const counts: Record<string, number> = {};
  for (const { ehr_state: state } of rows) counts[state] = (counts[state] ?? 0) + 1;
  return counts;
}

/** The PostgreSQL URL of the test app's own database, for processes started beside it. */
export async function databaseUrlOf(t: TestApp): Promise<string> {
  const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(t.ctx.db);
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${rows[0]?.name ?? ''}`;
  return url.toString();
}
