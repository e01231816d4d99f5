// Reads a referral's FHIR view for a caller: the referral through the referral queries (tenancy,
// and an audit row of its own action), then its forwarding ledger through the forwarding service and
// its attachments' metadata through the attachments service (each checks tenancy again and audits its
// read as it always does), and maps them. A caller that cannot see the referral gets 404
// referral_not_found, as for every other read, and nothing after the view's own audit row is read.
import type { Clock } from '../domain/clock.ts';
import type { Attachments } from './attachments/attachments.service.ts';
import type { Caller } from './caller.ts';
import type { EhrForwarding } from './forwarding.service.ts';
import type { ReferralQueries } from './referrals/queries.ts';
import { referralBundleOf, type ReferralBundle } from '../render/fhir/referral-bundle.mapping.ts';

/** The audit action of a FHIR read, beside `referral.read` and `referral.read-ehr-form`. */
const FHIR_READ_ACTION = 'referral.read-fhir';

export interface ReferralFhirDeps {
  readonly referralQueries: Pick<ReferralQueries, 'getContent'>;
  readonly ehrForwarding: Pick<EhrForwarding, 'submissions'>;
  readonly attachments: Pick<Attachments, 'list'>;
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
      const attachments = await deps.attachments.list(caller, referralId);
      return {
        version: referral.version,
        bundle: referralBundleOf({ referral, deliveries, attachments, assembledAt: deps.clock.now() }),
      };
    },
  };
}

export type ReferralFhir = ReturnType<typeof createReferralFhir>;
