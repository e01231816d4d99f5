// Coded reasons: why a referral was rejected, sent back to its sender, cancelled, returned to draft or
// redirected, in a code from the catalog's list with words for people (catalog file `reasons[]`). The
// code and its words are not patient data: the timeline, the event feed, webhooks and the FHIR view
// carry them. What a person wrote beside the code (the comment) may name the patient: the timeline
// quotes it, the events never do (domain/timeline.ts).

/** The operations that take a reason, by their names in the lifecycle table. */
export const REASON_ACTIONS = ['reject', 'request-action', 'cancel', 'back-to-draft', 'redirect'] as const;
export type ReasonAction = (typeof REASON_ACTIONS)[number];

export const REASON_CODE_PATTERN = '^[a-z0-9][a-z0-9-]{0,63}$';

/** A reason the catalog offers. */
export interface ReasonCode {
  /** What the API takes: lower case letters, digits and hyphens. */
  readonly code: string;
  /** The words people read ("Referred to the wrong service"). */
  readonly display: string;
  /** The operations it may be given for. */
  readonly actions: readonly ReasonAction[];
  /** Whether a comment must come with it ("other", or advice the sender must read). */
  readonly commentRequired: boolean;
  /** A code withdrawn from use is kept for the referrals that carry it, and refused for new ones. */
  readonly active: boolean;
}

/** A reason as a timeline event carries it: the code, and its words as the catalog had them then. */
export interface ReasonView {
  readonly code: string;
  readonly display: string;
}

/** Why the reason a request gave cannot be taken; `field` is the body field the problem names. */
export interface ReasonProblem {
  readonly field: 'reasonCode' | 'comment';
  readonly message: string;
}

/**
 * Checks the reason of an `action` request against the catalog's `codes`: a code that is in use and
 * may be given for the action, and the comment its code requires. A request without a code gives its
 * comment alone, as requests did before the catalog had codes.
 */
export function checkReason(
  codes: readonly ReasonCode[],
  action: ReasonAction,
  request: { readonly reasonCode: string | undefined; readonly comment: string | undefined },
): { readonly reason: ReasonView | undefined; readonly problems: readonly ReasonProblem[] } {
  const hasComment = request.comment !== undefined && request.comment.trim() !== '';
  if (request.reasonCode === undefined) return { reason: undefined, problems: [] };
  const found = codes.find((c) => c.code === request.reasonCode && c.active);
  if (found === undefined) {
    return {
      reason: undefined,
      problems: [
        {
          field: 'reasonCode',
          message: 'is not a reason the catalog offers (GET /api/v1/reason-codes lists them)',
        },
      ],
    };
  }
  if (!found.actions.includes(action)) {
    return {
      reason: undefined,
      problems: [
        {
          field: 'reasonCode',
          message: `is a reason for ${found.actions.join(', ')}, not for ${action}`,
        },
      ],
    };
  }
  if (found.commentRequired && !hasComment) {
    return {
      reason: undefined,
      problems: [{ field: 'comment', message: `is required with the reason ${found.code}` }],
    };
  }
  return { reason: { code: found.code, display: found.display }, problems: [] };
}
