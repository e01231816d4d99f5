// Referral events: what the event feed returns and what a webhook delivery carries. IDs, a version
// and a sentence that quotes no free text; never patient data (read the referral for that, which is
// audited).
import { Type } from 'typebox';
import { InstitutionId, Timestamp } from './primitives.ts';
import { named, ref } from './named.ts';
import { CodedReason } from './referral.schema.ts';

export const EventInstitution = named(
  'EventInstitution',
  Type.Object(
    {
      idType: Type.String({ maxLength: 16, description: 'The kind of identifier, such as `hci`' }),
      id: InstitutionId,
    },
    { additionalProperties: false, description: 'The institution the event is for.' },
  ),
);

export const ReferralEvent = named(
  'ReferralEvent',
  Type.Object(
    {
      id: Type.String({
        format: 'uuid',
        description: 'The event’s ID (the timeline event’s), also the `webhook-id` of its deliveries',
      }),
      type: Type.String({
        maxLength: 100,
        description: 'The timeline event type. The set grows: display `description`, do not branch on it.',
      }),
      occurredAt: Timestamp,
      referralId: Type.String({ format: 'uuid' }),
      referralVersion: Type.Integer({
        minimum: 1,
        maximum: 2_147_483_647,
        description: 'The referral’s version once the change was made (compare it with the ETag you hold)',
      }),
      institution: ref(EventInstitution),
      system: Type.String({
        maxLength: 64,
        description: 'The system that acted (`Manual` for the web form, `refhub` for refhub’s own steps)',
      }),
      description: Type.String({
        maxLength: 4000,
        description:
          'A sentence for display: the timeline’s, without the free text it quotes (a cancel note, a ' +
          'reason, an appointment’s location), which may name the patient. The referral’s ' +
          '`timelineEvents[]` quote it.',
      }),
      reason: Type.Optional(ref(CodedReason)),
    },
    { additionalProperties: false },
  ),
);

export const EventPageMetadata = named(
  'EventPageMetadata',
  Type.Object(
    {
      next: Type.String({
        maxLength: 64,
        description:
          'An opaque cursor: pass it as `after` to read on. When the page is empty it is the cursor you ' +
          'sent, if the feed handed it out; otherwise the last position you may see before it.',
      }),
      hasMore: Type.Boolean({ description: 'More events are ready now: read again at once.' }),
    },
    { additionalProperties: false },
  ),
);

export const EventPage = named(
  'EventPage',
  Type.Object(
    {
      data: Type.Array(ref(ReferralEvent), { maxItems: 500, description: 'In feed order.' }),
      metadata: ref(EventPageMetadata),
    },
    { additionalProperties: false },
  ),
);
