// Every route that acts on one referral, as data: who owns the operation, a status it is allowed
// from, and how to call it acting for a given party. Tenancy and concurrency tests walk this list,
// so a new route added here is checked by both.
import type { InjectOptions } from 'fastify';
import type { Status } from '../../src/domain/statuses.ts';
import type { TestParty } from './test-app.ts';

export const REQUESTER = 'dr.tan@example.org';

/** Inject options whose URL is a plain string (a path with its query). */
export type RouteRequest = InjectOptions & { readonly url: string };

export interface ReferralRoute {
  readonly name: string;
  /** The party of the referral that may perform the operation. */
  readonly owner: 'sender' | 'provider';
  /** A status the owner may perform it from. */
  readonly status: Status;
  /** Whether the route takes If-Match (compare-and-set on the referral's version). */
  readonly ifMatch: boolean;
  /**
   * The reads, besides the referral's, of what the command checks before it writes (the catalog's
   * reason codes and offering, its public holidays, the referral's files): one statement each. None
   * unless said.
   */
  readonly checks?: number;
  request(referralId: string, as: TestParty, headers?: Record<string, string>): RouteRequest;
}

function query(as: TestParty, extra: Record<string, string> = {}): string {
  return new URLSearchParams({ ...as.institution, ...extra }).toString();
}

function post(url: string, body: Record<string, unknown> = {}) {
  return (id: string, as: TestParty, headers: Record<string, string> = {}): RouteRequest => ({
    method: 'POST',
    url: url.replace(':id', id),
    headers,
    payload: { ...as.institution, ...body },
  });
}

export const REFERRAL_ROUTES: readonly ReferralRoute[] = [
  {
    name: 'GET /referrals/:id',
    owner: 'sender',
    status: 'draft',
    ifMatch: false,
    request: (id, as, headers = {}) => ({
      method: 'GET',
      url: `/api/v1/referrals/${id}?${query(as, { requesterIdentifier: REQUESTER })}`,
      headers,
    }),
  },
  {
    name: 'DELETE /referrals/:id',
    owner: 'sender',
    status: 'draft',
    ifMatch: true,
    request: (id, as, headers = {}) => ({
      method: 'DELETE',
      url: `/api/v1/referrals/${id}?${query(as)}`,
      headers,
    }),
  },
  {
    name: 'PATCH /referrals/:id',
    owner: 'sender',
    status: 'draft',
    ifMatch: true,
    request: (id, as, headers = {}) => ({
      method: 'PATCH',
      url: `/api/v1/referrals/${id}`,
      headers,
      payload: { ...as.institution, clinicalInfo: 'Changed by the route matrix', isUrgent: true },
    }),
  },
  {
    name: 'POST submit',
    owner: 'sender',
    status: 'draft',
    ifMatch: true,
    // The public holidays its triage due time counts past (its offering has service levels).
    checks: 1,
    request: post('/api/v1/referrals/:id/submit'),
  },
  {
    name: 'POST cancel',
    owner: 'sender',
    status: 'pending-acceptance',
    ifMatch: true,
    request: post('/api/v1/referrals/:id/cancel', { cancelNote: 'Patient recovered' }),
  },
  {
    name: 'POST redirect',
    owner: 'provider',
    status: 'pending-acceptance',
    ifMatch: true,
    // The reason codes, the new offering, the files the successor carries, and the public holidays its
    // triage due time counts past.
    checks: 4,
    request: post('/api/v1/referrals/:id/redirect', {
      offeringId: 'erh-cardio',
      reasonCode: 'wrong-service',
      comment: 'Our cardiology colleagues at Eastside will see him.',
    }),
  },
  {
    name: 'POST back-to-draft',
    owner: 'sender',
    status: 'pending-acceptance',
    ifMatch: true,
    request: post('/api/v1/referrals/:id/back-to-draft'),
  },
  {
    name: 'POST notes',
    owner: 'sender',
    status: 'pending-acceptance',
    ifMatch: true,
    request: post('/api/v1/referrals/:id/notes', { content: 'Please call the family first.' }),
  },
  {
    name: 'POST accept',
    owner: 'provider',
    status: 'pending-acceptance',
    ifMatch: true,
    request: post('/api/v1/referrals/:id/accept'),
  },
  {
    name: 'POST reject',
    owner: 'provider',
    status: 'pending-acceptance',
    ifMatch: true,
    request: post('/api/v1/referrals/:id/reject', { reason: 'Not within our scope.' }),
  },
  {
    name: 'POST request-action',
    owner: 'provider',
    status: 'pending-acceptance',
    ifMatch: true,
    request: post('/api/v1/referrals/:id/request-action', { reason: 'Please attach the ECG.' }),
  },
  {
    name: 'PUT appointments/:appointmentId',
    owner: 'provider',
    status: 'accepted',
    ifMatch: true,
    request: (id, as, headers = {}) => ({
      method: 'PUT',
      url: `/api/v1/referrals/${id}/appointments/appt-matrix`,
      headers,
      payload: {
        ...as.institution,
        status: 'scheduled',
        startAt: '2030-02-01T02:00:00.000Z',
        location: 'Clinic 5A',
      },
    }),
  },
  {
    name: 'POST /links/upsert with referralId',
    owner: 'sender',
    status: 'draft',
    ifMatch: false,
    request: (id, as, headers = {}) => ({
      method: 'POST',
      url: '/api/v1/links/upsert',
      headers,
      payload: {
        ...as.institution,
        requesterIdentifier: REQUESTER,
        referralId: id,
        clinicalInfo: 'Upserted',
      },
    }),
  },
];

/** The write routes that take If-Match. */
export const CONDITIONAL_ROUTES: readonly ReferralRoute[] = REFERRAL_ROUTES.filter((r) => r.ifMatch);
