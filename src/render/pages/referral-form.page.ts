// The referral form (contract §8): the patient, the referring clinician, the service and the clinical
// information, with "Save draft" and "Submit referral". It works without script: one POST, answered
// with a redirect on success or with this page again, holding what the person typed and the errors.
//
// `edit` is a draft; `respond` is a referral whose provider asked the sender to act: it shows the
// request, and the service is fixed (changing it would hand the referral to another provider).
//
// The referral's files sit between the clinical information and the buttons, in forms of their own
// (an upload is multipart; a form cannot hold another), so the buttons name the referral's form.
import type { ReasonView } from '../../domain/reasons.ts';
import type { Status } from '../../domain/statuses.ts';
import { html, type SafeHtml } from '../html.ts';
import {
  errorSummary,
  noticeBanner,
  radios,
  select,
  statusTag,
  textarea,
  textInput,
  type Notice,
  type SummaryError,
} from './form-controls.ts';
import { fileList, uploadForm, type FileItem, type FileUpload } from './attachments-list.ts';
import { fixedOffering, offeringChoices, type OfferingChoice } from './offering-choice.ts';
import { renderPage } from './page-shell.ts';
import {
  FIELD_LABELS,
  GENDER_CHOICES,
  REFERRER_ID_TYPE_CHOICES,
  RESIDENTIAL_STATUS_CHOICES,
  type Choice,
  type FormField,
} from './referral-form-fields.ts';

export type { Notice };

export interface ReferralFormModel {
  readonly nonce: string;
  readonly mode: 'edit' | 'respond';
  readonly referralId: string;
  readonly version: number;
  readonly status: Status;
  readonly senderName: string;
  readonly person: string;
  /** Already formatted for display, like every time on this page. */
  readonly lastSaved: string;
  /** The priority the clinic system set, in its words; it decides the urgency (domain/priorities.ts). */
  readonly priority: string | null;
  readonly sessionEnds: string;
  readonly csrfToken: string;
  /** Where the form posts: a path with the referral ID, never patient data. */
  readonly action: string;
  /** What the fields hold: the stored referral, or what the person typed when the page comes back. */
  readonly values: Readonly<Record<FormField, string>>;
  readonly errors: readonly SummaryError[];
  readonly notice?: Notice;
  /** The services to choose from (edit). */
  readonly offerings: readonly OfferingChoice[];
  /** The service, when it cannot change (respond), or null when none was chosen. */
  readonly fixedOffering: OfferingChoice | null;
  /** The provider's latest request: its sentence, when, and the coded reason it gave, if any. */
  readonly providerRequest: {
    readonly text: string;
    readonly at: string;
    readonly reason: ReasonView | null;
  } | null;
  readonly countries: readonly Choice[];
  readonly files: FormFiles;
}

/** The referral's files on the form, and the form that attaches one while the sender may. */
export interface FormFiles {
  readonly items: readonly FileItem[];
  /** Null when the sender may not attach a file now. */
  readonly upload: FileUpload | null;
  /** Whether files are scanned for malware before anyone can open them. */
  readonly scanned: boolean;
  /** Whether the sender may remove files now (a draft); once submitted, they stay. */
  readonly removable: boolean;
}

/** The ID of the referral's own form, which the buttons below the files name. */
const REFERRAL_FORM_ID = 'referral-form';

const URGENCY_CHOICES: readonly Choice[] = [
  { value: 'false', label: 'Routine' },
  { value: 'true', label: 'Urgent' },
];

function errorFor(model: ReferralFormModel, field: FormField): string | undefined {
  return model.errors.find((e) => e.field === field)?.message;
}

function control(model: ReferralFormModel, name: FormField) {
  return { name, label: FIELD_LABELS[name], value: model.values[name], error: errorFor(model, name) };
}

function patientSection(model: ReferralFormModel): SafeHtml {
  return html`<section class="card" aria-labelledby="section-patient">
    <h2 class="card__title" id="section-patient">Patient</h2>
    <p class="card__intro">
      Prefilled from your clinic system: check them against the patient’s records. The name and the NRIC or
      FIN are needed to submit.
    </p>
    <div class="grid">
      <div class="grid__wide">${textInput({ ...control(model, 'patientName'), maxLength: 200 })}</div>
      ${textInput({
        ...control(model, 'patientUin'),
        hint: 'A letter, 7 digits and a letter, for example S1234567D',
        size: 'narrow',
        maxLength: 9,
      })}
      ${
        // Text, not a date input: a date input shows the browser's format ("02/29/1960" in en-US),
        // and every document writes "29 Feb 1960".
        textInput({
          ...control(model, 'dob'),
          hint: 'Day, month and year, for example 29 Feb 1960',
          size: 'date',
          maxLength: 20,
        })
      }
      ${select({ ...control(model, 'patientGender'), choices: GENDER_CHOICES, emptyLabel: 'Not stated' })}
      ${select({ ...control(model, 'nationality'), choices: model.countries, emptyLabel: 'Not stated' })}
      ${select({
        ...control(model, 'residentialStatus'),
        choices: RESIDENTIAL_STATUS_CHOICES,
        emptyLabel: 'Not stated',
      })}
      ${textInput({
        ...control(model, 'patientPhoneNumber'),
        type: 'tel',
        hint: '8 digits, starting with 3, 6, 8 or 9',
        size: 'narrow',
        maxLength: 8,
        inputMode: 'numeric',
      })}
    </div>
  </section>`;
}

