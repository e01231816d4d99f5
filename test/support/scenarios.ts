// Drives a referral into any status through the real API, the way clients do.
import { expect } from 'vitest';
import { STATUSES, type Status } from '../../src/domain/statuses.ts';
import { PATIENT } from './fixtures/patients.ts';
import type { TestApp, TestParty } from './test-app.ts';

/**
 * The statuses a referral reaches through the API: all but `archived`, which only retention reaches
 * (and whose 410s test/services/retention/referrals-archive.int.test.ts holds).
 */
export const LIVE_STATUSES = STATUSES.filter((status) => status !== 'archived');

export interface ReferralJson {
  id: string;
  version: number;
  status: Status;
  coreStatus: string;
  [field: string]: unknown;
}

export async function call(
  t: TestApp,
  who: TestParty,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  body?: Record<string, unknown>,
  expected = 200,
): Promise<Record<string, unknown>> {
  const res = await t.request(who, {
    method,
    url,
    ...(body === undefined ? {} : { payload: { ...who.institution, ...body } }),
  });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(expected);
  return res.json();
}

/** A draft to cgh-gastro (provider: t.provider) from t.sender, with a complete patient. */
export async function createDraft(t: TestApp, fields: Record<string, unknown> = {}): Promise<ReferralJson> {
  return (await call(
    t,
    t.sender,
    'POST',
    '/api/v1/referrals',
    { offeringId: 'cgh-gastro', ...PATIENT, ...fields },
    201,
  )) as ReferralJson;
}

export async function referralIn(
  t: TestApp,
  status: Status,
  fields: Record<string, unknown> = {},
): Promise<ReferralJson> {
  const draft = await createDraft(t, fields);
  const id = draft.id;
  const url = (op: string) => `/api/v1/referrals/${id}/${op}`;
  if (status === 'draft') return draft;
  let current = (await call(t, t.sender, 'POST', url('submit'), {})) as ReferralJson;
  switch (status) {
    case 'pending-acceptance':
      break;
    case 'accepted':
      current = (await call(t, t.provider, 'POST', url('accept'), {})) as ReferralJson;
      break;
    case 'sender-action-required':
      current = (await call(t, t.provider, 'POST', url('request-action'), {
        reason: 'Please attach the ECG.',
      })) as ReferralJson;
      break;
    case 'scheduled':
      await call(t, t.provider, 'POST', url('accept'), {});
      current = (await call(t, t.provider, 'PUT', `/api/v1/referrals/${id}/appointments/appt-1`, {
        status: 'scheduled',
        startAt: '2030-01-15T01:30:00.000Z',
        location: 'Clinic 3B, Level 3',
      })) as ReferralJson;
      break;
    case 'rejected':
      current = (await call(t, t.provider, 'POST', url('reject'), {
        reason: 'Not within our scope.',
      })) as ReferralJson;
      break;
    case 'completed':
    case 'outcome-acknowledged':
      await call(t, t.provider, 'POST', url('accept'), {});
      current = (await call(t, t.provider, 'POST', url('complete'), {
        outcomeCode: 'seen-discharged',
        summary: 'Gastroscopy normal. No follow-up needed; continue omeprazole for four weeks.',
      })) as ReferralJson;
      if (status === 'outcome-acknowledged')
        current = (await call(t, t.sender, 'POST', url('acknowledge-outcome'), {})) as ReferralJson;
      break;
    case 'redirected':
      // To Eastside Regional Hospital (t.otherProvider), which takes every priority.
      current = (await call(t, t.provider, 'POST', url('redirect'), {
        offeringId: 'erh-cardio',
        reasonCode: 'wrong-service',
        comment: 'Our cardiology colleagues at Eastside will see him.',
      })) as ReferralJson;
      break;
    case 'archived':
      throw new Error('a referral is archived by retention, not through the API');
    case 'cancelled':
      await call(t, t.sender, 'POST', url('cancel'), { cancelNote: 'Patient recovered' });
      current = (await call(
        t,
        t.sender,
        'GET',
        `/api/v1/referrals/${id}?requesterIdentifier=dr@example.org&institutionIdType=hci&institutionId=${t.sender.institution.institutionId}`,
      )) as ReferralJson;
      break;
  }
  expect(current.status).toBe(status);
  return current;
}
