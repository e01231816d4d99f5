// GET / : where refhub's address leads. A browser (Accept naming text/html before JSON) gets a page
// that says what refhub is and links its docs, health checks and ops pages; any other client gets the
// same links as JSON. It needs no key and shows no referral data, and the page carries the security
// headers of every page refhub shows a person (browser-headers.ts), with a policy that loads nothing
// but its own inline stylesheet.
import accepts from 'accepts';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../api-deps.ts';
import { BROWSER_SECURITY_HEADERS } from '../browser-headers.ts';
import { DOCS_PATH, DOCUMENT_PATH } from '../docs-page.ts';
import { API_PREFIX } from '../http.ts';
import { API_VERSION } from '../openapi.ts';
import { sendPage } from '../web/web-pages.ts';
import { renderHomePage, type HomeLink } from '../../render/pages/home.page.ts';
import { ADMIN_PATH } from '../../render/pages/admin-overview.page.ts';

export type HomeRoutesDeps = Pick<ApiDeps, 'config'>;

/** The places the landing page points to; the docs only where API_DOCS serves them. */
export function homeLinks(apiDocs: ApiDeps['config']['apiDocs']): HomeLink[] {
  const forOps = apiDocs === 'ops' ? ' Ops keys only.' : '';
  return [
    ...(apiDocs === 'off'
      ? []
      : [
          {
            rel: 'docs',
            href: DOCS_PATH,
            title: 'API documentation',
            description: `Every operation, with examples to try against this installation.${forOps}`,
          },
          {
            rel: 'openapi',
            href: DOCUMENT_PATH,
            title: 'OpenAPI document',
            description: `The API's contract, for client generators and tools.${forOps}`,
          },
        ]),
    {
      rel: 'health',
      href: '/healthz',
      title: 'Liveness',
      description: 'Whether this process answers.',
    },
    {
      rel: 'readiness',
      href: '/readyz',
      title: 'Readiness',
      description: 'Whether the database, its migrations and the queues are ready, and why not.',
    },
    {
      rel: 'admin',
      href: ADMIN_PATH,
      title: 'Ops pages',
      description: 'The state of the installation and its queues. Sign in with an ops key.',
    },
  ];
}

export function homeRoutes(deps: HomeRoutesDeps) {
  const links = homeLinks(deps.config.apiDocs);
  return (app: FastifyInstance) => {
    app.get('/', { schema: { hide: true } }, async (request, reply) => {
      void reply.headers(BROWSER_SECURITY_HEADERS).header('Vary', 'Accept');
      if (accepts(request.raw).type(['application/json', 'text/html']) === 'text/html') {
        return sendPage(reply, 200, (nonce) => renderHomePage({ nonce, apiVersion: API_VERSION, links }));
      }
      return reply.send({ service: 'refhub', apiVersion: API_VERSION, api: API_PREFIX, links });
    });
  };
}
