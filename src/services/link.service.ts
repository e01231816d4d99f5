// The link upsert (contract §5.7): hands a clinician a one-time URL into our web form. Without a
// referralId it creates a draft from the prefill; with one, it applies the prefill to a referral the
// sender may still change (draft or sender-action-required) and hands out a fresh link.
import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { upsertLinkAction } from '../domain/links.ts';
import { ForbiddenRoleError, InvalidTransitionError } from '../errors.ts';
import { referralRepository } from '../db/referral.repository.ts';
import type { Database } from '../db/schema.ts';
import type { Caller } from './caller.ts';
import type { LinkMinter } from './link-minter.ts';
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

export function createLinkService(deps: LinkDeps) {
  const mutate = createMutationRunner(deps);

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
          const id = await insertDraft(trx, deps.clock, caller, prefill, 'link.upsert');
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
        (ctx) => planUpdate(deps.clock, ctx, prefill),
        async (trx) => {
          const current = await referralRepository(trx).getVisible(referralId, caller.institution);
          const action = upsertLinkAction(current.status);
          if (action === undefined) throw new InvalidTransitionError('open a link to edit', current.status);
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
