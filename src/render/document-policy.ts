// What a self-contained EHR form may contain, shared by the renderer and the check that enforces it,
// without loading the check's HTML parser into the renderer.

/** The Content-Security-Policy every EHR form carries in a <meta> (contract §7). */
export const EHR_FORM_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/**
 * Attributes whose value is one URL. The builder defuses script URLs in them, and the
 * self-containment check allows only a `data:` URL or a `#fragment` there.
 */
export const URL_ATTRIBUTES: ReadonlySet<string> = new Set([
  'href',
  'xlink:href',
  'src',
  'action',
  'formaction',
  'poster',
  'background',
  'data',
  'cite',
  'longdesc',
  'lowsrc',
  'dynsrc',
  'codebase',
  'classid',
  'manifest',
  'icon',
  'profile',
  'usemap',
]);
