// buildApp(deps, parts) assembles the HTTP API from one plugin per concern. It constructs nothing of
// ours: the composition root passes the services (`deps`) and each app's own stateful parts, and
// alone calls listen().
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Type } from 'typebox';
import { v7 as uuidv7 } from 'uuid';
import type { ApiDeps, ApiParts } from './api-deps.ts';
import { API_VERSION, swaggerOptions } from './openapi.ts';
import { registerComponentSchemas } from './schemas/components.ts';
import { API_PREFIX, BODY_LIMIT, responseHeadersOf } from './http.ts';
import { httpEdgeOptions, MAX_PARAM_LENGTH } from './http-edge.ts';
import { refuseMalformedQuery, registerStrictJsonParser } from './request-encoding.ts';
import { registerAuth } from './plugins/auth.ts';
import { opsOnlyDocs } from './docs-access.ts';
import { DOCUMENT_PATH, swaggerUiOptions } from './docs-page.ts';
import { registerIdempotency } from './plugins/idempotency.ts';
import { registerRateLimits } from './rate-limits.ts';
import { registerResponseBudget } from './response-budget.ts';
import { registerProblemHandlers } from './plugins/problem.ts';
import { registerWebhookWarning } from './webhooks-warning.ts';
import { createValidatorCompiler } from './validation.ts';
import { healthRoutes } from './routes/health.routes.ts';
import { homeRoutes } from './routes/home.routes.ts';
import { metricsRoutes } from './routes/metrics.routes.ts';
import { doctorRoutes } from './routes/doctor.routes.ts';
import { observeRequests } from './request-log.ts';
import { ehrSubmissionRoutes } from './routes/forwarding.routes.ts';
import { eventRoutes } from './routes/events.routes.ts';
import { webhookRoutes } from './routes/webhooks.routes.ts';
import { fhirRoutes } from './routes/fhir.routes.ts';
import { linkRoutes } from './routes/links.routes.ts';
import { clientCredentialsRoutes } from './routes/client-credentials.routes.ts';
import { attachmentsRoutes } from './routes/attachments.routes.ts';
import { providerRoutes } from './routes/referrals-provider.routes.ts';
import { referralRoutes } from './routes/referrals.routes.ts';
import { accessReportRoutes } from './routes/access-report.routes.ts';
import { worklistRoutes } from './routes/worklists.routes.ts';
import { waitTimesRoutes } from './routes/wait-times.routes.ts';
import { webPlugin } from './web/web.plugin.ts';
import { adminPlugin } from './admin/admin.plugin.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export type { ApiDeps, ApiParts } from './api-deps.ts';

export async function buildApp(deps: ApiDeps, parts: ApiParts): Promise<FastifyInstance> {
  // Typed as Fastify's base logger so the instance keeps Fastify's default generics.
  const logger: FastifyBaseLogger = deps.logger;
  const app = Fastify({
    loggerInstance: logger,
    // Fastify's own request lines would carry the URL; onResponse below logs the route pattern instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : uuidv7();
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Timeouts for slow clients, and problem+json for what Node and the router answer themselves.
    ...httpEdgeOptions(deps.config, logger),
    // On SIGTERM the listener closes and requests already accepted are served to the end, not
    // answered 503: a client should not see an error because a process stopped under it.
    return503OnClosing: false,
  });

  app.setValidatorCompiler(createValidatorCompiler());
  // JSON in, JSON out: without this, Fastify's default text/plain parser answers a text body with a
  // 400 about the body's type instead of 415.
  app.removeContentTypeParser('text/plain');
  // A JSON body that is not UTF-8 is refused, not stored with U+FFFD in place of its bad bytes.
  registerStrictJsonParser(app);
  // Unknown request fields are rejected, never dropped (contract conventions), query parameters
  // included: an API route that declares no query gets an empty one, so `?anything` is a 400.
  app.addHook('onRoute', (route) => {
    if (
      route.url.startsWith(API_PREFIX) &&
      route.schema !== undefined &&
      route.schema.querystring === undefined
    ) {
      route.schema.querystring = Type.Object({}, { additionalProperties: false });
    }
  });

  app.addHook('onRequest', async (request, reply) => {
    void reply.header('X-Request-Id', request.id).header('API-Version', API_VERSION);
  });
  // Every route, the web form and the ops pages too, and before authentication, like a bad path: a
  // query that is not percent-encoded UTF-8 is a malformed request, whoever sends it.
  app.addHook('onRequest', refuseMalformedQuery);
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.url.startsWith('/docs')) void reply.header('Cache-Control', 'no-store');
    return payload;
  });
  app.addHook('preSerialization', async (request, reply, payload) => {
    if (reply.statusCode < 300) void reply.headers(responseHeadersOf(request, payload));
    return payload;
  });
  observeRequests(app, deps);

  registerProblemHandlers(app, deps);
  registerAuth(app, deps, parts.apiKeyFailures);
  registerWebhookWarning(app, deps);

  // After authentication (which names the client), before validation: a refused request costs nothing more.
  registerRateLimits(app, deps);

  registerIdempotency(app, deps);
  registerResponseBudget(app, deps);

  registerComponentSchemas(app);
  await app.register(swagger, swaggerOptions(deps.config.publicUrl));
  if (deps.config.apiDocs !== 'off') {
    if (deps.config.apiDocs === 'ops') {
      app.addHook(
        'onRequest',
        opsOnlyDocs((key) => deps.apiKeys.authenticate(key)),
      );
    }
    await app.register(swaggerUi, swaggerUiOptions());
    app.get(DOCUMENT_PATH, { schema: { hide: true } }, () => app.swagger());
  }

  await app.register(homeRoutes(deps));
  await app.register(healthRoutes(deps));
  await app.register(metricsRoutes(deps));
  await app.register(doctorRoutes(deps));
  await app.register(referralRoutes(deps), { prefix: API_PREFIX });
  await app.register(providerRoutes(deps), { prefix: API_PREFIX });
  await app.register(worklistRoutes(deps), { prefix: API_PREFIX });
  await app.register(waitTimesRoutes(deps), { prefix: API_PREFIX });
  await app.register(attachmentsRoutes(deps, parts.uploads), { prefix: API_PREFIX });
  await app.register(linkRoutes(deps), { prefix: API_PREFIX });
  await app.register(clientCredentialsRoutes(deps, parts.apiKeyFailures));
  await app.register(webPlugin(deps, parts.web));
  await app.register(ehrSubmissionRoutes(deps), { prefix: API_PREFIX });
  await app.register(fhirRoutes(deps), { prefix: API_PREFIX });
  await app.register(eventRoutes(deps), { prefix: API_PREFIX });
  await app.register(webhookRoutes(deps), { prefix: API_PREFIX });
  await app.register(accessReportRoutes(deps), { prefix: API_PREFIX });
  await app.register(adminPlugin(deps, parts.admin));
  return app;
}
