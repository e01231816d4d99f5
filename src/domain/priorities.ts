// A referral's priority: how soon the provider must act on it, in a code from the catalog's list with
// words for people (catalog file `priorities[]`; the demo's routine, urgent and two-week wait). Each
// code maps to one of FHIR's request priorities, which the FHIR view gives and which decides
// `isUrgent`. An offering may take some of them only (`offerings[].priorities`); without a list it
// takes every priority in use.

/** FHIR R4's request priorities (http://hl7.org/fhir/request-priority), least pressing first. */
export const FHIR_PRIORITIES = ['routine', 'urgent', 'asap', 'stat'] as const;
export type FhirPriority = (typeof FHIR_PRIORITIES)[number];

export const PRIORITY_CODE_PATTERN = '^[a-z0-9][a-z0-9-]{0,63}$';

/** A priority the catalog offers. */
export interface PriorityCode {
  readonly code: string;
  readonly display: string;
  readonly fhirPriority: FhirPriority;
  /** A withdrawn code stays for the referrals that carry it, and is refused for new ones. */
  readonly active: boolean;
}

/** A referral's priority: the code, its words and FHIR's priority as the catalog had them when set. */
export interface ReferralPriority {
  readonly code: string;
  readonly display: string;
  readonly fhirPriority: FhirPriority;
}

/** Whether a priority is more pressing than routine: what `isUrgent` says of a referral that has one. */
export function isUrgentPriority(priority: Pick<ReferralPriority, 'fhirPriority'>): boolean {
  return priority.fhirPriority !== 'routine';
}

/** The priorities an offering takes (`null`: every one), in use, in the catalog's order. */
export function prioritiesOf(
  codes: readonly PriorityCode[],
  offering: { readonly priorities: readonly string[] | null },
): PriorityCode[] {
  return codes.filter(
    (c) => c.active && (offering.priorities === null || offering.priorities.includes(c.code)),
  );
}

/** What a create or update asks of the priority, and what the referral has now. */
export interface PriorityRequest {
  /** undefined: leave it; null: clear it; a code: set it. */
  readonly priority: string | null | undefined;
  readonly isUrgent: boolean | null | undefined;
  /** The offering the referral will have after the request; null: none yet. */
  readonly offering: { readonly name: string; readonly priorities: readonly string[] | null } | null;
  /** Whether the request changes the offering. */
  readonly offeringChanged: boolean;
  readonly current: ReferralPriority | null;
}

export interface PriorityProblem {
  readonly field: 'priority' | 'isUrgent';
  readonly message: string;
}

/**
 * The priority a request leaves a referral with, checked against the catalog's `codes`: a code in use
 * that the referral's offering takes, kept when the offering changes only if the new one takes it too.
 * A referral with a priority is urgent exactly when its priority is; `isUrgent` sent beside it must
 * agree. `change` holds the columns to write (absent: leave them).
 */
export function resolvePriority(
  codes: readonly PriorityCode[],
  request: PriorityRequest,
): {
  readonly change: { readonly priority?: ReferralPriority | null; readonly isUrgent?: boolean };
  readonly problems: readonly PriorityProblem[];
} {
  const takes = (code: string) =>
    request.offering === null || prioritiesOf(codes, request.offering).some((c) => c.code === code);
  let priority: ReferralPriority | null | undefined;
  if (request.priority === null) priority = null;
  else if (request.priority !== undefined) {
    const found = codes.find((c) => c.code === request.priority && c.active);
    if (found === undefined)
      return fail('priority', 'is not a priority the catalog offers (GET /api/v1/priorities lists them)');
    if (!takes(found.code))
      return fail('priority', `is not a priority ${request.offering?.name ?? 'the service'} takes`);
    priority = { code: found.code, display: found.display, fhirPriority: found.fhirPriority };
  } else if (request.offeringChanged && request.current !== null && !takes(request.current.code)) {
    return fail(
      'priority',
      `is not a priority ${request.offering?.name ?? 'the service'} takes; choose another`,
    );
  }
  const after = priority === undefined ? request.current : priority;
  if (after !== null && request.isUrgent !== undefined && request.isUrgent !== null) {
    if (request.isUrgent !== isUrgentPriority(after))
      return fail('isUrgent', `disagrees with the priority ${after.display}, which decides it`);
  }
  return {
    change:
      priority === undefined
        ? {}
        : { priority, ...(priority === null ? {} : { isUrgent: isUrgentPriority(priority) }) },
    problems: [],
  };
}

function fail(field: PriorityProblem['field'], message: string) {
  return { change: {}, problems: [{ field, message }] } as const;
}
