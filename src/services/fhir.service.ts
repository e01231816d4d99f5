// Reads a referral's FHIR view for a caller: the referral through the referral queries (tenancy,
// and an audit row of its own action) and its forwarding ledger through the forwarding service (which
// checks tenancy again and audits the ledger read as it always does), then maps both. A caller that
// cannot see the referral gets 404 referral_not_found, as for every other read.
import type { Clock } from '../domain/clock.ts';
import type { Caller } from './caller.ts';
import type { EhrForwarding } from './forwarding.service.ts';
import type { ReferralQueries } from './referral-queries.ts';
import { referralBundleOf, type ReferralBundle } from '../render/fhir/referral-bundle.mapping.ts';

/** The audit action of a FHIR read, beside `referral.read` and `referral.read-ehr-form`. */
const FHIR_READ_ACTION = 'referral.read-fhir';

export interface ReferralFhirDeps {
  readonly referralQueries: Pick<ReferralQueries, 'getContent'>;
  readonly ehrForwarding: Pick<EhrForwarding, 'submissions'>;
  readonly clock: Clock;
}

export interface ReferralFhirView {
  /** The referral version the view was read at: the ETag. */
  readonly version: number;
  readonly bundle: ReferralBundle;
}

export function createReferralFhir(deps: ReferralFhirDeps) {
  return {
    async read(caller: Caller, referralId: string): Promise<ReferralFhirView> {
      const referral = await deps.referralQueries.getContent(caller, referralId, FHIR_READ_ACTION);
      const deliveries = await deps.ehrForwarding.submissions(caller, referralId);
      return {
        version: referral.version,
        bundle: referralBundleOf({ referral, deliveries, assembledAt: deps.clock.now() }),
      };
    },
  };
}

export type ReferralFhir = ReturnType<typeof createReferralFhir>;
