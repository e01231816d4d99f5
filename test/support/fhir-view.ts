// Reads a referral's FHIR view over the API, as a FHIR client would, and checks what every such read
// must give: a valid R4 bundle served as application/fhir+json, not cached, with the get's ETag. Also
// attaches files over the API, as a clinic system does, for the views that show them.
import type { LightMyRequestResponse } from 'fastify';
import type { Bundle, Resource } from '@medplum/fhirtypes';
import { expect } from 'vitest';
import type { AppointmentStatus, Status } from '../../src/domain/statuses.ts';
import { expectApiHeaders } from './api-assertions.ts';
import { bundleIssues } from './fhir-validation.ts';
import { REQUESTER } from './referral-routes.ts';
import type { TestApp, TestParty } from './test-app.ts';

// What docs/fhir.md promises, written out again here so that the tests check the mapping against the
// documented tables rather than against the code's own.
export const REQUEST_STATUS: Readonly<Record<Status, string>> = {
  draft: 'draft',
  'pending-acceptance': 'active',
  accepted: 'active',
  'sender-action-required': 'active',
  scheduled: 'active',
  rejected: 'revoked',
  cancelled: 'revoked',
  completed: 'completed',
  'outcome-acknowledged': 'completed',
  redirected: 'revoked',
  archived: 'unknown',
};
export const TASK_STATUS: Readonly<Record<Status, string>> = {
  draft: 'draft',
  'pending-acceptance': 'requested',
  accepted: 'accepted',
  'sender-action-required': 'on-hold',
  scheduled: 'in-progress',
  rejected: 'rejected',
  cancelled: 'cancelled',
  completed: 'completed',
  'outcome-acknowledged': 'completed',
  redirected: 'cancelled',
  archived: 'completed',
};
export const APPOINTMENT_STATUS: Readonly<Record<AppointmentStatus, string>> = {
  scheduled: 'booked',
  actualized: 'fulfilled',
  'no-show': 'noshow',
  cancelled: 'cancelled',
};

export function fhirUrl(referralId: string, as: TestParty, requester = REQUESTER): string {
  const query = new URLSearchParams({ requesterIdentifier: requester, ...as.institution });
  return `/api/v1/referrals/${referralId}/fhir?${query.toString()}`;
}

export interface FhirRead {
  readonly res: LightMyRequestResponse;
  readonly bundle: Omit<Bundle, 'entry'> & {
    entry: { fullUrl: string; resource: Resource & { id: string } }[];
  };
}

/** A successful read of the view, checked to be a valid FHIR R4 bundle with the API's headers. */
export async function readFhir(t: TestApp, as: TestParty, referralId: string): Promise<FhirRead> {
  const res = await t.request(as, { method: 'GET', url: fhirUrl(referralId, as) });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toBe('application/fhir+json; charset=utf-8');
  expect(res.headers.etag).toMatch(/^W\/"[0-9]+"$/);
  expectApiHeaders(res);
  const bundle = res.json<FhirRead['bundle']>();
  expect(bundleIssues(bundle)).toEqual([]);
  return { res, bundle };
}

/** The resources of one type in a bundle. */
export function resourcesOf<T extends Resource>(bundle: FhirRead['bundle'], type: T['resourceType']): T[] {
  return bundle.entry.map((e) => e.resource).filter((r) => r.resourceType === type) as unknown as T[];
}

/** An attachment as the API answers its upload and its list. */
export interface AttachmentJson {
  readonly id: string;
  readonly referralId: string;
  readonly fileName: string;
  readonly mediaType: string;
  readonly sizeBytes: number;
  readonly sha256: string;
  readonly scanState: string;
  readonly addedBy: 'sender' | 'provider';
  readonly authorInstitution: { readonly idType: string; readonly id: string; readonly name: string };
  readonly createdAt: string;
}

/**
 * Uploads `bytes` as a file of the referral, as a clinic system does: the raw body, named in
 * Content-Disposition (`filename="…"` for a plain ASCII name, RFC 8187's `filename*` otherwise).
 */
export async function attachFile(
  t: TestApp,
  as: TestParty,
  referralId: string,
  bytes: Buffer,
  fileName: string,
): Promise<AttachmentJson> {
  const disposition =
    /^[\x20-\x7e]+$/.test(fileName) && !/["\\%]/.test(fileName)
      ? `attachment; filename="${fileName}"`
      : `attachment; filename*=UTF-8''${encodeURIComponent(fileName)}`;
  const res = await t.request(as, {
    method: 'POST',
    url: `/api/v1/referrals/${referralId}/attachments`,
    query: { ...as.institution, requesterIdentifier: REQUESTER },
    headers: { 'content-type': 'application/octet-stream', 'content-disposition': disposition },
    payload: bytes,
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<AttachmentJson>();
}

/** The RFC 6920 name of bytes whose SHA-256 is `hex`, written out here rather than taken from the code. */
export function namedInformationOf(hex: string): string {
  return `ni:///sha-256;${Buffer.from(hex, 'hex').toString('base64url')}`;
}
