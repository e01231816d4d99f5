// The worklists (docs/api.md, "Worklists"): a page of one list, each item the list's summary with its
// triage due time, and the lists with their counts.
import { Type } from 'typebox';
import { WORKLIST_NAMES } from '../../domain/worklists.ts';
import { named, ref } from './named.ts';
import { PageMetadata, summaryProperties } from './referral.schema.ts';

export const WorklistName = Type.Enum([...WORKLIST_NAMES], {
  description:
    'The provider’s `to-triage` (waiting for acceptance), `overdue` (waiting past the due time) and ' +
    '`to-book` (accepted, no appointment); the sender’s `needs-action` (sent back for the sender to act ' +
    'on), `outcomes-to-read` (completed, outcome not acknowledged) and `rejected`.',
});

export const WorklistItem = named(
  'WorklistItem',
  Type.Object(
    {
      ...summaryProperties,
      dueAt: Type.Optional(
        Type.String({
          format: 'date-time',
          maxLength: 40,
          description:
            'When the provider’s triage is due: the end of the last working day the service’s level ' +
            'gives the referral’s priority, counted from its latest submission, weekends and the ' +
            'catalog’s public holidays left out. Absent when the service has no service level.',
        }),
      ),
      overdue: Type.Boolean({ description: 'Whether it still waits for acceptance past `dueAt`.' }),
    },
    { description: 'A referral of a worklist: the list’s summary with its due time.' },
  ),
);

export const WorklistPage = named(
  'WorklistPage',
  Type.Object({ data: Type.Array(ref(WorklistItem)), metadata: ref(PageMetadata) }),
);

export const WorklistCount = named(
  'WorklistCount',
  Type.Object({
    name: WorklistName,
    side: Type.Enum(['sender', 'provider'], {
      description: 'Whether it lists referrals the institution sends, or receives.',
    }),
    title: Type.String({ description: 'What it lists, in words.' }),
    count: Type.Integer({ minimum: 0, description: 'How many referrals it has now.' }),
  }),
);

export const WorklistCounts = named('WorklistCounts', Type.Object({ data: Type.Array(ref(WorklistCount)) }));