function referrerSection(model: ReferralFormModel): SafeHtml {
  return html`<section class="card" aria-labelledby="section-referrer">
    <h2 class="card__title" id="section-referrer">Referring clinician</h2>
    <p class="card__intro">The provider contacts this person about the referral.</p>
    <div class="grid">
      <div class="grid__wide">
        ${textInput({ ...control(model, 'referrerName'), autocomplete: 'name', maxLength: 200 })}
      </div>
      ${select({
        ...control(model, 'referrerIdType'),
        choices: REFERRER_ID_TYPE_CHOICES,
        emptyLabel: 'Not stated',
      })}
      ${
        // As wide as its column: it often holds an email address (an ID of type email).
        textInput({ ...control(model, 'referrerId'), maxLength: 64 })
      }
      ${textInput({
        ...control(model, 'referrerEmail'),
        type: 'email',
        autocomplete: 'email',
        inputMode: 'email',
        maxLength: 254,
      })}
      ${textInput({
        ...control(model, 'referrerContactNumber'),
        type: 'tel',
        autocomplete: 'tel',
        hint: '8 digits, starting with 3, 6, 8 or 9',
        size: 'narrow',
        maxLength: 8,
        inputMode: 'numeric',
      })}
    </div>
  </section>`;
}

function offeringSection(model: ReferralFormModel): SafeHtml {
  const error = errorFor(model, 'offeringId');
  return html`<section class="card">
    ${
      model.mode === 'edit'
        ? offeringChoices(model.offerings, model.values.offeringId, error)
        : fixedOffering(model.fixedOffering)
    }
  </section>`;
}

function clinicalSection(model: ReferralFormModel): SafeHtml {
  return html`<section class="card" aria-labelledby="section-clinical">
    <h2 class="card__title" id="section-clinical">Clinical information</h2>
    <p class="card__intro">What the provider needs to know to triage the referral.</p>
    ${textarea({
      ...control(model, 'clinicalInfo'),
      label: 'Reason for referral and relevant history',
      hint: 'Presenting complaint, findings, current medication and allergies. Up to 8,000 characters.',
      rows: 8,
      maxLength: 8000,
    })}
    ${radios({
      ...control(model, 'isUrgent'),
      choices: URGENCY_CHOICES,
      ...(model.priority === null
        ? {}
        : { hint: `Priority: ${model.priority}, set by your clinic system. It decides the urgency.` }),
    })}
  </section>`;
}

function filesSection(model: ReferralFormModel): SafeHtml {
  const { files } = model;
  return html`<section class="card" aria-labelledby="section-files">
    <h2 class="card__title" id="section-files">Files</h2>
    <p class="card__intro">
      Letters, reports, results or images for the provider.
      ${files.scanned ? 'Each file is scanned for malware before anyone can open it.' : null}
    </p>
    ${fileList(files.items, model.csrfToken)}
    ${
      files.items.length > 0 && !files.removable
        ? html`<p class="muted">
            Files stay with the referral once it has been submitted: the provider may already have them.
          </p>`
        : null
    }
    ${files.upload === null ? null : uploadForm(files.upload, model.csrfToken)}
  </section>`;
}

function providerRequest(model: ReferralFormModel): SafeHtml | null {
  const request = model.providerRequest;
  if (request === null) return null;
  return html`<section class="request" aria-labelledby="provider-request-title">
    <h2 class="request__title" id="provider-request-title">The provider asked you to act</h2>
    ${
      request.reason === null
        ? null
        : html`<p class="request__reason" data-reason-code="${request.reason.code}">
            Reason: ${request.reason.display}
          </p>`
    }
    <p class="request__text">${request.text}</p>
    <p class="muted">${request.at}</p>
  </section>`;
}

export function renderReferralFormPage(model: ReferralFormModel): string {
  const title = model.mode === 'respond' ? 'Respond to the provider’s request' : 'Complete the referral';
  const main = html`<h1 class="page-title">${title}</h1>
    <p class="page-lede">
      ${statusTag(model.status)} <span>Reference <span class="mono">${model.referralId}</span></span>
      <span>Last saved ${model.lastSaved}</span>
    </p>
    ${errorSummary(model.errors)} ${noticeBanner(model.notice)} ${providerRequest(model)}
    <form id="${REFERRAL_FORM_ID}" method="post" action="${model.action}" novalidate>
      <input type="hidden" name="_csrf" value="${model.csrfToken}" />
      <input type="hidden" name="version" value="${model.version}" />
      ${patientSection(model)} ${referrerSection(model)} ${offeringSection(model)} ${clinicalSection(model)}
    </form>
    ${filesSection(model)}
    <div class="actions">
      <button
        class="button button--secondary"
        type="submit"
        form="${REFERRAL_FORM_ID}"
        name="intent"
        value="save"
      >
        Save draft
      </button>
      <button
        class="button button--primary"
        type="submit"
        form="${REFERRAL_FORM_ID}"
        name="intent"
        value="submit"
      >
        ${model.mode === 'respond' ? 'Submit response' : 'Submit referral'}
      </button>
      <p class="actions__note">
        Submitting sends the referral to the provider. Save draft keeps your changes without sending.
      </p>
    </div>`;
  return renderPage({
    nonce: model.nonce,
    title: model.errors.length > 0 ? `Error: ${title}` : title,
    header: { institution: model.senderName, person: model.person },
    main,
    footer: html`<p>
      This page is open to you until ${model.sessionEnds}. After that, open the referral again from your
      clinic system.
    </p>`,
  });
}
