// The self-containment guard against small hand-written documents: one valid, and one bad document
// per rule, each of which must be caught.
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EHR_FORM_CSP,
  NotSelfContainedError,
  assertSelfContained,
  checkSelfContained,
  isPlainlySelfContained,
} from '../../src/render/self-contained.ts';

const CSP_META = `<meta http-equiv="Content-Security-Policy" content="${EHR_FORM_CSP}">`;

function documentWith(body: string, head = CSP_META): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">${head}<title>t</title></head><body>${body}</body></html>`;
}

describe('checkSelfContained', () => {
  it('accepts a self-contained document with local references', () => {
    const doc = documentWith(
      '<p style="color: red; background: url(data:image/png;base64,AAAA)">x</p>' +
        '<a href="#notes">notes</a><img src="data:image/png;base64,AAAA" srcset="data:image/png;base64,AAAA 2x" alt="">' +
        `<img src="data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'></svg>" alt="">` +
        '<p title="gene expression(s) and @import of src(s)">text that merely mentions CSS words</p>' +
        '<svg xmlns="http://www.w3.org/2000/svg"><rect fill="url(#g)"></rect></svg>',
    );
    expect(checkSelfContained(doc)).toEqual([]);
    expect(() => {
      assertSelfContained(doc);
    }).not.toThrow();
  });

  it('requires the CSP of the contract', () => {
    expect(EHR_FORM_CSP).toBe("default-src 'none'; style-src 'unsafe-inline'; img-src data:");
  });

  const bad: readonly (readonly [rule: string, doc: string, problem: RegExp])[] = [
    ['no doctype', documentWith('').replace('<!doctype html>', ''), /doctype/],
    [
      'a legacy doctype',
      documentWith('').replace('<!doctype html>', '<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01//EN">'),
      /doctype/,
    ],
    ['no CSP meta', documentWith('', ''), /Content-Security-Policy/],
    [
      'a weaker CSP',
      documentWith('', `<meta http-equiv="Content-Security-Policy" content="default-src *">`),
      /Content-Security-Policy/,
    ],
    ['a CSP meta outside <head>', documentWith(CSP_META, ''), /Content-Security-Policy/],
    ['<script>', documentWith('<script>alert(1)</script>'), /<script>/],
    ['<script> inside <svg>', documentWith('<svg><script>alert(1)</script></svg>'), /<script>/],
    ['<link>', documentWith('<link rel="stylesheet" href="#x">'), /<link>/],
    ['<style>', documentWith('<style>p { color: red }</style>'), /<style>/],
    ['<iframe>', documentWith('<iframe></iframe>'), /<iframe>/],
    ['<object>', documentWith('<object></object>'), /<object>/],
    ['<embed>', documentWith('<embed>'), /<embed>/],
    ['<base>', documentWith('', `${CSP_META}<base href="#x">`), /<base>/],
    ['<form>', documentWith('<form></form>'), /<form>/],
    [
      '<meta http-equiv="refresh">',
      documentWith('', `${CSP_META}<meta http-equiv="refresh" content="0">`),
      /http-equiv/,
    ],
    ['an external href', documentWith('<a href="https://example.org/">x</a>'), /"href"/],
    ['a relative href', documentWith('<a href="page.html">x</a>'), /"href"/],
    ['a scheme-relative src', documentWith('<img src="//example.org/x.png">'), /"src"/],
    ['an entity-encoded external src', documentWith('<img src="&#104;ttps://example.org/x.png">'), /"src"/],
    ['a javascript: href', documentWith('<a href=" java\tscript:alert(1)">x</a>'), /"href"/],
    [
      'an external srcset candidate',
      documentWith('<img src="data:," srcset="data:, 1x, https://e.org/a.png 2x">'),
      /"srcset"/,
    ],
    ['an external action', documentWith('<button formaction="https://e.org/">x</button>'), /"formaction"/],
    ['an external poster', documentWith('<video poster="https://e.org/p.png"></video>'), /"poster"/],
    [
      'an external background',
      documentWith('<table background="https://e.org/b.png"></table>'),
      /"background"/,
    ],
    ['an external data', documentWith('<x-widget data="https://e.org/d"></x-widget>'), /"data"/],
    [
      'an external xlink:href',
      documentWith('<svg><use xlink:href="https://e.org/s.svg#a"></use></svg>'),
      /href"/,
    ],
    ['an external URL in another attribute', documentWith('<p title="see https://e.org/">x</p>'), /"title"/],
    [
      'an external url() in style',
      documentWith('<p style="background: url(https://e.org/b.png)">x</p>'),
      /"style"/,
    ],
    ['a relative url() in style', documentWith(`<p style="background:url( 'b.png' )">x</p>`), /"style"/],
    [
      'a CSS-escaped url() in style',
      documentWith('<p style="background: \\75 rl(//e.org/b.png)">x</p>'),
      /"style"/,
    ],
    [
      'image-set() in style',
      documentWith(`<p style="background-image: image-set('b.png' 1x)">x</p>`),
      /image-set/,
    ],
    [
      'an external url() in an SVG attribute',
      documentWith('<svg><rect filter="url(f.svg#a)"></rect></svg>'),
      /"filter"/,
    ],
    [
      'SVG animation of an href',
      documentWith('<svg><a href="#x"><set attributeName="href" to="page.html"></set></a></svg>'),
      /may not animate an href/,
    ],
    ['an event handler', documentWith('<p onclick="alert(1)">x</p>'), /"onclick" is an event handler/],
    ['an upper-case event handler', documentWith('<img src="data:," ONERROR="alert(1)">'), /"onerror"/],
  ];

  it.each(bad)('catches %s', (_rule, doc, problem) => {
    expect(isPlainlySelfContained(doc)).toBe(false);
    const problems = checkSelfContained(doc);
    expect(problems.some((p) => problem.test(p))).toBe(true);
    expect(() => {
      assertSelfContained(doc);
    }).toThrow(NotSelfContainedError);
  });

  it('lists every problem once and never quotes values', () => {
    const doc = documentWith(
      '<script></script><script></script><a href="https://e.org/S1234567D">x</a><p onclick="secret">y</p>',
      '',
    );
    const problems = checkSelfContained(doc);
    expect(problems).toHaveLength(4);
    expect(new Set(problems).size).toBe(problems.length);
    expect(problems.join('\n')).not.toMatch(/S1234567D|secret/);
  });

  it('reports a non-string instead of throwing a TypeError', () => {
    expect(checkSelfContained(undefined as unknown as string)).toEqual(['the document is not a string']);
  });
});

