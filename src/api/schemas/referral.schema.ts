// Request and response shapes of referrals (contract §5 and §6). The response shapes are named
// schemas (see named.ts): clients get `Referral`, `ReferralSummary`, `Note`, … by these names.
import { Type } from 'typebox';
import { ACTIONS, BLOCK_REASONS } from '../../domain/actions.ts';
import { FHIR_PRIORITIES, PRIORITY_CODE_PATTERN } from '../../domain/priorities.ts';
import { REASON_ACTIONS } from '../../domain/reasons.ts';
import {
  APPOINTMENT_STATUSES,
  CORE_STATUSES,
  LISTED_CORE_STATUSES,
  OFFERING_CATEGORIES,
  STATUSES,
} from '../../domain/statuses.ts';
import {
  Gender,
  InstitutionId,
  InstitutionIdType,
  Nullable,
  OfferingId,
  ReferralId,
  ResidentialStatus,
} from './primitives.ts';
import { named, ref } from './named.ts';

/** The referral content a sender sets, shared with the web form (see services/referrals/fields.ts). */
export { ReferralFields } from '../../services/referrals/fields.ts';

/** A point in time in a response: ISO 8601 UTC with milliseconds (`2026-06-04T03:15:00.000Z`). */
const At = (description?: string) =>
  Type.String({ format: 'date-time', ...(description === undefined ? {} : { description }) });

export const Institution = named(
  'Institution',
  Type.Object({
    idType: Type.String({ maxLength: 16, description: 'The kind of identifier, such as `hci`.' }),
    id: InstitutionId,
    name: Type.String(),
  }),
);

export const Offering = named(
  'Offering',
  Type.Object(
    {
      id: OfferingId,
      name: Type.String(),
      category: Type.Enum([...OFFERING_CATEGORIES]),
      description: Type.String({ description: 'May contain URLs.' }),
      specialty: Type.String(),
      ehrCode: Type.String({ description: 'The code of the offering in the national EHR.' }),
      institution: ref(Institution),
      system: Type.String({ description: "The provider's system." }),
    },
    { description: 'A service a provider offers, from the catalog.' },
  ),
);

export const Patient = named(
  'Patient',
  Type.Object(
    {
      uin: Nullable(Type.String()),
      name: Nullable(Type.String()),
      dob: Nullable(Type.String({ format: 'date' })),
      gender: Nullable(Gender),
      nationality: Nullable(Type.String()),
      phoneNumber: Nullable(Type.String()),
      residentialStatus: Nullable(ResidentialStatus),
    },
    { description: '`isHsgEnrolled` was removed in v0.0.69 and is never returned.' },
  ),
);

export const Referrer = named(
  'Referrer',
  Type.Object(
    {
      id: Nullable(Type.String()),
      idType: Nullable(Type.String()),
      name: Nullable(Type.String()),
      email: Nullable(Type.String()),
      contactNumber: Nullable(Type.String()),
    },
    { description: 'The clinician who refers the patient.' },
  ),
);

export const AllowedAction = named(
  'AllowedAction',
  Type.Enum([...ACTIONS], {
    description:
      'An operation of the lifecycle a party runs on a referral: `edit` (PATCH, or the link upsert naming ' +
      'the referral), `submit`, `delete`, `back-to-draft`, `cancel`, `accept`, `reject`, `request-action`, ' +
      '`upsert-appointment` (PUT of an appointment), `complete` (the provider reports the outcome), ' +
      '`acknowledge-outcome` (the sender read it), `add-note` (POST of a note) and `add-attachment` ' +
      '(POST of a file). More may be added.',
  }),
);

export const BlockedAction = named(
  'BlockedAction',
  Type.Object(
    {
      action: ref(AllowedAction),
      reason: Type.Enum([...BLOCK_REASONS], {
        description:
          'Stable code: branch on this. `not-your-side` (the institution is not the side of the referral ' +
          'the key acts for), `not-in-status` (not from the current status), `offering-not-cancellable` ' +
          '(the sender may not cancel: the offering is not cancellable). A call of the action fails with ' +
          'this `reason` in its problem.',
      }),
      detail: Type.String({ description: 'Why, as a sentence for people.' }),
    },
    { description: "An action the caller's side has, which it may not run now, and why." },
  ),
);

