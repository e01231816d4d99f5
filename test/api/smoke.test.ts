import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUSES } from '../../src/domain/statuses.ts';
import { ENGINES } from '../support/engines.ts';
import { referralIn } from '../support/scenarios.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

describe.each(ENGINES)('scenarios on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  it.each(STATUSES)('reaches %s through the API', async (status) => {
    const referral = await referralIn(t, status);
    expect(referral.status).toBe(status);
  });
});
