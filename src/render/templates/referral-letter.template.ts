// The referral letter templates: the GPFirst letter to A&E, the A&E letter, and the specialist
// referral that every other category shares. They differ only in their name, whom they address and
// their opening sentence; the rest is common.
//
// A letter has a masthead (its name, whom it is for, the urgency), shown at the very top of the
// document, above the Patient Summary, and a body: the letter itself (salutation, reason, clinical
// information, signed by the referring clinician or, when none was named, the sending institution),
// then the referral's details, its parties, and its record (appointments, notes, timeline).
import type { DisplayTime } from '../../domain/display-time.ts';
import {
  INSTITUTION_ID_TYPE_LABELS,
  OFFERING_CATEGORY_LABELS,
  REFERRER_ID_TYPE_LABELS,
  STATUS_LABELS,
  labelFor,
  systemLabel,
} from '../../domain/labels.ts';
import type { EhrFormSource, OfferingView } from '../../domain/referral-view.ts';
import { html, type SafeHtml } from '../html.ts';
import {
  STYLE,
  absentField,
  blockField,
  detailsTable,
  field,
  heading,
  identifierField,
  isMissing,
  labelField,
  timestampField,
  type EhrTemplate,
} from './ehr-parts.ts';
import { referralRecord } from './referral-record.ts';

/** A letter: a template whose masthead heads the whole document. */
export interface LetterTemplate extends EhrTemplate {
  masthead(source: EhrFormSource): SafeHtml;
}

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

function urgency(source: EhrFormSource): SafeHtml {
  const words = source.isUrgent ? 'Urgent referral' : 'Routine referral';
  const style = source.isUrgent ? STYLE.urgent : STYLE.routine;
  // A referral without a priority keeps the form it had before priorities.
  if (source.priority === null) return html`<div style="${style}">${field('urgency', words)}</div>`;
  return html`<div style="${style}">
    ${field('urgency', words)}: priority ${field('priority', source.priority.display)}
    (${field('priorityCode', source.priority.code)})
  </div>`;
}

/**
 * "Yours sincerely," and who signs: the referring clinician (their name, or failing that their email
 * or ID) with what else is known of them and their institution; or the sending institution alone when
 * no clinician was named.
 */
function signOff({ referrer, sender }: EhrFormSource): SafeHtml {
  const present = (value: string | null): value is string => !isMissing(value);
  // An ID of type email is an address, and reads as one.
  const id = !present(referrer.id)
    ? null
    : !present(referrer.idType) || referrer.idType === 'email'
      ? referrer.id
      : `${labelFor(REFERRER_ID_TYPE_LABELS, referrer.idType)} ${referrer.id}`;
  const signature = [referrer.name, referrer.email, id].find(present);
  const details = [...new Set([id, referrer.email, referrer.contactNumber].filter(present))].filter(
    (value) => value !== signature,
  );
  return html`<div style="${STYLE.signOff}" data-part="sign-off">
    <p style="${STYLE.paragraph}">Yours sincerely,</p>
    ${
      signature === undefined
        ? html`<p style="${STYLE.signature}">${field('signOff.name', sender.name)}</p>`
        : html`<p style="${STYLE.signature}">${field('signOff.name', signature)}</p>
            ${
              details.length === 0
                ? null
                : html`<p style="${STYLE.signatureDetail}">
                    ${field('signOff.details', details.join(' · '))}
                  </p>`
            }
            <p style="${STYLE.signatureDetail}">${field('signOff.institution', sender.name)}</p>`
    }
  </div>`;
}

