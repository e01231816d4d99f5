// What a referral must carry before it can be submitted (contract §5.9).

export interface SubmittableFields {
  readonly offeringId: string | null;
  readonly patientName: string | null;
  readonly patientUin: string | null;
}

/** The request field names that are still missing; empty when the referral can be submitted. */
export function missingForSubmit(referral: SubmittableFields): string[] {
  const missing: string[] = [];
  if (referral.offeringId === null) missing.push('offeringId');
  if (referral.patientName === null || referral.patientName.trim() === '') missing.push('patientName');
  if (referral.patientUin === null || referral.patientUin.trim() === '') missing.push('patientUin');
  return missing;
}
