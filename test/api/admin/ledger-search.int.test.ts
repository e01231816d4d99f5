// The /admin/ledger page on the real app: the search form renders for a signed-in operator, a search
// of a day renders its table, and a search without `from` is refused with problem+json naming it.
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { opsGet } from '../../support/ops-client.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

describe.each(APP_ENGINES)('the ledger search page on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  it('renders the search form, and a day searched', async () => {
    const form = await opsGet(t, '/admin/ledger');
    expect(form.statusCode).toBe(200);
    expect(String(form.headers['content-type'])).toContain('text/html');
    const $ = cheerio.load(form.body);
    expect($('form input[name="from"]').length).toBe(1);
    expect($('form input[name="to"]').length).toBe(1);

    const day = await opsGet(
      t,
      '/admin/ledger?ledger=forwards&from=2026-01-05T00:00:00Z&to=2026-01-06T00:00:00Z',
    );
    expect(day.statusCode).toBe(200);
    expect(String(day.headers['content-type'])).toContain('text/html');
  });

  it('refuses a search without from, naming it', async () => {
    const res = await opsGet(t, '/admin/ledger?ledger=forwards&to=2026-01-06T00:00:00Z');
    expect(res.statusCode).toBe(400);
    expect(String(res.headers['content-type'])).toContain('application/problem+json');
    const paths = res.json<{ errors: { path: string }[] }>().errors.map((e) => e.path);
    expect(paths).toContain('from');
  });
});