function referralDetails(source: EhrFormSource, display: DisplayTime): SafeHtml {
  return html`${heading('Referral')}
  ${detailsTable([
    ['Referral ID', field('id', source.id)],
    ['Status', labelField('status', source.status, STATUS_LABELS)],
    [
      'Submitted',
      // Only a draft has no submission time: it has not been sent, which is not missing data.
      source.submittedAt === undefined
        ? absentField('submittedAt', 'Not submitted yet')
        : timestampField('submittedAt', source.submittedAt, display),
    ],
    ['Created', timestampField('createdAt', source.createdAt, display)],
    // Only a redirect's successor, and the referral it carries on, have these rows: the forms of
    // referrals never redirected are as they were.
    ...(source.redirectedFrom === undefined
      ? []
      : ([['Redirected from', redirectedFrom(source, source.redirectedFrom)]] as const)),
    ...(source.redirectedTo === undefined
      ? []
      : ([['Redirected to', html`Referral ${field('redirectedTo', source.redirectedTo)}`]] as const)),
  ])}`;
}

/**
 * Where a successor came from: the referral it carries on, and the sentence of its opening step, its
 * first own one after those copied from that referral (who redirected it from which provider and
 * offering to which, and why).
 */
function redirectedFrom(source: EhrFormSource, id: string): SafeHtml {
  const opening = source.timelineEvents.find((e) => e.fromReferralId === undefined);
  return html`Referral
  ${field('redirectedFrom', id)}${
    opening === undefined ? null : html`: ${blockField('redirectedFrom.description', opening.description)}`
  }`;
}

function sender(source: EhrFormSource): SafeHtml {
  const { sender: institution, referrer } = source;
  return html`${heading('From')}
  ${detailsTable([
    ['Institution', field('sender.name', institution.name)],
    [
      'Institution ID',
      identifierField(
        { type: 'sender.idType', id: 'sender.id' },
        institution.idType,
        institution.id,
        INSTITUTION_ID_TYPE_LABELS,
      ),
    ],
    ['Sending system', field('senderSystem', systemLabel(source.senderSystem))],
    ['Referring clinician', field('referrer.name', referrer.name)],
    [
      'Clinician ID',
      identifierField(
        { type: 'referrer.idType', id: 'referrer.id' },
        referrer.idType,
        referrer.id,
        REFERRER_ID_TYPE_LABELS,
      ),
    ],
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
    ['Category', labelField('offering.category', chosen.category, OFFERING_CATEGORY_LABELS)],
    ['Specialty', field('offering.specialty', chosen.specialty)],
    ['Provider institution', field('offering.institution.name', chosen.institution.name)],
    [
      'Provider ID',
      identifierField(
        { type: 'offering.institution.idType', id: 'offering.institution.id' },
        chosen.institution.idType,
        chosen.institution.id,
        INSTITUTION_ID_TYPE_LABELS,
      ),
    ],
    ['EHR code', field('offering.ehrCode', chosen.ehrCode)],
  ])}
  ${blockField('offering.description', chosen.description)}`;
}

function referralLetter(wording: LetterWording): LetterTemplate {
  return {
    name: wording.name,
    masthead: (source) =>
      html`<h1 style="${STYLE.title}">${wording.name}</h1>
        <p style="${STYLE.subtitle}">${wording.addressee(source.offering)}</p>
        ${urgency(source)}`,
    render: (source, display) =>
      html`${heading('Reason for referral')}
        <p style="${STYLE.paragraph}">${wording.salutation}</p>
        <p style="${STYLE.paragraph}">${wording.opening(source.offering)}</p>
        ${blockField('clinicalInfo', source.clinicalInfo)} ${signOff(source)}
        ${referralDetails(source, display)} ${sender(source)} ${offering(source)}
        ${referralRecord(source, display)}`,
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
    o === null
      ? 'No service has been chosen yet'
      : `To ${o.specialty.trim() === '' ? 'the specialist' : o.specialty}, ${providerName(o)}`,
  salutation: 'Dear Colleague,',
  opening: (o) =>
    o === null || o.specialty.trim() === ''
      ? 'I would be grateful if you would see this patient.'
      : `I would be grateful if you would see this patient for ${o.specialty}.`,
});
