// The read-only pages behind `view` and `print` links (contract §8): the content of the EHR form,
// read through the same query as the API's GET, for whichever side of the referral opened the link,
// and the referral's files after it (with download links on the view page).
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../api-deps.ts';
import { sameInstitution } from '../../domain/access.ts';
import type { ReferralView } from '../../domain/referral-view.ts';
import { renderReferralCopyPage } from '../../render/pages/referral-copy.page.ts';
import { ehrFormSourceOf } from '../../services/referral-queries.ts';
import type { InstitutionRef } from '../../domain/access.ts';
import { fileItems } from './file-items.ts';
import { referralIdOf } from './referral-pages.ts';
import type { SessionGate } from './session-gate.ts';
import { sendPage } from './web-pages.ts';

function institutionName(view: ReferralView, institution: InstitutionRef): string {
  if (sameInstitution(view.sender, institution)) return view.sender.name;
  return view.offering?.institution.name ?? institution.id;
}

export type CopyRoutesDeps = Pick<ApiDeps, 'referralQueries' | 'displayTime' | 'attachments'>;

export function copyRoutes(deps: CopyRoutesDeps, gate: SessionGate) {
  return (app: FastifyInstance) => {
    for (const purpose of ['view', 'print'] as const) {
      app.get(`/${purpose}/:referralId`, { schema: { hide: true } }, async (request, reply) => {
        const id = referralIdOf(request.params);
        const open = await gate.open(request, id, purpose);
        const view = await deps.referralQueries.get(open.caller, id, { ehrForm: false });
        const files = await deps.attachments.list(open.caller, id);
        return sendPage(
          reply,
          200,
          (nonce) =>
            renderReferralCopyPage({
              nonce,
              purpose,
              source: ehrFormSourceOf(view),
              institutionName: institutionName(view, open.session.institution),
              person: open.session.requesterIdentifier,
              sessionEnds: deps.displayTime.time(open.session.expiresAt),
              display: deps.displayTime,
              // Paper needs no links.
              files: fileItems(files, deps.displayTime, purpose === 'view' ? { download: 'view' } : {}),
            }),
          { styleAttributes: true },
        );
      });
    }
  };
}
