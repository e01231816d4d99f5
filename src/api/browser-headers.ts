// The headers on every response a browser shows a person: the web form's pages and redirects
// (api/web) and the ops pages (api/admin). They keep those responses out of caches, frames and
// referrers, stop the browser from guessing a type, and keep other sites' windows and pages from
// reaching them. One list, so the two sets of pages cannot drift apart; each adds only what is its own.
export const BROWSER_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};
