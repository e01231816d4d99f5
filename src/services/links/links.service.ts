// The link upsert (contract §5.7): hands a clinician a one-time URL into our web form. Without a
// referralId it creates a draft from the prefill; with one, it applies the prefill to a referral the
// sender may still change (draft or sender-action-required) and hands out a fresh link.
//
// The clinic system always says who is asking (`requesterIdentifier`), and prefers an email address.
// When neither the body nor the referral names a referring clinician, that email is what the clinic
// system knows of the clinician: it becomes the referrer's email (and ID, of type `email`), so the
// letter is signed by someone and the provider knows whom to contact. The form shows it, to be
// corrected there if the person referring is someone else.
import type { Clock } from '../../domain/clock.ts';
import { upsertLinkAction } from '../../domain/links.ts';
import type { LinkAction, ReferrerView } from '../../domain/referral-view.ts';
import { ForbiddenRoleError, InvalidTransitionError } from '../../errors.ts';
import { auditEventOf } from '../../domain/audit.ts';
import type { Stores } from '../../db/stores.ts';
import type { Caller } from '../caller.ts';
import type { LinkMinter } from './minter.ts';
import { createReferralFieldsCheck } from '../referrals/fields.ts';
import type { ReferralFieldsInput } from '../referrals/input.ts';
import { createMutationRunner } from '../referrals/mutation.ts';
import { newDraft, planUpdate } from '../referrals/commands.ts';

export interface LinkDeps {
  /** The referral the link opens, and the catalog a prefill names. */
  readonly stores: Pick<Stores, 'referrals' | 'catalog'>;
  readonly clock: Clock;
  readonly links: LinkMinter;
}

export interface LinkUpsertResult {
  readonly referralId: string;
  readonly url: string;
  readonly type: 'upsert';
  readonly expiresAt: string;
}

/** The prefill fields that name the referring clinician; sending any of them (even null) is naming. */
const REFERRER_IDENTITY = ['referrerName', 'referrerId', 'referrerIdType', 'referrerEmail'] as const;

function hasReferrer(stored: ReferrerView): boolean {
  return [stored.name, stored.id, stored.idType, stored.email].some((v) => v !== null);
}

export function createLinkService(deps: LinkDeps) {
  const mutate = createMutationRunner({ referrals: deps.stores.referrals, clock: deps.clock });
  const checkFields = createReferralFieldsCheck();

  /**
   * The prefill, with the requester as the referring clinician when nobody else is named and the
   * requester is an email address the referrer fields accept (as the ID too only if it fits its
   * 64 characters). `stored` is the referral's referrer, for an existing referral.
   */
  function withRequesterAsReferrer(
    prefill: ReferralFieldsInput,
    requester: string,
    stored: ReferrerView | null,
  ): ReferralFieldsInput {
    if (REFERRER_IDENTITY.some((f) => prefill[f] !== undefined)) return prefill;
    if (stored !== null && hasReferrer(stored)) return prefill;
    const asEmailId = { referrerEmail: requester, referrerIdType: 'email', referrerId: requester };
    if (checkFields(asEmailId).length === 0) return { ...prefill, ...asEmailId };
    const asEmail = { referrerEmail: requester };
    if (checkFields(asEmail).length === 0) return { ...prefill, ...asEmail };
    return prefill;
  }

  return {
    async upsert(
      caller: Caller & { readonly requesterIdentifier: string },
      referralId: string | undefined,
      prefill: ReferralFieldsInput,
      ifMatch?: number,
    ): Promise<LinkUpsertResult> {
      // With a referralId, the mutation runner checks visibility before the role, so an institution
      // that cannot see the referral gets 404 (contract §2), as on every other referral route.
      if (referralId === undefined && caller.role !== 'sender')
        throw new ForbiddenRoleError(`A ${caller.role} key may not upsert links.`);
      const grant = (id: string) => ({
        referralId: id,
        institution: caller.institution,
        requesterIdentifier: caller.requesterIdentifier,
        apiKeyId: caller.apiKeyId,
      });

      /** The answer: a fresh link of `action` to the referral, whose row the write stores. */
      const answerWith = (id: string, action: LinkAction) => {
        const minted = deps.links.prepare(grant(id), [action]);
        const [link] = minted.links;
        if (link === undefined) throw new Error('preparing a link returned nothing');
        return {
          result: {
            referralId: id,
            url: link.url,
            type: 'upsert' as const,
            expiresAt: link.expiresAt.toISOString(),
          },
          links: minted.rows,
        };
      };

      if (referralId === undefined) {
        const fields = withRequesterAsReferrer(prefill, caller.requesterIdentifier, null);
        const draft = await newDraft(deps.stores, deps.clock, caller, fields, 'link.upsert');
        const answer = answerWith(draft.after.record.id, 'edit');
        await draft.change.write(answer, caller.idempotency);
        return answer.result;
      }

      return mutate(
        caller,
        referralId,
        'update',
        ifMatch,
        (ctx) =>
          planUpdate(
            deps.stores.catalog,
            deps.clock,
            ctx,
            withRequesterAsReferrer(prefill, caller.requesterIdentifier, ctx.record.referrer),
          ),
        ({ after }) => {
          const action = upsertLinkAction(after.record.status);
          if (action === undefined) {
            throw new InvalidTransitionError(
              after.record.status,
              'not-in-status',
              `Cannot open a link to edit a referral whose status is ${after.record.status}.`,
            );
          }
          return {
            ...answerWith(referralId, action),
            audit: auditEventOf(caller, 'link.upsert', [referralId], deps.clock.now()),
          };
        },
      );
    },
  };
}

export type LinkService = ReturnType<typeof createLinkService>;
