// The "Patient Summary" every EHR form carries, at the top of the document: who the patient is, so the
// reader identifies the patient before reading the letter, and the EHR can match and file the form.
//
// The age is counted on the day the referral was submitted (or created, for a draft), both stored on
// the referral: the form is a pure function of the referral, so it can never read today's date.
import { dateOfBirthText } from '../../domain/display-time.ts';
import { GENDER_LABELS, nationalityLabel, RESIDENTIAL_STATUS_LABELS } from '../../domain/labels.ts';
import { html } from '../html.ts';
import { STYLE, detailsTable, field, heading, isMissing, labelField, type EhrTemplate } from './ehr-parts.ts';

export const patientSummary: EhrTemplate = {
  name: 'Patient Summary',
  render: (source, display) => {
    const { patient } = source;
    const ageAt = source.submittedAt ?? source.createdAt;
    return html`<div style="${STYLE.patient}">
      ${heading('Patient')}
      ${detailsTable([
        ['Name', field('patient.name', patient.name)],
        ['NRIC/FIN', field('patient.uin', patient.uin)],
        [
          'Date of birth',
          field('patient.dob', isMissing(patient.dob) ? null : dateOfBirthText(patient.dob, ageAt, display)),
        ],
        ['Sex', labelField('patient.gender', patient.gender, GENDER_LABELS)],
        [
          'Nationality',
          field(
            'patient.nationality',
            isMissing(patient.nationality) ? null : nationalityLabel(patient.nationality),
          ),
        ],
        [
          'Residential status',
          labelField('patient.residentialStatus', patient.residentialStatus, RESIDENTIAL_STATUS_LABELS),
        ],
        ['Contact number', field('patient.phoneNumber', patient.phoneNumber)],
      ])}
    </div>`;
  },
};
