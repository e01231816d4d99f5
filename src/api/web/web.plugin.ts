// The hosted referral form (contract §8), as one Fastify plugin: link redemption, the session
// cookie, CSRF, the form, the view and print pages, and the security headers on every response.
// `api/app.ts` registers it; it is encapsulated, so its form parser, hooks and error handler apply to
// these routes only (the API still takes JSON alone, and still answers in problem+json).
import type { FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { AppContext } from '../../composition/context.ts';
import { COUNTRY_CODES, countryName } from '../../domain/countries.ts';
import type { Choice } from '../../render/pages/referral-form-fields.ts';
import { copyRoutes } from './copy.routes.ts';
import { formRoutes } from './form.routes.ts';
import { linkRoutes } from './links-redemption.routes.ts';
import { createSessionCodec } from './session.ts';
import { createSessionGate } from './session-gate.ts';
import { resolveSessionSecret } from './session-secret.ts';
import { handleWebError } from './web-errors.ts';
import { NO_CONTENT_CSP, SECURITY_HEADERS } from './web-pages.ts';

/** Nationalities by English name, for the form's select. */
function countryChoices(): Choice[] {
  return COUNTRY_CODES.map((code) => ({ value: code, label: countryName(code) })).sort((a, b) =>
    a.label.localeCompare(b.label, 'en'),
  );
}

export function webPlugin(ctx: AppContext) {
  return async (app: FastifyInstance) => {
    const publicUrl = new URL(ctx.config.publicUrl);
    const gate = createSessionGate({
      codec: createSessionCodec(await resolveSessionSecret(ctx.config, ctx.db)),
      redemption: ctx.linkRedemption,
      clock: ctx.clock,
      secure: publicUrl.protocol === 'https:',
      publicOrigin: publicUrl.origin,
    });

    // Cookies are signed by the session codec itself, so the plugin needs no secret of its own.
    await app.register(cookie);
    await app.register(formbody);

    app.addHook('onSend', async (_request, reply, payload) => {
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) void reply.header(name, value);
      // Pages set a policy with their nonce; anything else (a redirect) may load nothing.
      if (!reply.hasHeader('Content-Security-Policy'))
        void reply.header('Content-Security-Policy', NO_CONTENT_CSP);
      return payload;
    });
    app.setErrorHandler(handleWebError);

    await app.register(linkRoutes(ctx, gate));
    await app.register(formRoutes(ctx, gate, countryChoices()));
    await app.register(copyRoutes(ctx, gate));
  };
}
