// The provider's outcome as the view and print pages show it (the Outcome card), and what acknowledging
// it from the view page answers when the command refuses: a page that says why, never a stack trace.
import type { AttachmentView } from '../../domain/attachments.ts';
import type { DisplayTime } from '../../domain/display-time.ts';
import type { ReferralView } from '../../domain/referral-view.ts';
import { isStatus } from '../../domain/statuses.ts';
import { ForbiddenRoleError, InvalidTransitionError } from '../../errors.ts';
import type { Notice } from '../../render/pages/form-controls.ts';
import type { OutcomeCard } from '../../render/pages/referral-copy.page.ts';
import { STATUS_TEXT } from '../../render/pages/referral-form-fields.ts';
import { fileItems, type FileLinks } from './attachments-items.ts';
import { WebPageError } from './web-pages.ts';

/** Where the view page's "Acknowledge outcome" posts: a path with the referral ID only. */
export function acknowledgePath(referralId: string): string {
  return `/view/${referralId}/acknowledge-outcome`;
}

/** A person and their institution, as the timeline names them: "Dr Wong (Central General Hospital)". */
function personAt(name: string | null | undefined, institution: string): string {
  const person = name?.trim();
  return person ? `${person} (${institution})` : institution;
}

export interface OutcomeCardInput {
  readonly view: ReferralView;
  /** The referral's files, as the caller may list them. */
  readonly files: readonly AttachmentView[];
  readonly display: DisplayTime;
  /** Download links for the documents (the view page), or none (paper). */
  readonly links: FileLinks;
  /** The session's token, on the view page; the button shows only with it and the sender's leave. */
  readonly csrfToken?: string;
}

/** The Outcome card of a referral, or undefined before the provider completed it. */
export function outcomeCardOf(input: OutcomeCardInput): OutcomeCard | undefined {
  const { view, display } = input;
  const { outcome } = view;
  if (outcome === undefined) return undefined;
  const byId = new Map(input.files.map((file) => [file.id, file]));
  const documents = outcome.attachmentIds
    .map((id) => byId.get(id))
    .filter((file): file is AttachmentView => file !== undefined);
  const provider = view.offering?.institution.name ?? 'The provider';
  const mayAcknowledge = view.allowedActions.includes('acknowledge-outcome');
  return {
    display: outcome.display,
    summary: outcome.summary,
    completedBy: personAt(outcome.completedByName, provider),
    completedAt: display.dateTime(outcome.completedAt),
    documents: fileItems(documents, display, input.links),
    acknowledged:
      outcome.acknowledgedAt === undefined
        ? null
        : {
            by: personAt(outcome.acknowledgedByName, view.sender.name),
            at: display.dateTime(outcome.acknowledgedAt),
          },
    acknowledge:
      mayAcknowledge && input.csrfToken !== undefined
        ? { action: acknowledgePath(view.id), csrfToken: input.csrfToken }
        : null,
  };
}

/** The notice after acknowledging, shown only when the outcome really is acknowledged. */
export function acknowledgedNotice(query: unknown, view: ReferralView): Notice | undefined {
  if ((query as Record<string, unknown>).acknowledged !== '1') return undefined;
  if (view.outcome?.acknowledgedAt === undefined) return undefined;
  return {
    tone: 'success',
    title: 'Outcome acknowledged',
    text: 'The provider and your clinic system can see that the referring clinic has it.',
  };
}

/**
 * What a refused acknowledgement answers, as a page: the outcome acknowledged already (in another tab,
 * or by the clinic system), a page of the provider's, or a referral with no outcome yet. `current`
 * reads the referral again, to name who acknowledged it and when. Anything else goes to the web
 * routes' error handler.
 */
export async function acknowledgeRefusal(
  error: unknown,
  current: () => Promise<ReferralView>,
  display: DisplayTime,
): Promise<unknown> {
  if (error instanceof ForbiddenRoleError) {
    return new WebPageError(403, 'Only the referring clinic acknowledges the outcome', [
      'This page was opened for the provider of the referral. The referring clinic acknowledges the outcome once it has read it.',
    ]);
  }
  if (!(error instanceof InvalidTransitionError)) return error;
  const status = error.extra.currentStatus;
  if (typeof status !== 'string' || !isStatus(status)) return error;
  if (status === 'outcome-acknowledged') {
    const view = await current();
    const outcome = view.outcome;
    const who =
      outcome?.acknowledgedAt === undefined
        ? []
        : [
            `${personAt(outcome.acknowledgedByName, view.sender.name)} acknowledged it on ` +
              `${display.dateTime(outcome.acknowledgedAt)}.`,
          ];
    return new WebPageError(409, 'This outcome has been acknowledged already', [
      ...who,
      'Nothing more is needed. Go back to the referral and reload the page to see it.',
    ]);
  }
  return new WebPageError(409, 'There is no outcome to acknowledge yet', [
    `Its status is now: ${STATUS_TEXT[status].label}.`,
    'The referring clinic acknowledges an outcome once the provider has completed the referral and reported it.',
  ]);
}
