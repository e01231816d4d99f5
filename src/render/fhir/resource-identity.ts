// Stable identities for the resources of a referral's FHIR view. refhub is not a FHIR server: its
// resources have no URL of their own, so each entry's fullUrl is `urn:uuid:<id>` and every reference
// inside the bundle points at one of those. The id is a name-based UUID (v5) of the resource type and
// the refhub record it comes from, so the same record gets the same id in every read and every bundle.
//
// Nothing is derived from patient data: the Patient's id comes from the referral ID, never from the
// NRIC, because ids travel in URLs and logs and a hash of an NRIC can be reversed by trying them all.
import type { Reference, Resource, ResourceType } from '@medplum/fhirtypes';
import { v5 as uuidv5 } from 'uuid';

/** The namespace of every id refhub's FHIR view derives; fixed forever, or every id would change. */
const REFHUB_FHIR_NAMESPACE = '15fc476a-5535-476b-a1b2-5b095905f446';

/** The id of the `type` resource drawn from the refhub record named by `key`. */
export function resourceIdOf(type: ResourceType, ...key: readonly string[]): string {
  return uuidv5([type, ...key].join('/'), REFHUB_FHIR_NAMESPACE);
}

export function fullUrlOf(id: string): string {
  return `urn:uuid:${id}`;
}

/** A resource of the view: it always has its id. */
export type Identified<R extends { id?: string }> = R & { id: string };

/** A reference to a resource in the same bundle, with its type so a reader need not resolve it. */
export function referenceTo<T extends Resource>(
  target: Identified<T>,
  display?: string | null,
): Reference<T> {
  return {
    reference: fullUrlOf(target.id),
    type: target.resourceType,
    ...(display ? { display } : {}),
  };
}

/**
 * A reference to the `type` resource drawn from the record `key`, for a resource that points at one
 * built after it (a DocumentReference at the ServiceRequest whose supportingInfo lists it): the id is
 * the one resourceIdOf gives that resource, so the reference resolves in the bundle all the same.
 */
export function referenceToRecord<T extends Resource>(
  type: T['resourceType'],
  ...key: readonly string[]
): Reference<T> {
  return { reference: fullUrlOf(resourceIdOf(type, ...key)), type };
}
