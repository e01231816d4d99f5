// Reads a referral's FHIR view over the API, as a FHIR client would, and checks what every such read
// must give: a valid R4 bundle served as application/fhir+json, not cached, with the get's ETag.
import type { LightMyRequestResponse } from 'fastify';
import type { Bundle, Resource } from '@medplum/fhirtypes';
import { expect } from 'vitest';
import { expectApiHeaders } from './api-assertions.ts';
import { bundleIssues } from './fhir-validation.ts';
import { REQUESTER } from './referral-routes.ts';
import type { TestApp, TestParty } from './test-app.ts';

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
  expect(res.headers.etag).toMatch(/^"[0-9]+"$/);
  expectApiHeaders(res);
  const bundle = res.json<FhirRead['bundle']>();
  expect(bundleIssues(bundle)).toEqual([]);
  return { res, bundle };
}

/** The resources of one type in a bundle. */
export function resourcesOf<T extends Resource>(bundle: FhirRead['bundle'], type: T['resourceType']): T[] {
  return bundle.entry.map((e) => e.resource).filter((r) => r.resourceType === type) as unknown as T[];
}
