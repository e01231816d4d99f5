// GET /doctor: a serving process's own checks and effective settings, for `refhub doctor --server`.
// Ops keys only (401 without a key or with an unknown one, 403 for other roles), on the API and on a
// worker's ops app, and no configured secret ever appears in what it sends.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpsApp } from '../../../src/api/ops-app.ts';
import { ENGINES } from '../../support/engines.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { basic } from '../../support/ops-client.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const SECRETS = {
  EHR_TOKEN: `ehr-token-${randomUUID()}`,
  SESSION_SECRET: `session-secret-${randomUUID()}`,
  METRICS_TOKEN: `metrics-token-${randomUUID()}`,
};
const DATABASE_PASSWORD = `db-password-${randomUUID()}`;
const EHR_QUERY_TOKEN = `query-token-${randomUUID()}`;
const SECRET_VALUES = [...Object.values(SECRETS), DATABASE_PASSWORD, EHR_QUERY_TOKEN];

interface Report {
  pid: number;
  store: string;
  checks: { name: string; status: string; detail: string }[];
  configuration: { variable: string; secret: boolean; set: boolean; value?: string }[];
}

describe.each(ENGINES)('GET /doctor on %s', (engine) => {
  let t: TestApp;
  let worker: FastifyInstance;

  beforeAll(async () => {
    t = await createTestApp(engine, {
      env: {
        ...SECRETS,
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: `doctor-${randomUUID()}`,
        // The settings this process shows; its store is the test's, whatever DATABASE_URL says.
        DATABASE_URL: `postgres://refhub:${DATABASE_PASSWORD}@db.internal:5432/refhub`,
        EHR_URL: `http://127.0.0.1:4010/ehr?token=${EHR_QUERY_TOKEN}`,
      },
    });
    worker = await buildOpsApp(t.ctx);
  });
  afterAll(async () => {
    await worker.close();
    await t.close();
  });

  const get = (app: FastifyInstance, authorization?: string) =>
    app.inject({
      method: 'GET',
      url: '/doctor',
      headers: authorization === undefined ? {} : { authorization },
    });

  it('needs an ops key: 401 without one or with an unknown one, 403 for a sender or provider key', async () => {
    for (const app of [t.app, worker]) {
      const none = await get(app);
      expect(none.statusCode).toBe(401);
      expect(none.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(none.headers['www-authenticate']).toMatch(/^Basic realm="refhub ops"/);
      expect((await get(app, `ApiKey rfh_test_${'x'.repeat(43)}`)).statusCode).toBe(401);
      expect((await get(app, basic(`rfh_test_${'y'.repeat(43)}`))).statusCode).toBe(401);
      for (const who of [t.sender, t.provider]) {
        const refused = await get(app, `ApiKey ${who.key}`);
        expect(refused.statusCode).toBe(403);
        expect(refused.json()).toMatchObject({ code: 'forbidden_role' });
        expect(refused.body).not.toContain('EHR_URL');
      }
    }
  });

  it("reports this process's checks and effective settings to an ops key, on the API and on a worker", async () => {
    for (const app of [t.app, worker]) {
      for (const authorization of [`ApiKey ${t.ops.key}`, basic(t.ops.key)]) {
        const res = await get(app, authorization);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.headers['cache-control']).toBe('no-store');
        const report = res.json<Report>();
        expect(report.pid).toBe(process.pid);
        expect(report.store).toBe(engine);
        const status = Object.fromEntries(report.checks.map((c) => [c.name, c.status]));
        expect(Object.keys(status)).toEqual(
          engine === 'pglite'
            ? ['pglite lock', 'database', 'migrations', 'redis', 'ehr url', 'scanner', 'pdf checker']
            : [
                'database',
                'migrations',
                'postgres fsync',
                'postgres synchronous_commit',
                'postgres full_page_writes',
                'redis',
                'ehr url',
                'scanner',
                'pdf checker',
              ],
        );
        for (const name of ['database', 'migrations', 'redis', 'ehr url', 'pdf checker'])
          expect(status[name]).toBe('passed');
        expect(report.checks.find((c) => c.name === 'pdf checker')?.detail).toMatch(
          /^qpdf version \d+\.\d+\.\d+ at qpdf reads PDFs whole$/,
        );
        expect(report.checks.find((c) => c.name === 'ehr url')?.detail).toBe(
          'http://127.0.0.1:4010 is not https',
        );
        const setting = (variable: string) => report.configuration.find((s) => s.variable === variable);
        expect(setting('EHR_URL')).toEqual({
          variable: 'EHR_URL',
          secret: false,
          set: true,
          value: 'http://127.0.0.1:4010/ehr?token=***',
        });
        expect(setting('DATABASE_URL')?.value).toBe('postgres://refhub:***@db.internal:5432/refhub');
        for (const variable of Object.keys(SECRETS)) {
          expect(setting(variable)).toEqual({ variable, secret: true, set: true });
        }
        expect(setting('NODE_ENV')?.value).toBe('test');
        for (const value of SECRET_VALUES) expect(res.body).not.toContain(value);
      }
    }
  });

  it('is not in the OpenAPI document, like the other ops routes', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, unknown>;
    }>();
    expect(Object.keys(document.paths)).not.toContain('/doctor');
    expect(Object.keys(document.paths)).not.toContain('/metrics');
  });
});
