// The API's docs page, `/docs`: Swagger UI as @fastify/swagger-ui serves it, dressed as refhub's (its
// title, its mark, its icon; no other product's logo) and reading the one document refhub publishes,
// `/openapi.json`. The plugin also answers `/docs/json` and `/docs/yaml` with the same document; those
// redirect to `/openapi.json`, so that clients, generators and the page all name one URL.
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';

export const DOCUMENT_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';

/** The plugin's own copies of the document, which point to DOCUMENT_PATH instead. */
const OTHER_DOCUMENT_ROUTES = new Set([`${DOCS_PATH}/json`, `${DOCS_PATH}/yaml`]);

const MARK =
  '<rect width="40" height="40" rx="8" fill="#0b6e8f"/>' +
  '<path d="M13 29V11h8.5a5.5 5.5 0 0 1 0 11H13m8 0 7 7" fill="none" stroke="#fff" stroke-width="3.2" ' +
  'stroke-linecap="round" stroke-linejoin="round"/>';

/** refhub's mark and name, white on the page's dark top bar. */
export const DOCS_LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="168" height="40" viewBox="0 0 168 40" role="img" ' +
  'aria-label="refhub">' +
  MARK +
  '<text x="50" y="28" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="23" ' +
  'font-weight="700" fill="#fff">refhub</text></svg>';

/** The mark alone, as the tab's icon. */
export const DOCS_ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" viewBox="0 0 40 40">' + MARK + '</svg>';

export const DOCS_TITLE = 'refhub API';

/** @fastify/swagger-ui's options for `/docs`. */
export function swaggerUiOptions(): FastifySwaggerUiOptions {
  return {
    routePrefix: DOCS_PATH,
    logo: { type: 'image/svg+xml', content: Buffer.from(DOCS_LOGO_SVG), href: DOCS_PATH, target: '_self' },
    theme: {
      title: DOCS_TITLE,
      favicon: [
        {
          filename: 'refhub.svg',
          rel: 'icon',
          sizes: 'any',
          type: 'image/svg+xml',
          content: Buffer.from(DOCS_ICON_SVG),
        },
      ],
    },
    uiConfig: {
      docExpansion: 'list',
      // Swagger UI reads `urls` before the `url` the plugin sets to its own copy (`./json`), and names
      // the document instead of showing an address.
      urls: [{ url: DOCUMENT_PATH, name: DOCS_TITLE }],
    },
    uiHooks: {
      onRequest: (request, reply, done) => {
        if (OTHER_DOCUMENT_ROUTES.has(request.routeOptions.url ?? '')) {
          void reply.redirect(DOCUMENT_PATH, 301);
          return;
        }
        done();
      },
    },
  };
}
