// The web pages' pure rendering: links made from text keep the text and carry only http(s) URLs,
// controls escape what they hold and tie labels, hints and errors together, and the page policy
// matches the document the shell writes.
import * as cheerio from 'cheerio';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { html } from '../../../src/render/html.ts';
import { errorSummary, select, textarea, textInput } from '../../../src/render/pages/form-controls.ts';
import { linkify } from '../../../src/render/pages/linkify.ts';
import { renderMessagePage } from '../../../src/render/pages/message.page.ts';
import { pageCsp, renderPage } from '../../../src/render/pages/page-shell.ts';

const textOf = (markup: string) => cheerio.load(`<p>${markup}</p>`)('p');

describe('linkify', () => {
  it('links http(s) addresses, leaving sentence punctuation and unbalanced brackets outside', () => {
    const p = textOf(
      linkify(
        'See https://example.org/guide. Or (https://example.org/a_(b)) and http://x.org/?q=1&r=2, ok',
      ).toString(),
    );
    expect(
      p
        .find('a')
        .toArray()
        .map((a) => a.attribs.href),
    ).toEqual(['https://example.org/guide', 'https://example.org/a_(b)', 'http://x.org/?q=1&r=2']);
    for (const a of p.find('a').toArray()) {
      expect(a.attribs).toMatchObject({ rel: 'noopener noreferrer', target: '_blank' });
    }
  });

  it('never links another scheme', () => {
    const p = textOf(
      linkify('javascript:alert(1) data:text/html,x vbscript:x file:///etc/passwd ftp://x.org').toString(),
    );
    expect(p.find('a')).toHaveLength(0);
  });

  it('keeps the text exactly, and links only URLs that parse as http(s)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.string({ unit: 'binary' }),
            fc.webUrl({ withQueryParameters: true, withFragments: true }),
          ),
          {
            maxLength: 6,
          },
        ),
        (parts) => {
          const text = parts.join(' ');
          const p = textOf(linkify(text).toString());
          p.find('.visually-hidden').remove();
          expect(p.text()).toBe(text.toWellFormed().replaceAll('\0', '\uFFFD'));
          for (const a of p.find('a').toArray()) {
            expect(new URL(a.attribs.href!).protocol).toMatch(/^https?:$/);
          }
        },
      ),
    );
  });
});

describe('form controls', () => {
  it('escapes the value and ties label, hint and error to the input', () => {
    const markup = textInput({
      name: 'patientName',
      label: 'Name',
      value: '"><img src=x onerror=alert(1)>',
      hint: 'Full name',
      error: 'Enter the name',
    }).toString();
    const $ = cheerio.load(markup);
    expect($('img')).toHaveLength(0);
    expect($('input').val()).toBe('"><img src=x onerror=alert(1)>');
    expect($('label').attr('for')).toBe('field-patientName');
    expect($('input').attr('aria-describedby')).toBe('field-patientName-hint field-patientName-error');
    expect($('input').attr('aria-invalid')).toBe('true');
    expect($('#field-patientName-error').text()).toBe('Error: Enter the name');
  });

  it('keeps a posted select value that is not a choice, selected, so the person sees it', () => {
    const $ = cheerio.load(
      select({
        name: 'nationality',
        label: 'Nationality',
        value: '<XX>',
        choices: [{ value: 'SG', label: 'Singapore' }],
        emptyLabel: 'Not stated',
      }).toString(),
    );
    expect($('option[selected]').attr('value')).toBe('<XX>');
    expect($('option')).toHaveLength(3);
  });

  it('round-trips any text through a textarea, leading newlines included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        const $ = cheerio.load(
          textarea({ name: 'clinicalInfo', label: 'Clinical', value, rows: 3, maxLength: 8000 }).toString(),
        );
        expect($('textarea').text()).toBe(value.toWellFormed().replaceAll('\0', '\uFFFD'));
      }),
    );
  });

  it('links each summary entry to its field, and says nothing when there is nothing wrong', () => {
    expect(errorSummary([])).toBeNull();
    const $ = cheerio.load(
      errorSummary([
        { field: 'dob', message: 'Date of birth must not be in the future' },
        { field: null, message: 'Someone else changed it' },
      ])!.toString(),
    );
    expect($('a').attr('href')).toBe('#field-dob');
    expect($('li').last().find('a')).toHaveLength(0);
    expect($('.error-summary').attr('autofocus')).toBeDefined();
  });
});

describe('the page shell', () => {
  it('carries the nonce its policy names, and no script', () => {
    const page = renderPage({ nonce: 'abc123==', title: 'T', main: html`<p>x</p>` });
    const $ = cheerio.load(page);
    expect($('style').attr('nonce')).toBe('abc123==');
    expect(pageCsp('abc123==')).toBe(
      "default-src 'none'; style-src 'nonce-abc123=='; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(pageCsp('n', { styleAttributes: true })).toContain("style-src-attr 'unsafe-inline'");
    expect($('script')).toHaveLength(0);
    expect($('a.skip-link').attr('href')).toBe('#main');
    expect($('html').attr('lang')).toBe('en');
  });

  it('escapes everything a message page shows', () => {
    const page = renderMessagePage({
      nonce: 'n',
      title: '<b>t</b>',
      paragraphs: ['<script>alert(1)</script>'],
      requestId: '"><x>',
      header: { institution: '<i>Clinic</i>', person: '<u>me</u>' },
    });
    const $ = cheerio.load(page);
    expect($('script, b, i, u, x')).toHaveLength(0);
    expect($('h1').text()).toBe('<b>t</b>');
  });
});
