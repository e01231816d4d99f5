// The referral letter templates: the GPFirst letter to A&E, the A&E letter, and the specialist
// referral that every other category shares. They differ only in their name, whom they address and
// their opening sentence; the body (parties, offering, clinical information, record) is common.
import type { CoreStatus } from '../../domain/statuses.ts';
import type { EhrFormSource, OfferingView } from '../../domain/referral-view.ts';
import { html, type SafeHtml } from '../html.ts';
import {
  STYLE,
  blockField,
  detailsTable,
  field,
  heading,
  isMissing,
  NOT_PROVIDED,
  timestampField,
  type EhrTemplate,
} from './ehr-parts.ts';
import { referralRecord } from './referral-record.ts';

const CORE_STATUS_LABEL: Readonly<Record<CoreStatus, string>> = {
  draft: 'Draft',
  pending: 'Pending',
  confirmed: 'Confirmed',
  rejected: 'Rejected',
  cancelled: 'Cancelled',
  'sender-action-required': 'Sender action required',
};

interface LetterWording {
  readonly name: string;
  readonly addressee: (offering: OfferingView | null) => string;
  readonly salutation: string;
  readonly opening: (offering: OfferingView | null) => string;
}

function providerName(offering: OfferingView | null): string {
  const name = offering?.institution.name.trim() ?? '';
  return name === '' ? 'the receiving institution' : name;
}

// The letter names its patient up front, as a letter does; the Patient Summary holds the full record.
function regarding({ patient }: EhrFormSource): SafeHtml {
  const shown = (value: string | null): string => (isMissing(value) ? NOT_PROVIDED : value);
  return html`<p style="${STYLE.paragraph}">
    <strong>Re: ${shown(patient.name)}</strong> · UIN ${shown(patient.uin)} · Date of birth
    ${shown(patient.dob)}
  </p>`;
}

function urgency(source: EhrFormSource): SafeHtml {
  return source.isUrgent
    ? html`<div style="${STYLE.urgent}">${field('urgency', 'Urgent referral')}</div>`
    : html`<div style="${STYLE.routine}">${field('urgency', 'Routine referral')}</div>`;
}

function referralDetails(source: EhrFormSource): SafeHtml {
  return detailsTable([
    ['Referral ID', field('id', source.id)],
    ['Version', field('version', source.version)],
    [
      'Status',
      html`${field('coreStatus', CORE_STATUS_LABEL[source.coreStatus])} (${field('status', source.status)})`,
    ],
    ['Submitted', timestampField('submittedAt', source.submittedAt)],
    ['Created', timestampField('createdAt', source.createdAt)],
    ['Last updated', timestampField('updatedAt', source.updatedAt)],
  ]);
}

function sender(source: EhrFormSource): SafeHtml {
  const { sender: institution, referrer } = source;
  return html`${heading('From')}
  ${detailsTable([
    ['Institution', field('sender.name', institution.name)],
    [
      'Institution ID',
      html`${field('sender.idType', institution.idType)} ${field('sender.id', institution.id)}`,
    ],
    ['Sending system', field('senderSystem', source.senderSystem)],
    ['Referring clinician', field('referrer.name', referrer.name)],
    ['Clinician ID', html`${field('referrer.idType', referrer.idType)} ${field('referrer.id', referrer.id)}`],
    ['Email', field('referrer.email', referrer.email)],
    ['Contact number', field('referrer.contactNumber', referrer.contactNumber)],
  ])}`;
}

function offering(source: EhrFormSource): SafeHtml {
  const chosen = source.offering;
  if (chosen === null) {
    return html`${heading('To')}
      <p data-field="offering" data-missing="true" style="${STYLE.empty}">
        No service has been chosen yet.
      </p>`;
  }
  return html`${heading('To')}
  ${detailsTable([
    ['Service', field('offering.name', chosen.name)],
    ['Specialty', field('offering.specialty', chosen.specialty)],
    ['EHR code', field('offering.ehrCode', chosen.ehrCode)],
    ['Category', field('offering.category', chosen.category)],
    ['Provider institution', field('offering.institution.name', chosen.institution.name)],
    [
      'Provider ID',
      html`${field('offering.institution.idType', chosen.institution.idType)}
      ${field('offering.institution.id', chosen.institution.id)}`,
    ],
  ])}
  ${blockField('offering.description', chosen.description)}`;
}

function referralLetter(wording: LetterWording): EhrTemplate {
  return {
    name: wording.name,
    render: (source) =>
      html`<h1 style="${STYLE.title}">${wording.name}</h1>
        <p style="${STYLE.subtitle}">${wording.addressee(source.offering)}</p>
        ${regarding(source)} ${urgency(source)} ${referralDetails(source)} ${sender(source)}
        ${offering(source)} ${heading('Reason for referral')}
        <p style="${STYLE.paragraph}">${wording.salutation}</p>
        <p style="${STYLE.paragraph}">${wording.opening(source.offering)}</p>
        ${blockField('clinicalInfo', source.clinicalInfo)} ${referralRecord(source)}`,
  };
}

export const gpFirstLetter = referralLetter({
  name: 'GPFirst Referral Letter',
  addressee: (o) => `To the Accident & Emergency Department, ${providerName(o)}`,
  salutation: 'Dear Doctor,',
  opening: () =>
    'I have assessed this patient and am referring them to your Accident & Emergency ' +
    'Department under the GPFirst programme. Please present this letter at A&E registration.',
});

export const aeLetter = referralLetter({
  name: 'A&E Referral Letter',
  addressee: (o) => `To the Accident & Emergency Department, ${providerName(o)}`,
  salutation: 'Dear Doctor,',
  opening: () => 'I am referring this patient to your Accident & Emergency Department for assessment.',
});

export const specialistReferral = referralLetter({
  name: 'Specialist Referral',
  addressee: (o) =>
    `To ${o === null || o.specialty.trim() === '' ? 'the specialist' : o.specialty}, ${providerName(o)}`,
  salutation: 'Dear Colleague,',
  opening: (o) =>
    o === null || o.specialty.trim() === ''
      ? 'I would be grateful if you would see this patient.'
      : `I would be grateful if you would see this patient for ${o.specialty}.`,
});