export const Priority = named(
  'Priority',
  Type.Object(
    {
      code: Type.String({
        maxLength: 64,
        description: "A code of the catalog's priorities (GET /priorities).",
      }),
      display: Type.String({
        maxLength: 200,
        description: 'Its words, as the catalog had them when it was set.',
      }),
      fhirPriority: Type.Enum([...FHIR_PRIORITIES], {
        description: "FHIR's request priority it maps to, as the catalog had it when it was set.",
      }),
    },
    { additionalProperties: false, description: "The referral's priority, set by the sender." },
  ),
);

export const PriorityCode = named(
  'PriorityCode',
  Type.Object(
    {
      code: Type.String({ maxLength: 64 }),
      display: Type.String({ maxLength: 200, description: 'Words for people.' }),
      fhirPriority: Type.Enum([...FHIR_PRIORITIES], {
        description:
          "FHIR's request priority it maps to: what the FHIR view gives, and what decides `isUrgent`.",
      }),
    },
    { description: 'A priority the catalog offers.' },
  ),
);

export const summaryProperties = {
  id: ReferralId,
  version: Type.Integer({
    minimum: 1,
    maximum: 2_147_483_647,
    description: 'Increments with every change; sent back as ETag.',
  }),
  createdAt: At('When the draft was first created (not the submission time).'),
  updatedAt: At('When the referral last changed.'),
  submittedAt: Type.Optional(
    At('When the referral was submitted; absent for drafts. Sort and display by this.'),
  ),
  senderSystem: Type.String({ description: '`Manual` or a system of the catalog, such as `HAS`.' }),
  sender: ref(Institution),
  offering: Nullable(ref(Offering)),
  patient: ref(Patient),
  referrer: ref(Referrer),
  clinicalInfo: Nullable(Type.String()),
  isUrgent: Type.Boolean({
    description: 'Routine or urgent; with a `priority`, whether it is more pressing than routine.',
  }),
  priority: Nullable(ref(Priority)),
  status: Type.Enum([...STATUSES], {
    deprecated: true,
    description: 'Deprecated since v0.0.66: use coreStatus. The fine-grained status; it may be removed.',
  }),
  coreStatus: Type.Enum([...CORE_STATUSES], {
    description:
      'The status to display to users. `archived` is never in a body: an archived referral answers 410 ' +
      '`referral_archived`, and no list shows it.',
  }),
  isCancellable: Type.Boolean({
    description:
      'Whether a cancel option may be offered to the caller: equal to whether `cancel` is in its ' +
      "allowedActions. For an ops key, which acts on no referral, the sender's answer.",
  }),
  allowedActions: Type.Array(ref(AllowedAction), {
    maxItems: ACTIONS.length,
    description:
      'The actions the caller may run now, for the side of the referral its key acts for, by the ' +
      'lifecycle. A call may still be refused for its content (400, 422 incomplete_referral, 409 ' +
      'limit_exceeded, 412).',
  }),
  blockedActions: Type.Array(ref(BlockedAction), {
    maxItems: ACTIONS.length,
    description:
      "The other actions of the caller's side, with the reason each is not allowed now. Actions the side " +
      'never has (a sender accepting) are in neither list.',
  }),
  actionRequired: Type.Optional(
    Type.Object(
      {
        reason: Type.Enum(['provider-request', 'outcome-to-acknowledge'], {
          description:
            'Stable code: `provider-request` (the provider asked the sender to act; the timeline gives ' +
            'why) or `outcome-to-acknowledge` (the provider completed the referral; read `outcome` and ' +
            'acknowledge it). More may be added.',
        }),
        description: Type.String({ description: 'Why, as a sentence for the sender.' }),
      },
      {
        description:
          'Only for the sender, while the referral waits for it: it is then listed under the ' +
          '`sender-action-required` filter. Absent otherwise.',
      },
    ),
  ),
  redirectedFrom: Type.Optional(
    Type.String({
      format: 'uuid',
      description:
        'The referral this one carries on after a redirect (POST /referrals/{id}/redirect). Absent for a ' +
        'referral its sender submitted. Its new provider cannot read that referral: the timeline ' +
        'holds its steps.',
    }),
  ),
  redirectedTo: Type.Optional(
    Type.String({
      format: 'uuid',
      description: 'The successor this referral was redirected to; present exactly when it is `redirected`.',
    }),
  ),
};

