// The hosted referral form (contract §8), as one Fastify plugin: link redemption, the session
// cookie, CSRF, the form and its files, the view and print pages, and the security headers on every
// response. `api/app.ts` registers it; it is encapsulated, so its form parser, hooks and error handler
// apply to these routes only (the API still takes JSON alone, and still answers in problem+json). The
// multipart parser is narrower still: only the form's upload route has it (form.routes.ts).
import type { FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import type { WebParts } from '../api-deps.ts';
import { COUNTRY_CODES, countryName } from '../../domain/countries.ts';
import type { Choice } from '../../render/pages/referral-form-fields.ts';
import { copyRoutes, type CopyRoutesDeps } from './copy.routes.ts';
import { attachmentsRoutes, type AttachmentsRoutesDeps } from './attachments.routes.ts';
import { formRoutes, type FormRoutesDeps } from './form.routes.ts';
import { linkRoutes, type LinkRedemptionRoutesDeps } from './links-redemption.routes.ts';
import { handleWebError } from './web-errors.ts';
import { registerStrictFormParser } from '../request-encoding.ts';
import { BROWSER_SECURITY_HEADERS } from '../browser-headers.ts';
import { NO_CONTENT_CSP } from './web-pages.ts';

/** Nationalities by English name, for the form's select. */
function countryChoices(): Choice[] {
  return COUNTRY_CODES.map((code) => ({ value: code, label: countryName(code) })).sort((a, b) =>
    a.label.localeCompare(b.label, 'en'),
  );
}

export type WebDeps = LinkRedemptionRoutesDeps & FormRoutesDeps & CopyRoutesDeps & AttachmentsRoutesDeps;

/** `parts` (the session gate, the failure count of link tokens) come from the composition root. */
export function webPlugin(deps: WebDeps, parts: WebParts) {
  return async (app: FastifyInstance) => {
    const { gate } = parts;
    // Cookies are signed by the session codec itself, so the plugin needs no secret of its own.
    await app.register(cookie);
    // Form posts must be UTF-8 and percent-encoded UTF-8; what a person typed is then held to the
    // input rules by the field schema the API shares (services/referrals/fields.ts).
    registerStrictFormParser(app);

    app.addHook('onSend', async (_request, reply, payload) => {
      for (const [name, value] of Object.entries(BROWSER_SECURITY_HEADERS)) void reply.header(name, value);
      // Pages set a policy with their nonce; anything else (a redirect) may load nothing.
      if (!reply.hasHeader('Content-Security-Policy'))
        void reply.header('Content-Security-Policy', NO_CONTENT_CSP);
      return payload;
    });
    app.setErrorHandler(handleWebError);

    await app.register(linkRoutes(deps, gate, parts.linkFailures));
    await app.register(formRoutes(deps, gate, parts.uploads, countryChoices()));
    await app.register(copyRoutes(deps, gate));
    await app.register(attachmentsRoutes(deps, gate));
  };
}
