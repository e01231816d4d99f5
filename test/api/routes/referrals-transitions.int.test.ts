// Every (status, operation) pair over the HTTP API. Whether a pair is allowed, and where it leads, is
// read from the lifecycle table (isAllowed/decide), never restated here: the API must do what the
// table says. A refused pair is 409 invalid_transition naming the current status, and changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions } from 'fastify';
import { decide, isAllowed, type Operation } from '../../../src/domain/lifecycle.ts';
import { STATUSES, type AppointmentStatus } from '../../../src/domain/statuses.ts';
import { expectApiHeaders, expectProblem } from '../../support/api-assertions.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { referralIn, type ReferralJson } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

type Actor = 'sender' | 'provider';

interface OperationCase {
  readonly label: string;
  readonly operation: Operation;
  readonly actor: Actor;
  /** The request, without the institution fields (added for the acting party). */
  readonly request: (id: string) => {
    method: 'POST' | 'PATCH' | 'PUT' | 'DELETE';
    url: string;
    body?: Record<string, unknown>;
  };
  readonly created?: boolean;
}

const referralUrl = (id: string) => `/api/v1/referrals/${id}`;

const CASES: readonly OperationCase[] = [
  {
    label: 'update (PATCH)',
    operation: 'update',
    actor: 'sender',
    request: (id) => ({ method: 'PATCH', url: referralUrl(id), body: { clinicalInfo: 'Now with an ECG.' } }),
  },
  {
    label: 'submit',
    operation: 'submit',
    actor: 'sender',
    request: (id) => ({ method: 'POST', url: `${referralUrl(id)}/submit`, body: {} }),
  },
  {
    label: 'delete',
    operation: 'delete',
    actor: 'sender',
    request: (id) => ({ method: 'DELETE', url: referralUrl(id) }),
  },
  {
    label: 'cancel as sender',
    operation: 'cancel',
    actor: 'sender',
    request: (id) => ({
      method: 'POST',
      url: `${referralUrl(id)}/cancel`,
      body: { cancelNote: 'Patient recovered' },
    }),
  },
  {
    label: 'cancel as provider',
    operation: 'cancel',
    actor: 'provider',
    request: (id) => ({
      method: 'POST',
      url: `${referralUrl(id)}/cancel`,
      body: { cancelNote: 'Clinic closed' },
    }),
  },
  {
    label: 'back-to-draft',
    operation: 'back-to-draft',
    actor: 'sender',
    request: (id) => ({ method: 'POST', url: `${referralUrl(id)}/back-to-draft`, body: {} }),
  },
  {
    label: 'accept',
    operation: 'accept',
    actor: 'provider',
    request: (id) => ({ method: 'POST', url: `${referralUrl(id)}/accept`, body: {} }),
  },
  {
    label: 'reject',
    operation: 'reject',
    actor: 'provider',
    request: (id) => ({ method: 'POST', url: `${referralUrl(id)}/reject`, body: { reason: 'Out of scope' } }),
  },
  {
    label: 'request-action',
    operation: 'request-action',
    actor: 'provider',
    request: (id) => ({
      method: 'POST',
      url: `${referralUrl(id)}/request-action`,
      body: { reason: 'Attach the ECG' },
    }),
  },
  {
    label: 'upsert-appointment',
    operation: 'upsert-appointment',
    actor: 'provider',
    request: (id) => ({
      method: 'PUT',
      url: `${referralUrl(id)}/appointments/appt-new`,
      body: { status: 'scheduled', startAt: '2030-02-01T02:00:00.000Z', location: 'Clinic 5A' },
    }),
  },
  {
    label: 'complete',
    operation: 'complete',
    actor: 'provider',
    request: (id) => ({
      method: 'POST',
      url: `${referralUrl(id)}/complete`,
      body: { outcomeCode: 'seen-follow-up', summary: 'Reviewed in clinic; follow-up in six weeks.' },
    }),
  },
  {
    label: 'acknowledge-outcome',
    operation: 'acknowledge-outcome',
    actor: 'sender',
    request: (id) => ({ method: 'POST', url: `${referralUrl(id)}/acknowledge-outcome`, body: {} }),
  },
  {
    label: 'add-note as sender',
    operation: 'add-note',
    actor: 'sender',
    request: (id) => ({ method: 'POST', url: `${referralUrl(id)}/notes`, body: { content: 'A note' } }),
    created: true,
  },
  {
    label: 'add-note as provider',
    operation: 'add-note',
    actor: 'provider',
    request: (id) => ({ method: 'POST', url: `${referralUrl(id)}/notes`, body: { content: 'A reply' } }),
    created: true,
  },
];

// An archived referral is reached only by retention and answers every step with 410
// (test/services/retention/referrals-archive.int.test.ts): the pairs are of the live statuses.
const LIVE_STATUSES = STATUSES.filter((status) => status !== 'archived');
const PAIRS = LIVE_STATUSES.flatMap((status) => CASES.map((c) => ({ status, ...c })));

describe.each(APP_ENGINES)('every (status, operation) pair on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const partyOf = (actor: Actor): TestParty => (actor === 'sender' ? t.sender : t.provider);

  function send(actor: Actor, id: string, c: OperationCase) {
    const { method, url, body } = c.request(id);
    const party = partyOf(actor);
    const options: InjectOptions =
      body === undefined
        ? { method, url, query: { ...party.institution } }
        : { method, url, payload: { ...party.institution, ...body } };
    return t.request(party, options);
  }

  /** The referral as its sender sees it now, or null when it is gone. */
  async function current(id: string): Promise<ReferralJson | null> {
    const res = await t.request(t.sender, {
      method: 'GET',
      url: referralUrl(id),
      query: { ...t.sender.institution, requesterIdentifier: 'dr.tan@example.org' },
    });
    if (res.statusCode === 404) return null;
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  it('covers every live status with every operation', () => {
    expect(PAIRS).toHaveLength(LIVE_STATUSES.length * CASES.length);
  });

  it.each(PAIRS)('$label from $status', async ({ status, ...c }) => {
    const before = await referralIn(t, status);
    const appointments = (before.appointments as { status: AppointmentStatus }[]).map((a) => a.status);
    const input = {
      status,
      offeringCancellable: true,
      // The PUT adds a new, scheduled appointment to the ones the referral has.
      appointmentStatuses: [...appointments, 'scheduled' as const],
    };

    const res = await send(c.actor, before.id, c);
    expectApiHeaders(res);

    if (c.actor === 'provider' && status === 'draft') {
      // Tenancy, not a transition: a provider cannot see a draft at all.
      expectProblem(res, 404, 'referral_not_found');
      expect(await current(before.id)).toMatchObject({ version: before.version, status });
      return;
    }

    if (!isAllowed(c.operation, c.actor, input)) {
      const problem = expectProblem(res, 409, 'invalid_transition');
      expect(problem.currentStatus).toBe(status);
      expect(await current(before.id)).toMatchObject({ version: before.version, status });
      return;
    }

    const next = decide(c.operation, c.actor, input).next;
    expect(res.statusCode, res.body).toBe(c.created === true ? 201 : 200);
    const body = res.json<Record<string, unknown>>();
    const after = await current(before.id);
    if (next === undefined) {
      // Deleted: the response is the referral as it was, and then it is gone.
      expect(body).toMatchObject({ id: before.id, status, version: before.version });
      expect(after).toBeNull();
      return;
    }
    if (c.created !== true) expect(body.status).toBe(next);
    expect(after).toMatchObject({ status: next, version: before.version + 1 });
  });
});
