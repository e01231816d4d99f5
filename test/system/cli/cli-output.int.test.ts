// What the operator's commands print, spawned as operators run them: listings with a header and an
// explicit message when empty, counts in the right number, an ops key shown as the operators', and
// a progress line on a terminal (a pseudo-terminal from `script`) that a pipe never sees.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { KEYS_HEADER } from '../../../src/cli/api-key.command.ts';
import { WEBHOOKS_HEADER } from '../../../src/cli/webhooks.command.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { describeRun, runRefhub, type CliResult } from '../../support/refhub-cli.ts';
import { call, createDraft } from '../../support/scenarios.ts';
import { createTestApp } from '../../support/test-app.ts';
import { openTestStore } from '../../support/engines.ts';
import { createCatalogService } from '../../../src/services/catalog/catalog.service.ts';
import { createStores } from '../../../src/db/stores.ts';
import { testDataKeys } from '../../support/data-keys.ts';
import { DEMO_CATALOG_FILE } from '../../../src/composition/demo-setup.ts';

const QUEUE_PREFIX = `cli-output-${randomUUID()}`;
const REDRAW = '\r\x1b[2K';

afterAll(async () => {
  const redis = new Redis(testRedisUrl());
  const keys = await redis.keys(`{${QUEUE_PREFIX}[}:]*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

// Each spawn of refhub costs seconds, and more on a busy machine.
describe('refhub command output', { timeout: 600_000 }, () => {
  it.concurrent(
    'lists keys and webhook subscriptions with a header, and says when there are none',
    async () => {
      let databaseUrl = '';
      const store = await openTestStore('postgres', {
        reach: (url) => {
          databaseUrl = url.toString();
          return url;
        },
      });
      try {
        const env = {
          DATABASE_URL: databaseUrl,
          DATA_DIR: os.tmpdir(),
          REDIS_URL: testRedisUrl(),
          QUEUE_PREFIX,
        };
        const cli = async (args: string[]): Promise<CliResult> => {
          const r = await runRefhub(args, env);
          expect(r.code, describeRun(args, r)).toBe(0);
          return r;
        };
        const [keys, webhooks, retry] = await Promise.all([
          cli(['keys', 'list']),
          cli(['webhooks', 'list']),
          cli(['forwards', 'retry', '--all-failed']),
        ]);
        expect(keys.stdout).toBe('No API keys.\n');
        expect(webhooks.stdout).toBe('No webhook subscriptions.\n');
        expect(retry.stdout).toBe('No failed forwards: nothing was queued again.\n');

        await createCatalogService({ stores: createStores(store.db, testDataKeys()) }).loadFile(
          DEMO_CATALOG_FILE,
        );
        const [ops] = await Promise.all([
          cli(['keys', 'create', '--system', 'HAS', '--role', 'ops', '--label', 'night shift']),
          cli(['keys', 'create', '--system', 'HAS', '--role', 'sender', '--institution', 'hci:S1234A']),
        ]);
        expect(ops.stdout).toMatch(
          /^Created ops key [0-9a-f-]{36} \(rfh_test_\w{8}…\) for refhub's operators\.$/m,
        );
        const listed = (await cli(['keys', 'list'])).stdout.split('\n').filter((line) => line !== '');
        expect(listed[0]).toBe(KEYS_HEADER);
        expect(listed[0]).toBe('ID\tPREFIX\tROLE\tSYSTEM\tINSTITUTIONS\tSTATE\tLABEL');
        expect(listed).toHaveLength(3);
        expect(listed.find((l) => l.includes('\tops\t'))).toMatch(
          /\tops\toperators\t-\tactive\tnight shift$/,
        );
        expect(listed.find((l) => l.includes('\tsender\t'))).toMatch(/\tsender\tHAS\thci:S1234A\tactive\t$/);
        expect(WEBHOOKS_HEADER).toBe('ID\tINSTITUTION\tSTATE\tFAILING SINCE\tHOST');
      } finally {
        await store.close();
      }
    },
  );

  it.concurrent('counts in the right number, and shows progress on a terminal only', async () => {
    let databaseUrl = '';
    const t = await createTestApp('postgres', {
      env: { REDIS_URL: testRedisUrl(), QUEUE_PREFIX },
      store: {
        reach: (url) => {
          databaseUrl = url.toString();
          return url;
        },
      },
    });
    try {
      const startedAt = new Date(Date.now() - 60_000).toISOString();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const draft = await createDraft(t);
        await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
        ids.push(draft.id);
      }
      // The forwards failed for good (the EHR refused them); the operator has fixed the cause.
      await t.ctx.db.updateTable('referrals').set({ ehr_state: 'failed' }).where('id', 'in', ids).execute();
      const env = {
        DATABASE_URL: databaseUrl,
        DATA_DIR: os.tmpdir(),
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX,
      };

      const one = await runRefhub(['forwards', 'retry', ids[0] ?? ''], env);
      expect(one.code, describeRun(['forwards', 'retry'], one)).toBe(0);
      expect(one.stdout).toBe('Queued 1 failed forward again.\n');
      expect(one.stderr).toBe('');

      const onTerminal = await runRefhub(['forwards', 'retry', '--all-failed'], env, { terminal: true });
      expect(onTerminal.code, describeRun(['forwards', 'retry', '--all-failed'], onTerminal)).toBe(0);
      expect(onTerminal.stdout).toContain(`${REDRAW}Queueing failed forwards again: 2/2${REDRAW}`);
      expect(onTerminal.stdout).toContain('Queued 2 failed forwards again.\r\n');

      const since = ['webhooks', 'replay', '--since', startedAt];
      const [replayed, piped] = await Promise.all([
        runRefhub(since, env, { terminal: true }),
        runRefhub(since, env),
      ]);
      expect(replayed.code, describeRun(since, replayed)).toBe(0);
      // Three creates and three submits: six events, which no subscription may see.
      expect(replayed.stdout).toContain(`${REDRAW}Delivering events again: 6/6${REDRAW}`);
      expect(replayed.stdout).toContain(
        'No enabled subscription may see those 6 events: nothing was queued.\r\n',
      );
      expect(piped.code, describeRun(since, piped)).toBe(0);
      expect(piped.stdout).toBe('No enabled subscription may see those 6 events: nothing was queued.\n');
      expect(piped.stderr).toBe('');
    } finally {
      await t.close();
    }
  });
});
