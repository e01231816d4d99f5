// The page a person sees who opens refhub's address in a browser: what refhub is, and where to go
// from here (the API's docs, the health checks, the ops pages). It names no referral and no patient,
// and loads nothing: its one stylesheet is the shell's, inline.
import { html } from '../html.ts';
import { renderPage } from './page-shell.ts';

/** One place to go from the landing page. */
export interface HomeLink {
  /** What the link is, for clients: `docs`, `openapi`, `health`, `readiness`, `admin`. */
  readonly rel: string;
  readonly href: string;
  readonly title: string;
  readonly description: string;
}

export interface HomeModel {
  readonly nonce: string;
  readonly apiVersion: string;
  readonly links: readonly HomeLink[];
}

export function renderHomePage(model: HomeModel): string {
  const main = html`<h1 class="page-title">refhub</h1>
    <p>
      Referrals between healthcare institutions, forwarded to the national electronic health record. This is
      the address of its HTTP API (version ${model.apiVersion}); clinic systems call it under
      <span class="mono">/api/v1</span>, with an API key.
    </p>
    <ul>
      ${model.links.map(
        (link) =>
          html`<li>
            <a href="${link.href}">${link.title}</a> <span class="mono">${link.href}</span>
            <p class="muted">${link.description}</p>
          </li>`,
      )}
    </ul>`;
  return renderPage({ nonce: model.nonce, title: 'Welcome', main });
}
