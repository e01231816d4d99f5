// The link upsert's answer (contract §5.7).
import { Type } from 'typebox';
import { ReferralId } from './primitives.ts';
import { named } from './named.ts';

export const LinkUpsertResponse = named(
  'LinkUpsertResponse',
  Type.Object({
    referralId: ReferralId,
    url: Type.String({
      description: 'A one-time URL into the web form. It carries no patient data and opens once.',
    }),
    type: Type.Literal('upsert'),
    expiresAt: Type.String({ format: 'date-time', description: 'When the URL stops working.' }),
  }),
);
