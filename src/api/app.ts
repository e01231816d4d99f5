// buildApp(ctx) assembles the HTTP API from one plugin per concern; main.ts alone calls listen().
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Type } from 'typebox';
import { v7 as uuidv7 } from 'uuid';
import { AppError } from '../errors.ts';
import type { AppContext } from '../composition/context.ts';
import { API_VERSION, swaggerOptions } from './openapi.ts';
import { registerComponentSchemas } from './schemas/components.ts';
import { API_PREFIX, isApiRoute, responseHeadersOf } from './http.ts';
import { httpEdgeOptions, MAX_PARAM_LENGTH } from './http-edge.ts';
import { registerAuth } from './plugins/auth.ts';
import { opsOnlyDocs } from './docs-access.ts';
import { registerIdempotency } from './plugins/idempotency.ts';
import { registerProblemHandlers } from './plugins/problem.ts';
import { registerWebhookWarning } from './webhook-warning.ts';
import { createValidatorCompiler } from './validation.ts';
import { healthRoutes } from './routes/health.routes.ts';
import { metricsRoutes } from './routes/metrics.routes.ts';
import { observeRequests } from './request-log.ts';
import { ehrSubmissionRoutes } from './routes/forwarding.routes.ts';
import { eventRoutes } from './routes/events.routes.ts';
import { webhookRoutes } from './routes/webhooks.routes.ts';
import { fhirRoutes } from './routes/fhir.routes.ts';
import { linkRoutes } from './routes/links.routes.ts';
import { providerRoutes } from './routes/provider.routes.ts';
import { referralRoutes } from './routes/referrals.routes.ts';
import { webPlugin } from './web/web.plugin.ts';
import { adminPlugin } from './admin/admin.plugin.ts';

export const BODY_LIMIT = 256 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  // Typed as Fastify's base logger so the instance keeps Fastify's default generics.
  const logger: FastifyBaseLogger = ctx.logger;
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
    ...httpEdgeOptions(ctx.config, logger),
    // On SIGTERM the listener closes and requests already accepted are served to the end, not
    // answered 503: a client should not see an error because a process stopped under it.
    return503OnClosing: false,
  });

  app.setValidatorCompiler(createValidatorCompiler());
  // JSON in, JSON out: without this, Fastify's default text/plain parser answers a text body with a
  // 400 about the body's type instead of 415.
  app.removeContentTypeParser('text/plain');
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
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.url.startsWith('/docs')) void reply.header('Cache-Control', 'no-store');
    return payload;
  });
  app.addHook('preSerialization', async (request, reply, payload) => {
    if (reply.statusCode < 300) void reply.headers(responseHeadersOf(request, payload));
    return payload;
  });
  observeRequests(app, ctx);

  registerProblemHandlers(app, ctx);
  registerAuth(app, ctx);
  registerWebhookWarning(app, ctx);

  await app.register(rateLimit, {
    global: true,
    hook: 'preValidation',
    max: ctx.config.rateLimitPerMinute,
    timeWindow: 60_000,
    enableDraftSpec: true,
    keyGenerator: (request) => request.apiKey?.id ?? request.ip,
    allowList: (request) => !isApiRoute(request),
    errorResponseBuilder: (_request, context) => {
      ctx.metrics.rateLimited();
      return new AppError(
        'rate_limited',
        429,
        'Too many requests',
        `This API key is limited to ${context.max} requests a minute. Retry after ${context.after}.`,
      );
    },
  });

  registerIdempotency(app, ctx);

  registerComponentSchemas(app);
  await app.register(swagger, swaggerOptions(ctx.config.publicUrl));
  if (ctx.config.apiDocs !== 'off') {
    if (ctx.config.apiDocs === 'ops') {
      app.addHook(
        'onRequest',
        opsOnlyDocs((key) => ctx.apiKeys.authenticate(key)),
      );
    }
    await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
    app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  }

  await app.register(healthRoutes(ctx));
  await app.register(metricsRoutes(ctx));
  await app.register(referralRoutes(ctx), { prefix: API_PREFIX });
  await app.register(providerRoutes(ctx), { prefix: API_PREFIX });
  await app.register(linkRoutes(ctx), { prefix: API_PREFIX });
  await app.register(webPlugin(ctx));
  await app.register(ehrSubmissionRoutes(ctx), { prefix: API_PREFIX });
  await app.register(fhirRoutes(ctx), { prefix: API_PREFIX });
  await app.register(eventRoutes(ctx), { prefix: API_PREFIX });
  await app.register(webhookRoutes(ctx), { prefix: API_PREFIX });
  await app.register(adminPlugin(ctx));
  return app;
}
