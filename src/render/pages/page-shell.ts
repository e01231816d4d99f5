// The document every web page shares: the head, the header naming the institution and the person
// the session acts for, a skip link, the main content and a footer. Also the page's
// Content-Security-Policy, which must match what the shell puts in the document.
//
// The pages run no script at all. The one stylesheet is inline and carries the request's nonce, so
// the policy allows exactly that stylesheet and nothing else is loaded.
import { html, trustedHtml, type SafeHtml } from '../html.ts';
import { PAGE_CSS } from './page-style.ts';

export interface PageHeader {
  /** The institution the session acts for. */
  readonly institution?: string;
  /** The person (requester identifier) the session acts for. */
  readonly person?: string;
}

export interface PageOptions {
  readonly nonce: string;
  readonly title: string;
  readonly header?: PageHeader;
  readonly main: SafeHtml;
  readonly footer?: SafeHtml;
}

export interface PagePolicyOptions {
  /**
   * The EHR form's content styles each element with a `style` attribute (it may carry no stylesheet),
   * so the pages that show it allow style attributes; scripts and external loads stay forbidden.
   */
  readonly styleAttributes?: boolean;
}

/** The Content-Security-Policy for a page rendered with `nonce`. */
export function pageCsp(nonce: string, options: PagePolicyOptions = {}): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    ...(options.styleAttributes === true ? ["style-src-attr 'unsafe-inline'"] : []),
    "img-src 'self' data:",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The policy for responses that are not pages (redirects): nothing may load at all. */
export const NO_CONTENT_CSP =
  "default-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function header(who: PageHeader | undefined): SafeHtml {
  return html`<header class="site-header">
    <div class="site-header__inner">
      <div class="brand">refhub <span class="brand__product">Referrals</span></div>
      ${
        who?.institution === undefined
          ? null
          : html`<div class="site-header__who">
              <span class="site-header__institution">${who.institution}</span>
              ${
                who.person === undefined
                  ? null
                  : html`<span><span class="visually-hidden">Signed in as </span>${who.person}</span>`
              }
            </div>`
      }
    </div>
  </header>`;
}

export function renderPage(options: PageOptions): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${options.title} – refhub</title>
        <link rel="icon" href="data:," />
        <style nonce="${options.nonce}">
          ${trustedHtml(PAGE_CSS)}
        </style>
      </head>
      <body>
        <a class="skip-link" href="#main">Skip to main content</a>
        ${header(options.header)}
        <main class="page" id="main" tabindex="-1">${options.main}</main>
        <footer class="site-footer">${options.footer}</footer>
      </body>
    </html>`.toString();
}
