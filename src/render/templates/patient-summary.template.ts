// The "Patient Summary" template every EHR form carries: the patient's demographics as the
// referral holds them, so the EHR can match and file the form.
import { html } from '../html.ts';
import { detailsTable, field, heading, type EhrTemplate } from './ehr-parts.ts';

export const patientSummary: EhrTemplate = {
  name: 'Patient Summary',
  render: ({ patient }) =>
    html`${heading('Patient Summary')}
    ${detailsTable([
      ['Name', field('patient.name', patient.name)],
      ['UIN', field('patient.uin', patient.uin)],
      ['Date of birth', field('patient.dob', patient.dob)],
      ['Gender', field('patient.gender', patient.gender)],
      ['Nationality', field('patient.nationality', patient.nationality)],
      ['Phone number', field('patient.phoneNumber', patient.phoneNumber)],
      ['Residential status', field('patient.residentialStatus', patient.residentialStatus)],
    ])}`,
};
