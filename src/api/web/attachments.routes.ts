// Downloading a referral's file from the form and the view page: the session of that page for that
// referral, through the same attachments service as the API (tenancy, the scan's verdict, the audit
// before the first byte leaves), streamed a piece at a time with the API's headers. The file is saved,
// not shown: `Content-Disposition: attachment`, `nosniff`, and a sandbox that lets it run nothing if a
// browser opens it all the same.
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../api-deps.ts';
import { sendAttachmentContent } from '../attachment-content.ts';
import type { DownloadScope } from './attachments-items.ts';
import { attachmentIdOf, referralIdOf } from './referral-pages.ts';
import type { SessionGate } from './session-gate.ts';
import { WebPageError } from './web-pages.ts';

export type AttachmentsRoutesDeps = Pick<ApiDeps, 'attachments'>;

const SCOPES: readonly DownloadScope[] = ['form', 'view'];

/** A download another site started (a link or a redirect elsewhere): refused, and not audited. */
const NOT_FROM_THIS_PAGE = (): WebPageError =>
  new WebPageError(403, 'This file opens only from its referral’s page', [
    'Open the referral from your clinic system, then choose the file there.',
  ]);

export function attachmentsRoutes(deps: AttachmentsRoutesDeps, gate: SessionGate) {
  return (app: FastifyInstance) => {
    for (const scope of SCOPES) {
      app.get(
        `/${scope}/:referralId/attachments/:attachmentId`,
        { schema: { hide: true } },
        async (request, reply) => {
          const id = referralIdOf(request.params);
          const attachmentId = attachmentIdOf(request.params);
          const open = await gate.open(request, id, scope);
          // The session cookie is SameSite=Lax, so another site's link would carry it: a download
          // starts from this site's own page, or from the address typed or pasted.
          const site = request.headers['sec-fetch-site'];
          if (site === 'cross-site' || site === 'same-site') throw NOT_FROM_THIS_PAGE();
          return sendAttachmentContent(reply, await deps.attachments.content(open.caller, id, attachmentId));
        },
      );
    }
  };
}
