// The query behind the /admin page's failed forwards, on both engines: only referrals whose forward
// failed for good, latest attempt first (one never attempted last), each with the answer to its
// latest attempt, capped, with the full count beside.
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ehrSubmissionRepository } from '../../../src/db/forwarding/ledger.ts';
import { ENGINES } from '../../support/engines.ts';
import { createDraft } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const at = (minute: number) => new Date(Date.UTC(2026, 5, 4, 3, minute));

describe.each(ENGINES)('failed forwards on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  /** A referral in `state`, with its ledger as given (attempt minute, HTTP status or error code). */
  async function referral(
    state: string,
    attempts: readonly { minute: number; httpStatus?: number; errorCode?: string }[],
  ): Promise<string> {
    const { id } = await createDraft(t);
    const ledger = ehrSubmissionRepository(t.ctx.db);
    for (const [index, a] of attempts.entries()) {
      await ledger.insert({
        id: uuidv7(),
        referralId: id,
        messageId: `${id}.v${index + 2}`,
        version: index + 2,
        attempt: index + 1,
        attemptedAt: at(a.minute),
        outcome: index === attempts.length - 1 && state === 'failed' ? 'failed' : 'retrying',
        httpStatus: a.httpStatus ?? null,
        errorCode: a.errorCode ?? null,
        sha256: null,
        ehrReference: null,
        durationMs: 12,
        requestId: uuidv7(),
      });
    }
    const last = attempts.at(-1);
    await t.ctx.db
      .updateTable('referrals')
      .set({
        ehr_state: state,
        ehr_attempts: attempts.length,
        ehr_last_attempt_at: last === undefined ? null : at(last.minute),
      })
      .where('id', '=', id)
      .execute();
    return id;
  }

  it('lists failed forwards only, latest attempt first, with the answer to that attempt', async () => {
    const older = await referral('failed', [
      { minute: 1, httpStatus: 503 },
      { minute: 5, httpStatus: 422 },
    ]);
    const newer = await referral('failed', [
      { minute: 2, errorCode: 'UND_ERR_SOCKET' },
      { minute: 9, errorCode: 'ECONNRESET' },
    ]);
    // A failed state with no ledger row (written by hand, or its rows archived): listed last.
    const unattempted = await referral('failed', []);
    await referral('forwarded', [{ minute: 30, httpStatus: 201 }]);
    await referral('queued', [{ minute: 31, httpStatus: 503 }]);

    const { total, rows } = await ehrSubmissionRepository(t.ctx.db).failedForwards(50);
    expect(total).toBe(3);
    expect(rows).toEqual([
      {
        referralId: newer,
        lastAttemptAt: at(9),
        attempts: 2,
        httpStatus: null,
        errorCode: 'ECONNRESET',
        version: 3,
      },
      { referralId: older, lastAttemptAt: at(5), attempts: 2, httpStatus: 422, errorCode: null, version: 3 },
      {
        referralId: unattempted,
        lastAttemptAt: null,
        attempts: 0,
        httpStatus: null,
        errorCode: null,
        version: null,
      },
    ]);

    const capped = await ehrSubmissionRepository(t.ctx.db).failedForwards(1);
    expect(capped.total).toBe(3);
    expect(capped.rows.map((r) => r.referralId)).toEqual([newer]);
  });
});
