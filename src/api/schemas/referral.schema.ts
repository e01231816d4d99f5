// Request and response shapes of referrals (contract §5 and §6).
import { Type } from 'typebox';
import { APPOINTMENT_STATUSES, CORE_STATUSES, OFFERING_CATEGORIES, STATUSES } from '../../domain/statuses.ts';
import {
  Gender,
  InstitutionId,
  InstitutionIdType,
  Nullable,
  OfferingId,
  ReferralId,
  ResidentialStatus,
} from './primitives.ts';

/** The referral content a sender sets, shared with the web form (see services/referral-fields.ts). */
export { ReferralFields } from '../../services/referral-fields.ts';

export const Institution = Type.Object({
  idType: Type.String({ maxLength: 16 }),
  id: InstitutionId,
  name: Type.String(),
});

export const Offering = Type.Object({
  id: OfferingId,
  name: Type.String(),
  category: Type.Enum([...OFFERING_CATEGORIES]),
  description: Type.String({ description: 'May contain URLs.' }),
  specialty: Type.String(),
  ehrCode: Type.String(),
  institution: Institution,
  system: Type.String(),
});

export const Patient = Type.Object(
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
);

export const Referrer = Type.Object({
  id: Nullable(Type.String()),
  idType: Nullable(Type.String()),
  name: Nullable(Type.String()),
  email: Nullable(Type.String()),
  contactNumber: Nullable(Type.String()),
});

const summaryProperties = {
  id: ReferralId,
  version: Type.Integer({ minimum: 1, description: 'Increments with every change; sent back as ETag.' }),
  createdAt: Type.String({ description: 'When the draft was first created (not the submission time).' }),
  updatedAt: Type.String(),
  submittedAt: Type.Optional(
    Type.String({
      description: 'When the referral was submitted; absent for drafts. Sort and display by this.',
    }),
  ),
  senderSystem: Type.String({ description: '`Manual` or a system of the catalog, such as `HAS`.' }),
  sender: Institution,
  offering: Nullable(Offering),
  patient: Patient,
  referrer: Referrer,
  clinicalInfo: Nullable(Type.String()),
  isUrgent: Type.Boolean(),
  status: Type.Enum([...STATUSES], {
    deprecated: true,
    description: 'Deprecated since v0.0.66: use coreStatus. The fine-grained status; it may be removed.',
  }),
  coreStatus: Type.Enum([...CORE_STATUSES], { description: 'The status to display to users.' }),
  isCancellable: Type.Boolean({ description: 'Whether a cancel option may be offered to the sender.' }),
};

export const ReferralSummary = Type.Object(summaryProperties);

export const Appointment = Type.Object({
  id: Type.String(),
  status: Type.Enum([...APPOINTMENT_STATUSES]),
  startAt: Type.String(),
  location: Type.String(),
  updatedAt: Type.String(),
});

export const Link = Type.Object({
  type: Type.Enum(['edit', 'respond', 'print', 'view']),
  label: Type.String({ description: 'Text for a button that opens our web form.' }),
  url: Type.String({ description: 'A one-time URL; it expires after LINK_TTL_SECONDS.' }),
});

export const Note = Type.Object({
  id: Type.String(),
  content: Type.String(),
  authorName: Nullable(Type.String()),
  authorInstitution: Institution,
  createdAt: Type.String(),
});

export const TimelineEvent = Type.Object({
  id: Type.String(),
  type: Type.String({ description: 'Do not branch on this; new types are added. Display `description`.' }),
  system: Type.String(),
  description: Type.String({ description: 'A complete sentence to display to users.' }),
  producedAt: Type.String(),
});

export const Referral = Type.Object({
  ...summaryProperties,
  appointments: Type.Array(Appointment),
  links: Type.Array(Link, {
    description: 'What the requester can do now, one button each. Minted for the requesterIdentifier.',
  }),
  notes: Type.Array(Note),
  timelineEvents: Type.Array(TimelineEvent, { description: 'Oldest first.' }),
  ehrForwarding: Type.Object({
    state: Type.Enum(['not-sent', 'queued', 'forwarded', 'failed']),
    lastAttemptAt: Type.Optional(Type.String()),
    sha256: Type.Optional(Type.String()),
    attempts: Type.Integer(),
  }),
  ehrForm: Type.Optional(
    Type.String({ description: 'Self-contained HTML document. Only with additionalField=ehrForm.' }),
  ),
  ehrFormType: Type.Optional(
    Type.String({ description: 'Template names joined by `|`. Only with additionalField=ehrForm.' }),
  ),
});

export const ReferralPage = Type.Object({
  data: Type.Array(ReferralSummary),
  metadata: Type.Object({
    offset: Type.Integer(),
    pageSize: Type.Integer(),
    hasNext: Type.Boolean(),
    total: Type.Integer(),
  }),
});

export const ListFilters = {
  status: Type.Optional(
    Type.Array(Type.Enum([...CORE_STATUSES]), {
      maxItems: CORE_STATUSES.length,
      description:
        'coreStatus values; repeatable. `sender-action-required` selects the referrals that need the caller to act.',
    }),
  ),
  role: Type.Optional(
    Type.Enum(['sender', 'provider'], { description: 'Only referrals the institution sends, or receives.' }),
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
