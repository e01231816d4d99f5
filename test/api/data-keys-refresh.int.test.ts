// The data keys lapse every refresh interval and are looked up again. On embedded PGlite the store
// has one connection: a transaction that is the first to need the keys after they lapse must not
// wait for a statement that only that connection could run, or it, and every request after it,
// waits for good. On both engines: every request after a lapse answers.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';
import { call, referralIn } from '../support/scenarios.ts';

const REFRESH_MS = 30_000;

describe.each(ENGINES)('requests after the data keys lapse, on %s', (engine) => {
  let t: TestApp;
  let now = 0;
  beforeEach(async () => {
    now = 0;
    t = await createTestApp(engine, { dataKeys: { refreshMs: REFRESH_MS, now: () => now } });
  });
  afterEach(async () => {
    await t.close();
  });

  const query = (t: TestApp) =>
    `institutionIdType=${t.sender.institution.institutionIdType}` +
    `&institutionId=${t.sender.institution.institutionId}&requesterIdentifier=dr.tan@example.org`;

  it('answers a ledger read whose transaction is the first to need the keys, and the next request', async () => {
    const referral = await referralIn(t, 'pending-acceptance');
    now += REFRESH_MS;
    // The ledger is read in a transaction that opens the referral: the first use of the lapsed keys.
    const ledger = await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${referral.id}/ehr-submissions?${query(t)}`,
    );
    expect(ledger).toBeDefined();
    const read = await call(t, t.sender, 'GET', `/api/v1/referrals/${referral.id}?${query(t)}`);
    expect(read.status).toBe('pending-acceptance');
  });

  it('answers a write made after the keys lapsed, and every request after it', async () => {
    const referral = await referralIn(t, 'pending-acceptance');
    for (let lapse = 1; lapse <= 3; lapse++) {
      now += REFRESH_MS;
      const note = await call(
        t,
        t.sender,
        'POST',
        `/api/v1/referrals/${referral.id}/notes`,
        {
          requesterIdentifier: 'dr.tan@example.org',
          content: `Note ${lapse}`,
        },
        201,
      );
      expect(note).toBeDefined();
      now += REFRESH_MS;
      await call(t, t.sender, 'GET', `/api/v1/referrals/${referral.id}/ehr-submissions?${query(t)}`);
    }
    const read = await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${referral.id}?${query(t)}&additionalField=ehrForm`,
    );
    expect(read.version).toBeGreaterThan(referral.version);
  });
});