export const ReferralSummary = named(
  'ReferralSummary',
  Type.Object(summaryProperties, {
    description: 'A referral without its appointments, links, notes and timeline: what lists return.',
  }),
);

export const Appointment = named(
  'Appointment',
  Type.Object({
    id: Type.String({ description: "The provider system's own identifier of the appointment." }),
    status: Type.Enum([...APPOINTMENT_STATUSES]),
    startAt: At(),
    location: Type.String(),
    updatedAt: At(),
  }),
);

export const Link = named(
  'Link',
  Type.Object({
    type: Type.Enum(['edit', 'respond', 'print', 'view']),
    label: Type.String({ description: 'Text for a button that opens our web form.' }),
    url: Type.String({ description: 'A one-time URL; it expires after LINK_TTL_SECONDS.' }),
  }),
);

export const Note = named(
  'Note',
  Type.Object(
    {
      id: Type.String({ format: 'uuid' }),
      content: Type.String({ description: 'Plain text.' }),
      authorName: Nullable(Type.String()),
      authorInstitution: ref(Institution),
      createdAt: At(),
    },
    { description: 'A note on a referral. Notes are immutable.' },
  ),
);

export const Outcome = named(
  'Outcome',
  Type.Object(
    {
      code: Type.String({ description: "A code of the catalog's outcome list (GET /outcome-codes)." }),
      display: Type.String({
        description: "The code's words for people, as the catalog had them when the referral was completed.",
      }),
      summary: Nullable(
        Type.String({
          description: 'The consult summary, plain text; null only where the code requires none.',
        }),
      ),
      attachmentIds: Type.Array(Type.String({ format: 'uuid' }), {
        description: "The provider's attachments that are part of the outcome (the consultation letter).",
      }),
      completedByName: Nullable(Type.String()),
      completedAt: At(),
      acknowledgedAt: Type.Optional(At('When the sender acknowledged the outcome; absent until then.')),
      acknowledgedByName: Type.Optional(Nullable(Type.String())),
    },
    { description: "The provider's outcome: what happened to the referral." },
  ),
);

export const OutcomeCode = named(
  'OutcomeCode',
  Type.Object(
    {
      code: Type.String(),
      display: Type.String({ description: 'Words for people.' }),
      summaryRequired: Type.Boolean({ description: 'Whether completing with this code needs a `summary`.' }),
    },
    { description: 'An outcome a provider may report, from the catalog.' },
  ),
);

export const CodedReason = named(
  'CodedReason',
  Type.Object(
    {
      code: Type.String({
        maxLength: 64,
        description: "A code of the catalog's reasons (GET /reason-codes).",
      }),
      display: Type.String({
        maxLength: 200,
        description: 'Its words for people, as the catalog had them when the reason was given.',
      }),
    },
    {
      additionalProperties: false,
      description:
        'The coded reason a step was given for (a rejection, a request to act, a cancellation, a return to ' +
        'draft, a redirect). What the person wrote beside it is quoted in the timeline alone.',
    },
  ),
);

export const ReasonCode = named(
  'ReasonCode',
  Type.Object(
    {
      code: Type.String({ maxLength: 64 }),
      display: Type.String({ maxLength: 200, description: 'Words for people.' }),
      actions: Type.Array(Type.Enum([...REASON_ACTIONS]), {
        maxItems: REASON_ACTIONS.length,
        description: 'The operations the code may be given for.',
      }),
      commentRequired: Type.Boolean({
        description: 'Whether a comment must come with the code (`reason`, `cancelNote` or `comment`).',
      }),
    },
    { description: 'A reason the catalog offers for the operations it names.' },
  ),
);

