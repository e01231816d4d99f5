// What the workers really log carries each key once. The background runs as `refhub worker` runs it
// (composition/background.ts: the workers with their child loggers), against a Redis server of this
// test's own and the sandbox EHR: a forward is delivered, a reminder sent, a job for a referral this
// installation does not have is refused, then Redis goes away and comes back, so each worker logs an
// outage and its end. Every line is read from its raw text, where a repeated key still shows.
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_NAMES } from '../../src/queue/registry.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../support/bridge.ts';
import { repeatedKeys } from '../support/json-keys.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';
import { call, createDraft } from '../support/scenarios.ts';

describe('the workers’ log lines', () => {
  let ehr: SandboxEhrProcess;
  let redis: RedisServer;
  let t: BridgeApp;

  beforeAll(async () => {
    [ehr, redis] = await Promise.all([startEhr(), startRedisServer()]);
    t = await createBridgeApp('postgres', ehr, {
      env: {
        REDIS_URL: redis.url,
        REMINDER_AFTER_SECONDS: '1',
        REMINDER_INTERVAL_SECONDS: '1',
        REMINDER_MAX: '1',
      },
    });
  });
  afterAll(async () => {
    if (!redis.running) await redis.start();
    await t.close();
    await Promise.all([redis.close(), ehr.stop()]);
  });

  const parsed = () => t.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
  const logged = (what: string, match: (line: Record<string, unknown>) => boolean) =>
    eventually(what, () => Promise.resolve(parsed().some(match) ? true : undefined), 60_000);

  it('carry no key twice, on jobs and through a Redis outage', async () => {
    const background = t.startBackground();
    await Promise.all(background.workers.map((worker) => worker.waitUntilReady()));

    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
    await logged('the forward', (l) => l.worker === 'ehr-forward' && l.referralId === draft.id);
    await logged('the reminder', (l) => l.worker === 'reminders' && l.msg === 'provider reminder sent');
    // A firing for a referral this installation does not have (another installation's job).
    await t.ctx.queues.queues.reminders.add('reminder', { referralId: uuidv7() }, { jobId: 'foreign-1' });
    await logged('the foreign job', (l) => l.worker === 'reminders' && l.jobId === 'foreign-1');

    // Each worker this background runs (the attachment scanner's only where a scanner is configured).
    const names = background.workers.map((worker) => worker.name);
    expect(names).toEqual(QUEUE_NAMES.filter((name) => name !== 'attachment-scan'));
    await redis.stop();
    for (const name of names) {
      await logged(`the ${name} worker's outage`, (l) => l.worker === name && l.outage === 'redis');
    }
    await redis.start();
    for (const name of names) {
      await logged(
        `the end of the ${name} worker's outage`,
        (l) => l.worker === name && l.outage === 'redis' && typeof l.failures === 'number',
      );
    }

    const repeats = t.logs.flatMap((line) => repeatedKeys(line).map((key) => `${key} in ${line}`));
    expect(repeats).toEqual([]);
  });
});
