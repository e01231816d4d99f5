// The escape-by-construction builder: what it escapes, what it passes through, and the places it
// refuses to put a string.
import { describe, expect, it } from 'vitest';
import { escapeHtml, html, trustedHtml } from '../../src/render/html.ts';

describe('html', () => {
  it('escapes interpolated strings in text and quoted attributes', () => {
    const value = `<b>"Tom" & 'Jerry'</b>\``;
    expect(String(html`<p title="${value}">${value}</p>`)).toBe(
      '<p title="&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;&#96;">' +
        '&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;&#96;</p>',
    );
  });

  it('renders numbers, drops null, undefined and false, and joins arrays', () => {
    const items = ['a<', html`<i>b</i>`, null, [1, 2]];
    expect(String(html`<p>${3}${null}${undefined}${false}${items}</p>`)).toBe('<p>3a&lt;<i>b</i>12</p>');
  });

  it('inserts SafeHtml as-is, so nested templates are escaped exactly once', () => {
    const inner = html`<em>${'&'}</em>`;
    expect(String(html`<p>${inner}</p>`)).toBe('<p><em>&amp;</em></p>');
  });

  it('keeps carriage returns and replaces what HTML cannot carry', () => {
    expect(escapeHtml('a\r\nb\0c\ud800')).toBe('a&#13;\nb\uFFFDc\uFFFD');
  });

  // Prettier would reformat the markup inside these templates, and with it what is being tested.
  // prettier-ignore
  it('refuses a string where escaping cannot make it safe', () => {
    const value = 'x onmouseover=alert(1)';
    expect(() => html`<div ${value}></div>`).toThrow(/tag or attribute name/);
    expect(() => html`<div class=${value}></div>`).toThrow(/unquoted/);
    expect(() => html`<div onclick="${value}"></div>`).toThrow(/onclick/);
    expect(() => html`<iframe srcdoc="${value}"></iframe>`).toThrow(/srcdoc/);
    expect(() => html`<!-- ${value} -->`).toThrow(/comment/);
    expect(() => html`<script>${value}</script>`).toThrow(/script/);
    expect(() => html`<style>${value}</style>`).toThrow(/style/);
    expect(() => html`<${value}>`).toThrow(/tag or attribute name/);
  });

  it('allows strings again once a comment, script or quoted value has closed', () => {
    // Prettier would reformat the markup inside this template, and with it what is being tested.
    // prettier-ignore
    const out = html`<!-- c --><script>s</script><a title="t" href="#x">${'<'}</a>`;
    expect(String(out)).toBe('<!-- c --><script>s</script><a title="t" href="#x">&lt;</a>');
  });

  it('defuses script URLs in URL attributes and keeps ordinary ones', () => {
    expect(String(html`<a href="${' JavaScript:alert(1)'}">x</a>`)).toBe(
      '<a href="about:invalid#unsafe-url">x</a>',
    );
    expect(String(html`<a href="${'https://example.org/a?b=1&c=2'}">x</a>`)).toBe(
      '<a href="https://example.org/a?b=1&amp;c=2">x</a>',
    );
    expect(String(html`<a href="${'/l/abc:def'}">x</a>`)).toBe('<a href="/l/abc:def">x</a>');
  });

  it('refuses values of types it does not know', () => {
    const untyped = { toString: () => '<b>' } as unknown as string;
    expect(() => html`<p>${untyped}</p>`).toThrow(TypeError);
  });

  it('takes only string literals in trustedHtml', () => {
    expect(String(trustedHtml('<hr>'))).toBe('<hr>');
    const data: string = '<b>';
    // @ts-expect-error: data typed `string` must go through html`...`, not trustedHtml.
    expect(String(trustedHtml(data))).toBe('<b>');
  });
});
