// A referral's appointments. R4 lets an Appointment's participants be a Patient or a Location but not
// an Organization, so each appointment gets a Location named by refhub's location text and managed by
// the provider, and the patient and that Location take part. refhub records when an appointment
// starts but not when it ends, while R4 wants both or neither (app-2): `end` is present as unknown
// (data-absent-reason), never made up.
import type {
  Appointment,
  Extension,
  Location,
  Organization,
  Patient,
  ServiceRequest,
} from '@medplum/fhirtypes';
import type { AppointmentView } from '../../domain/referral-view.ts';
import { dataAbsentUnknown, fhirString, present } from './fhir-datatypes.ts';
import { referenceTo, resourceIdOf, type Identified } from './resource-identity.ts';
import { APPOINTMENT_STATUS } from './status-mapping.ts';

export interface AppointmentParties {
  readonly serviceRequest: Identified<ServiceRequest>;
  readonly patient: Identified<Patient>;
  readonly provider: Identified<Organization> | undefined;
}

/** An Appointment whose end is unknown, carried as `_end` (JSON's way of extending a primitive). */
export type AppointmentWithUnknownEnd = Identified<Appointment> & {
  readonly _end: { extension: Extension[] };
};

export interface MappedAppointment {
  readonly appointment: AppointmentWithUnknownEnd;
  readonly location: Identified<Location>;
}

/** One appointment; its id comes from the referral and the provider's appointment ID. */
export function appointmentOf(
  referralId: string,
  view: AppointmentView,
  { serviceRequest, patient, provider }: AppointmentParties,
): MappedAppointment {
  const place = fhirString(view.location);
  const location: Identified<Location> = {
    resourceType: 'Location',
    id: resourceIdOf('Location', referralId, view.id),
    mode: 'instance',
    ...present('name', place),
    ...(provider === undefined ? {} : { managingOrganization: referenceTo(provider, provider.name) }),
  };
  const appointment: AppointmentWithUnknownEnd = {
    resourceType: 'Appointment',
    id: resourceIdOf('Appointment', referralId, view.id),
    meta: { lastUpdated: view.updatedAt },
    // The provider system's own ID, unique within the referral: no system URI can promise more.
    identifier: [
      {
        value: view.id,
        ...(provider === undefined ? {} : { assigner: referenceTo(provider, provider.name) }),
      },
    ],
    status: APPOINTMENT_STATUS[view.status],
    start: view.startAt,
    _end: dataAbsentUnknown(),
    basedOn: [referenceTo(serviceRequest)],
    participant: [
      { actor: referenceTo(patient), status: 'accepted' },
      { actor: referenceTo(location, place), status: 'accepted' },
    ],
  };
  return { appointment, location };
}
