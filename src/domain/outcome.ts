// The provider's outcome: what happened to the referral, in a code from the catalog's list with words
// for people, and the consult summary. It closes the loop the referral opened: the sender reads it and
// acknowledges it (lifecycle.ts `complete`, `acknowledge-outcome`).

/** The longest consult summary, in characters. */
export const MAX_OUTCOME_SUMMARY = 8000;

/** An outcome the catalog offers (catalog file `outcomes[]`). */
export interface OutcomeCode {
  /** What the API takes: lower case letters, digits and hyphens. */
  readonly code: string;
  /** The words people read ("Seen and discharged"). */
  readonly display: string;
  /** Whether the provider must write a summary with it (not for "did not attend", for example). */
  readonly summaryRequired: boolean;
  /** A code withdrawn from use is kept for the referrals completed with it, and refused for new ones. */
  readonly active: boolean;
}

export const OUTCOME_CODE_PATTERN = '^[a-z0-9][a-z0-9-]{0,63}$';

/** The outcome as a referral carries it. */
export interface OutcomeView {
  readonly code: string;
  /** The code's words as the catalog had them when the provider completed the referral. */
  readonly display: string;
  /** The consult summary, plain text; null when the code needs none and the provider wrote none. */
  readonly summary: string | null;
  /** The provider's files that are part of the outcome (the consultation letter), in the order given. */
  readonly attachmentIds: string[];
  readonly completedByName: string | null;
  readonly completedAt: string;
  /** Absent until the sender acknowledged it. */
  readonly acknowledgedAt?: string;
  readonly acknowledgedByName?: string | null;
}
