// The link upsert (contract §5.7): hands a clinician a one-time URL into our web form. Without a
// referralId it creates a draft from the prefill; with one, it applies the prefill to a referral the
// sender may still change (draft or sender-action-required) and hands out a fresh link.
//
// The clinic system always says who is asking (`requesterIdentifier`), and prefers an email address.
// When neither the body nor the referral names a referring clinician, that email is what the clinic
// system knows of the clinician: it becomes the referrer's email (and ID, of type `email`), so the
// letter is signed by someone and the provider knows whom to contact. The form shows it, to be
// corrected there if the person referring is someone else.
import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { upsertLinkAction } from '../domain/links.ts';
import type { ReferrerView } from '../domain/referral-view.ts';
import { ForbiddenRoleError, InvalidTransitionError } from '../errors.ts';
import { referralRepository } from '../db/referral.repository.ts';
import type { Database } from '../db/schema.ts';
import type { Caller } from './caller.ts';
import type { LinkMinter } from './links-minter.ts';
import { createReferralFieldsCheck } from './referral-fields.ts';
import type { ReferralFieldsInput } from './referral-input.ts';
import { audit, createMutationRunner } from './referral-mutation.ts';
import { insertDraft, planUpdate } from './referral-commands.ts';
import { writeTransaction } from './write-transaction.ts';

export interface LinkDeps {
  readonly db: Kysely<Database>;
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
  const mutate = createMutationRunner(deps);
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

      if (referralId === undefined) {
        return writeTransaction(deps.db, caller, async (trx) => {
          const fields = withRequesterAsReferrer(prefill, caller.requesterIdentifier, null);
          const id = await insertDraft(trx, deps.clock, caller, fields, 'link.upsert');
          const link = await deps.links.mintOne(trx, grant(id), 'edit');
          return {
            referralId: id,
            url: link.url,
            type: 'upsert' as const,
            expiresAt: link.expiresAt.toISOString(),
          };
        });
      }

      return mutate(
        caller,
        referralId,
        'update',
        ifMatch,
        (ctx) =>
          planUpdate(
            deps.clock,
            ctx,
            withRequesterAsReferrer(prefill, caller.requesterIdentifier, ctx.record.referrer),
          ),
        async (trx) => {
          const current = await referralRepository(trx).getVisible(referralId, caller.institution);
          const action = upsertLinkAction(current.status);
          if (action === undefined) {
            throw new InvalidTransitionError(
              current.status,
              'not-in-status',
              `Cannot open a link to edit a referral whose status is ${current.status}.`,
            );
          }
          await audit(trx, caller, 'link.upsert', [referralId], deps.clock.now());
          const link = await deps.links.mintOne(trx, grant(referralId), action);
          return {
            referralId,
            url: link.url,
            type: 'upsert' as const,
            expiresAt: link.expiresAt.toISOString(),
          };
        },
      );
    },
  };
}

export type LinkService = ReturnType<typeof createLinkService>;
