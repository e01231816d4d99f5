// Attributes whose value is one URL. The builder defuses script URLs in them, and the
// self-containment check allows only a `data:` URL or a `#fragment` there.
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
