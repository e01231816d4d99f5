// The web form shows, in the choice of service, how soon each service usually accepts a referral
// ("Usually accepted within 3 days": the p90 of submit → accepted rounded up to whole days) once its
// wait times have enough referrals, and nothing for a service without enough, or before they were
// computed. On both engines.
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { windowEndingAt } from '../../../src/domain/wait-times.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import {
  expectedFigures,
  days,
  percentile,
  plannedReferrals,
  seedReferrals,
  setClock,
} from '../../support/wait-times.ts';
import { getPage, newFormSession, type WebSession } from '../../support/web.ts';

const NOW = new Date('2031-09-01T01:00:00.000Z');

describe.each(APP_ENGINES)('wait times in the web form on %s', (engine) => {
  let t: TestApp;
  const clock = setClock(NOW);
  const plans = plannedReferrals('cgh-gastro', NOW, 12, 3);
  let session: WebSession;

  beforeAll(async () => {
    t = await createTestApp(engine, { clock, env: { WAIT_TIMES_MIN_REFERRALS: '6' } });
    await seedReferrals(t, clock, plans);
    clock.set(NOW);
    session = await newFormSession(t, { offeringId: 'cgh-gastro' });
  }, 120_000);
  afterAll(async () => {
    await t.close();
  });

  async function hints(): Promise<Record<string, string>> {
    const res = await getPage(t, session);
    expect(res.statusCode, res.body).toBe(200);
    const $ = cheerio.load(res.body);
    const found: Record<string, string> = {};
    $('input[name="offeringId"]').each((_i, input) => {
      const hint = $(input).closest('.option').find('.option__wait');
      if (hint.length > 0) found[String($(input).attr('value'))] = hint.text();
    });
    return found;
  }

  it('shows no hint before the wait times were computed', async () => {
    expect(await hints()).toEqual({});
  });

  it('shows the hint for a service with enough data, and none for the others', async () => {
    await t.ctx.waitTimes.recompute();
    const expected = expectedFigures(plans, 'cgh-gastro', windowEndingAt(NOW, 180));
    expect(expected.acceptedSeconds.length).toBeGreaterThanOrEqual(6);
    const within = Math.max(1, Math.ceil(days(percentile(expected.acceptedSeconds, 0.9))));
    expect(await hints()).toEqual({
      'cgh-gastro': `Usually accepted within ${within} ${within === 1 ? 'day' : 'days'}.`,
    });
  });
});