describe('assertSelfContained', () => {
  it('throws NotSelfContainedError with a stable code and the problems', () => {
    const doc = documentWith('<script></script>');
    let caught: unknown;
    try {
      assertSelfContained(doc);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(NotSelfContainedError);
    expect(caught).toBeInstanceOf(Error);
    const error = caught as NotSelfContainedError;
    expect(error.code).toBe('not_self_contained');
    expect(error.name).toBe('NotSelfContainedError');
    expect(error.problems).toEqual(checkSelfContained(doc));
  });
});

describe('the HTML parser', () => {
  // cheerio and parse5 hold megabytes of heap once loaded: a process whose forms all pass the scan
  // never loads them. Checked in a process of its own, which records every module it loads.
  it('is loaded only when a document needs the full check', () => {
    const guard = pathToFileURL(new URL('../../src/render/self-contained.ts', import.meta.url).pathname);
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
      const parserLoaded = () => loaded.some((url) => url.includes('/node_modules/cheerio/'));
      const { assertSelfContained, checkSelfContained, EHR_FORM_CSP } = await import(${JSON.stringify(guard.href)});
      const csp = EHR_FORM_CSP.replaceAll("'", '&#39;');
      const head = '<meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="' + csp + '">';
      const plain = '<!doctype html>\\n<html lang="en"><head>' + head + '<title>T</title></head><body><p>x</p></body></html>';
      assertSelfContained(plain);
      const afterScan = parserLoaded();
      const problems = checkSelfContained(plain.replace('<p>x</p>', '<script>x</script>'));
      console.log(JSON.stringify({ afterScan, afterFullCheck: parserLoaded(), problems }));
    `;
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual({
      afterScan: false,
      afterFullCheck: true,
      problems: ['<script> elements are not allowed'],
    });
  });
});

describe('the one-pass scan', () => {
  const CSP = `<meta http-equiv="Content-Security-Policy" content="${EHR_FORM_CSP.replaceAll("'", '&#39;')}">`;
  const plain = (body: string, head = CSP) =>
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">${head}<title>T &amp; t</title></head><body>${body}</body></html>`;

  it('proves a document written as the renderer writes it', () => {
    expect(
      isPlainlySelfContained(
        plain(
          '<p style="color: red" data-field="x">a &lt;b&gt; &#39;c&#39; &#96;d&#96;</p><a href="#x">y</a>',
        ),
      ),
    ).toBe(true);
  });

  it.each([
    ['a comment', plain('<!-- x --><p>y</p>')],
    ['an upper-case tag', plain('<P>y</P>')],
    ['an unquoted attribute', plain('<p class=x>y</p>')],
    ['a single-quoted attribute', plain(`<p class='x'>y</p>`)],
    ['another entity in a value', plain('<p title="&#104;i">y</p>')],
    ['an svg', plain('<svg><rect></rect></svg>')],
    ['an element before <head>', `<!doctype html><p>x</p><head>${CSP}</head><body></body>`],
    ['an element in <head> before the CSP', plain('', `<p>x</p>${CSP}`)],
    ['a second <head>', plain(`<head>${CSP}</head>`)],
    ['no CSP', plain('', '')],
    ['a stray <', plain('<p>a < b</p>')],
    ['text in <head> before the CSP', plain('', `text${CSP}`)],
    ['text before <head>', `<!doctype html>\n<html>text<head>${CSP}</head><body></body></html>`],
    ['the CSP inside <title>', plain('', `<title>${CSP}</title>`)],
  ])('leaves %s to the full check', (_label, doc) => {
    expect(isPlainlySelfContained(doc)).toBe(false);
  });

  // Soundness: the scan may only ever say yes where the full check, which parses as a browser does,
  // says yes too. Documents are built from the pieces an attacker would try.
  const tagName = fc.constantFrom(
    'p',
    'a',
    'img',
    'div',
    'span',
    'meta',
    'title',
    'table',
    'set',
    'x-y',
    'P',
  );
  const attrName = fc.constantFrom(
    'style',
    'href',
    'src',
    'srcset',
    'title',
    'onclick',
    'fill',
    'data-field',
    'http-equiv',
    'content',
    'attributename',
    'xlink:href',
    'ONCLICK',
    'class',
  );
  const attrValue = fc.oneof(
    fc.constantFrom(
      '#x',
      'data:,',
      'https://e.org/',
      '//e.org',
      'javascript:x',
      'url(b.png)',
      'url(#g)',
      '\\75 rl(x)',
      'refresh',
      'content-security-policy',
      EHR_FORM_CSP,
      'href',
      '&#104;ttps://e',
      '&amp;',
      '&quot;',
      'ja&#13;va',
    ),
    fc.string({ maxLength: 8 }),
  );
  const attribute = fc
    .tuple(attrName, attrValue, fc.constantFrom('"', "'", ''))
    .map(
      ([name, value, quote]) =>
        ` ${name}=${quote}${quote === '"' ? value.replaceAll('"', '&quot;') : value}${quote}`,
    );
  const piece = fc.oneof(
    fc
      .tuple(tagName, fc.array(attribute, { maxLength: 3 }), fc.boolean())
      .map(([name, attrs, close]) => `<${name}${attrs.join('')}>${close ? `</${name}>` : ''}`),
    fc.constantFrom(
      '<!-- c -->',
      '<svg>',
      '</svg>',
      '<head>',
      '</head>',
      '<title>',
      '</title>',
      ' ',
      '<',
      '>',
      '&',
      'text',
      CSP,
      '<style>',
    ),
  );
  const document = fc
    .tuple(fc.array(piece, { maxLength: 4 }), fc.array(piece, { maxLength: 8 }), fc.boolean())
    .map(([head, body, withCsp]) => plain(body.join(''), `${withCsp ? CSP : ''}${head.join('')}`));

  it('never proves a document the full check refuses', () => {
    fc.assert(
      fc.property(document, (doc) => {
        if (isPlainlySelfContained(doc)) expect(checkSelfContained(doc)).toEqual([]);
      }),
      { numRuns: 3000 },
    );
  });
});
