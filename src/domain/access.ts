// Who may see and act on a referral (contract §2). An institution sees a referral when it is the
// sender, or when it is the provider and the referral has left draft. For everybody else the
// referral does not exist (404), so IDs cannot be probed.
import { ForbiddenRoleError } from '../errors.ts';
import type { Operation } from './lifecycle.ts';
import { LIFECYCLE } from './lifecycle.ts';
import type { Party, Role, Status } from './statuses.ts';

export interface InstitutionRef {
  readonly idType: string;
  readonly id: string;
}

export interface ReferralParties {
  readonly status: Status;
  readonly sender: InstitutionRef;
  readonly provider: InstitutionRef | null;
}

export function sameInstitution(a: InstitutionRef | null, b: InstitutionRef): boolean {
  return a !== null && a.idType === b.idType && a.id === b.id;
}

/** The sides of the referral the institution is on (both, when it refers to itself). */
export function partiesOf(referral: ReferralParties, institution: InstitutionRef): Party[] {
  const parties: Party[] = [];
  if (sameInstitution(referral.sender, institution)) parties.push('sender');
  if (referral.status !== 'draft' && sameInstitution(referral.provider, institution))
    parties.push('provider');
  return parties;
}

/** Whether the institution is the `party` side of the referral (a provider only once submitted). */
export function isOnSide(referral: ReferralParties, institution: InstitutionRef, party: Party): boolean {
  return partiesOf(referral, institution).includes(party);
}

/** Why a key of `party`'s role may not act on a referral whose `party` side is another institution. */
export function notYourSideDetail(party: Party, institution: InstitutionRef): string {
  return `This ${party} key acts for ${institution.idType}:${institution.id}, which is not this referral's ${party}.`;
}

export function isVisible(referral: ReferralParties, institution: InstitutionRef): boolean {
  return partiesOf(referral, institution).length > 0;
}

/**
 * The party a key acts as for an operation on a visible referral. A sender key acts as the sender, a
 * provider key as the provider; a key whose role may not perform the operation at all gets 403
 * forbidden_role, and one whose institution is not on that side gets it with reason `not-your-side`
 * (the reason `blockedActions[]` gives for it, see actions.ts).
 */
export function actingParty(
  operation: Operation,
  role: Role,
  referral: ReferralParties,
  institution: InstitutionRef,
): Party {
  const rule = LIFECYCLE[operation];
  const allowed = Object.keys(rule.from);
  if (role === 'ops' || !allowed.includes(role)) {
    throw new ForbiddenRoleError(`A ${role} key may not ${operation.replaceAll('-', ' ')} referrals.`);
  }
  if (!isOnSide(referral, institution, role)) {
    throw new ForbiddenRoleError(notYourSideDetail(role, institution), 'not-your-side');
  }
  return role;
}
