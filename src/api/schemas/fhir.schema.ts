// The FHIR view's response, for the OpenAPI document. FHIR R4 defines the Bundle and its resources
// (http://hl7.org/fhir/R4/bundle.html); this schema names the envelope and leaves the resources to it.
import { Type } from 'typebox';
import { Timestamp } from './primitives.ts';
import { named } from './named.ts';

const FhirResource = Type.Object(
  { resourceType: Type.String(), id: Type.String() },
  { additionalProperties: true, description: 'A FHIR R4 resource, as FHIR defines its type.' },
);

export const FhirBundle = named(
  'FhirBundle',
  Type.Object(
    {
      resourceType: Type.Literal('Bundle'),
      id: Type.String({ format: 'uuid', description: 'The same for every read of one referral.' }),
      type: Type.Literal('collection'),
      timestamp: Timestamp,
      entry: Type.Array(
        Type.Object(
          { fullUrl: Type.String({ description: '`urn:uuid:<resource id>`' }), resource: FhirResource },
          { additionalProperties: true },
        ),
      ),
    },
    {
      additionalProperties: true,
      description:
        'A FHIR R4 Bundle of type collection: the referral as a ServiceRequest first, then its Task, the ' +
        'Patient, the referring Practitioner and PractitionerRole, the Organizations, each Appointment ' +
        'with its Location, a Communication per note, a DocumentReference per attachment, and an ' +
        'AuditEvent per attempt to forward the form to the EHR. See docs/fhir.md.',
    },
  ),
);
