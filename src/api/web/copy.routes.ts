// The pages behind `view` and `print` links (contract §8): the content of the EHR form, read through
// the same query as the API's GET, for whichever side of the referral opened the link, and the
// referral's files after it (with download links on the view page). Once the provider has completed
// the referral, its outcome comes first (the Outcome card).
//
// These pages change nothing, with one exception: the sender acknowledges the provider's outcome from
// the view page, the page a completed referral's links open. A plain form post with the session's
// token, through the same command as the API (lifecycle, timeline, outbox and audit), answered with a
// redirect back to the page; a refusal is a page that says why.
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../api-deps.ts';
import { sameInstitution } from '../../domain/access.ts';
import type { ReferralView } from '../../domain/referral-view.ts';
import { renderReferralCopyPage } from '../../render/pages/referral-copy.page.ts';
import { ehrFormSourceOf } from '../../services/referrals/queries.ts';
import type { InstitutionRef } from '../../domain/access.ts';
import { fileItems, formAttachments } from './attachments-items.ts';
import { tokenOf } from './form-input.ts';
import { acknowledgedNotice, acknowledgePath, acknowledgeRefusal, outcomeCardOf } from './outcome-card.ts';
import { referralIdOf } from './referral-pages.ts';
import type { SessionGate } from './session-gate.ts';
import { sendPage } from './web-pages.ts';

function institutionName(view: ReferralView, institution: InstitutionRef): string {
  if (sameInstitution(view.sender, institution)) return view.sender.name;
  return view.offering?.institution.name ?? institution.id;
}

export type CopyRoutesDeps = Pick<
  ApiDeps,
  'referralQueries' | 'referralCommands' | 'displayTime' | 'attachments'
>;

export function copyRoutes(deps: CopyRoutesDeps, gate: SessionGate) {
  return (app: FastifyInstance) => {
    for (const purpose of ['view', 'print'] as const) {
      app.get(`/${purpose}/:referralId`, { schema: { hide: true } }, async (request, reply) => {
        const id = referralIdOf(request.params);
        const open = await gate.open(request, id, purpose);
        const view = await deps.referralQueries.get(open.caller, id, { ehrForm: false });
        const files = await deps.attachments.list(open.caller, id);
        // Paper needs no links, and has no buttons.
        const links = purpose === 'view' ? { download: 'view' as const } : {};
        const outcome = outcomeCardOf({
          view,
          files,
          display: deps.displayTime,
          links,
          ...(purpose === 'view' ? { csrfToken: gate.csrfToken(open.session) } : {}),
        });
        const notice = purpose === 'view' ? acknowledgedNotice(request.query, view) : undefined;
        return sendPage(
          reply,
          200,
          (nonce) =>
            renderReferralCopyPage({
              nonce,
              purpose,
              source: { ...ehrFormSourceOf(view), attachments: formAttachments(files) },
              institutionName: institutionName(view, open.session.institution),
              person: open.session.requesterIdentifier,
              sessionEnds: deps.displayTime.time(open.session.expiresAt),
              display: deps.displayTime,
              files: fileItems(files, deps.displayTime, links),
              ...(outcome === undefined ? {} : { outcome }),
              ...(notice === undefined ? {} : { notice }),
            }),
          { styleAttributes: true },
        );
      });
    }

    // "Acknowledge outcome": the sender read the provider's outcome. The person in the session
    // acknowledges it, so the timeline names the requester, as for every change made in the form. No
    // version is checked: an outcome does not change once reported, so the page the person read is
    // the outcome they acknowledge.
    app.post(acknowledgePath(':referralId'), { schema: { hide: true } }, async (request, reply) => {
      const id = referralIdOf(request.params);
      const open = await gate.open(request, id, 'view');
      gate.checkPost(request, open.session, tokenOf(request.body));
      try {
        await deps.referralCommands.acknowledgeOutcome(open.caller, id, {});
      } catch (error) {
        throw await acknowledgeRefusal(
          error,
          () => deps.referralQueries.get(open.caller, id, { ehrForm: false }),
          deps.displayTime,
        );
      }
      return reply.redirect(`/view/${id}?acknowledged=1`, 303);
    });
  };
}