export const TimelineEvent = named(
  'TimelineEvent',
  Type.Object({
    id: Type.String({ format: 'uuid' }),
    type: Type.String({ description: 'Do not branch on this; new types are added. Display `description`.' }),
    system: Type.String({
      description:
        'The system that performed the step: a system of the catalog, `Manual` for the web form, or ' +
        '`refhub` for what refhub did by itself (a delivery to the EHR, a reminder).',
    }),
    description: Type.String({ description: 'A complete sentence to display to users.' }),
    producedAt: At(),
    reason: Type.Optional(ref(CodedReason)),
    fromReferralId: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          'For a step of the referral this one was redirected from, copied into its timeline at the ' +
          "redirect: that referral's ID. Absent for the referral's own steps.",
      }),
    ),
  }),
);

export const EhrForwarding = named(
  'EhrForwarding',
  Type.Object(
    {
      state: Type.Enum(['not-sent', 'queued', 'forwarded', 'failed']),
      lastAttemptAt: Type.Optional(At()),
      sha256: Type.Optional(Type.String({ description: 'Of the ehrForm bytes last sent.' })),
      attempts: Type.Integer(),
    },
    { description: 'How far forwarding the referral to the national EHR has got.' },
  ),
);

export const Referral = named(
  'Referral',
  Type.Object(
    {
      ...summaryProperties,
      appointments: Type.Array(ref(Appointment)),
      links: Type.Array(ref(Link), {
        description: 'What the requester can do now, one button each. Minted for the requesterIdentifier.',
      }),
      notes: Type.Array(ref(Note)),
      outcome: Type.Optional(ref(Outcome)),
      timelineEvents: Type.Array(ref(TimelineEvent), { description: 'Oldest first.' }),
      ehrForwarding: ref(EhrForwarding),
      ehrForm: Type.Optional(
        Type.String({ description: 'Self-contained HTML document. Only with additionalField=ehrForm.' }),
      ),
      ehrFormType: Type.Optional(
        Type.String({ description: 'Template names joined by `|`. Only with additionalField=ehrForm.' }),
      ),
    },
    { description: 'A referral with everything the requester may see of it.' },
  ),
);

export const PageMetadata = named(
  'PageMetadata',
  Type.Object({
    offset: Type.Integer({ description: 'How many matching referrals come before this page.' }),
    pageSize: Type.Integer(),
    hasNext: Type.Boolean({ description: 'Whether a page follows: ask again with offset + pageSize.' }),
    total: Type.Integer({ description: 'How many referrals match.' }),
  }),
);

export const ReferralPage = named(
  'ReferralPage',
  Type.Object({ data: Type.Array(ref(ReferralSummary)), metadata: ref(PageMetadata) }),
);

export const ListFilters = {
  status: Type.Optional(
    Type.Array(Type.Enum([...LISTED_CORE_STATUSES]), {
      maxItems: LISTED_CORE_STATUSES.length,
      description:
        'coreStatus values; repeatable. `sender-action-required` selects the referrals that need the caller to act. ' +
        'Not `archived`: no list shows an archived referral (a read of one answers 410 `referral_archived`).',
    }),
  ),
  role: Type.Optional(
    Type.Enum(['sender', 'provider'], { description: 'Only referrals the institution sends, or receives.' }),
  ),
  priority: Type.Optional(
    Type.Array(Type.String({ pattern: PRIORITY_CODE_PATTERN, maxLength: 64 }), {
      maxItems: 20,
      description:
        'Priority codes (GET /priorities); repeatable. Only referrals with one of these priorities.',
    }),
  ),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 10 })),
  sort: Type.Optional(
    Type.Enum(['updatedAt', 'submittedAt', 'createdAt'], {
      default: 'updatedAt',
      description: 'Always descending.',
    }),
  ),
};

export const InstitutionParams = Type.Object(
  { institutionIdType: InstitutionIdType, institutionId: InstitutionId },
  { additionalProperties: false },
);
