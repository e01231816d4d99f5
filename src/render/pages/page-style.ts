// The web pages' one stylesheet, sent inline in a <style> that carries the page's CSP nonce. It is
// constant (no value from a request ever goes in), so it is trusted markup.
//
// Choices: system fonts at 16px and up; text and controls at WCAG AA contrast or better; a thick
// yellow focus ring that shows on every background; targets at least 44px high; one column on narrow
// screens, where tables become blocks (no sideways scrolling, nothing cut off, no word broken between
// two letters); and a print stylesheet that drops the page chrome and keeps sections whole.
export const PAGE_CSS = `
:root {
  --ink: #1b2430; --muted: #4f5b69; --line: #d3d9e1; --canvas: #f3f5f8; --card: #ffffff;
  --brand: #0b4f6c; --brand-dark: #083a50; --go: #0b6e4f; --go-dark: #064a35;
  --error: #b3261e; --error-bg: #fdf1f0; --warn: #8a4b00; --warn-bg: #fff6e5; --info-bg: #eef5fa;
  --focus: #ffbf47;
}
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; background: var(--canvas); color: var(--ink); line-height: 1.5; font-size: 1rem;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
a { color: var(--brand); text-underline-offset: 0.15em; }
a:hover { color: var(--brand-dark); text-decoration-thickness: 2px; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 0; }
a:focus-visible { background: var(--focus); color: #0b0c0c; outline: none; box-shadow: 0 4px #0b0c0c; text-decoration: none; }
.visually-hidden {
  position: absolute !important; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
  clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap; border: 0;
}
.skip-link { position: absolute; left: 16px; top: -60px; z-index: 10; padding: 8px 14px; background: var(--focus); color: #0b0c0c; font-weight: 700; }
.skip-link:focus { top: 8px; }

.site-header { background: var(--brand); color: #fff; border-bottom: 4px solid var(--brand-dark); }
.site-header__inner {
  max-width: 980px; margin: 0 auto; padding: 14px 24px; display: flex; flex-wrap: wrap;
  align-items: center; justify-content: space-between; gap: 6px 24px;
}
.brand { display: flex; align-items: baseline; gap: 10px; font-weight: 700; font-size: 1.25rem; letter-spacing: 0.01em; }
.brand__product { font-weight: 400; font-size: 1rem; opacity: 0.9; }
.site-header__who { text-align: right; font-size: 0.9375rem; line-height: 1.35; }
.site-header__institution { display: block; font-weight: 700; font-size: 1rem; }

.page { max-width: 980px; margin: 0 auto; padding: 28px 24px 8px; }
.page-title { margin: 0 0 6px; font-size: 1.875rem; line-height: 1.2; }
.page-lede { margin: 0 0 24px; color: var(--muted); display: flex; flex-wrap: wrap; gap: 6px 16px; align-items: center; }
h2 { font-size: 1.3125rem; line-height: 1.3; margin: 0 0 16px; }
p { margin: 0 0 14px; }
.muted { color: var(--muted); }
.nowrap { white-space: nowrap; }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9375em; }

.tag { display: inline-block; padding: 2px 10px; border-radius: 999px; font-size: 0.875rem; font-weight: 700; background: #e3edf4; color: var(--brand-dark); }
.tag--action { background: #ffe8c2; color: #6b3a00; }
.tag--pending { background: #dcebfa; color: #0d3d6b; }
.tag--confirmed { background: #d7f0e4; color: #064a35; }
.tag--stopped { background: #f6dede; color: #7a1c16; }

.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 22px 24px 8px; margin: 0 0 20px; }
.card__title { font-size: 1.3125rem; font-weight: 700; margin: 0 0 4px; padding: 0; }
.card__intro { color: var(--muted); margin: 0 0 18px; }
fieldset { border: 0; margin: 0; padding: 0; min-width: 0; }
legend { padding: 0; }
.grid { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 0 28px; }
.grid__wide { grid-column: 1 / -1; }

.field { margin: 0 0 20px; }
.label { display: block; font-weight: 700; margin: 0 0 4px; }
.hint { display: block; color: var(--muted); margin: 0 0 6px; font-size: 0.9375rem; }
.input, .select, .textarea {
  display: block; width: 100%; min-height: 44px; padding: 8px 10px; font: inherit; color: inherit;
  background: #fff; border: 2px solid #5f6b79; border-radius: 4px;
}
.input--narrow { max-width: 14em; }
.input--date { max-width: 12em; }
.textarea { min-height: 180px; resize: vertical; line-height: 1.45; }
.input:focus, .select:focus, .textarea:focus { outline: 3px solid var(--focus); outline-offset: 0; box-shadow: inset 0 0 0 2px #0b0c0c; }
.field--error { border-left: 5px solid var(--error); padding-left: 14px; }
.field--error .input, .field--error .select, .field--error .textarea { border-color: var(--error); }
.error-message { display: block; color: var(--error); font-weight: 700; margin: 0 0 6px; }

.radios { display: flex; flex-wrap: wrap; gap: 10px 24px; }
.radio { display: flex; align-items: center; gap: 10px; min-height: 44px; }
.radio input, .option input { width: 24px; height: 24px; margin: 0; flex: none; accent-color: var(--brand); }
.radio label { font-weight: 600; }
.category { margin: 0 0 18px; }
.category__name { display: block; margin: 0 0 8px; font-size: 0.8125rem; font-weight: 700; letter-spacing: 0.06em; text-transform: uppercase; color: var(--muted); }
.option { display: flex; gap: 14px; align-items: flex-start; padding: 12px 14px; margin: 0 0 8px; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
.option:has(input:checked) { border-color: var(--brand); background: #f2f8fb; box-shadow: inset 0 0 0 1px var(--brand); }
.option input { margin-top: 2px; }
.option__name { display: block; font-weight: 700; }
.option__provider { display: block; color: var(--muted); font-size: 0.9375rem; }
.option__wait { display: block; color: var(--muted); font-size: 0.9375rem; }
.option__description { display: block; margin-top: 4px; font-size: 0.9375rem; white-space: pre-line; overflow-wrap: anywhere; }
.option__inactive { display: inline-block; margin-left: 6px; color: var(--error); font-weight: 700; font-size: 0.875rem; }
.fixed-offering { padding: 14px 16px; border: 1px solid var(--line); border-radius: 6px; background: #f8fafc; margin: 0 0 20px; }

.banner { padding: 14px 18px; margin: 0 0 20px; border-radius: 4px; border-left: 6px solid var(--go); background: #eaf6f0; }
.banner--info { border-left-color: var(--brand); background: var(--info-bg); }
.banner--warn { border-left-color: #c26a00; background: var(--warn-bg); }
.banner__title { display: block; font-weight: 700; margin: 0 0 4px; }
.request { border: 2px solid #c26a00; border-left-width: 8px; background: var(--warn-bg); padding: 16px 20px; margin: 0 0 24px; border-radius: 4px; }
.request__title { margin: 0 0 6px; font-size: 1.125rem; color: var(--warn); }
.request__reason { margin: 0 0 6px; font-weight: 600; }
.request__text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0 0 6px; }

.error-summary { border: 5px solid var(--error); background: #fff; padding: 18px 22px 6px; margin: 0 0 28px; }
.error-summary:focus { outline: 3px solid var(--focus); outline-offset: 0; }
.error-summary__title { margin: 0 0 10px; font-size: 1.25rem; }
.error-summary ul { margin: 0 0 12px; padding-left: 1.1em; }
.error-summary li { margin: 0 0 6px; }
.error-summary a { color: var(--error); font-weight: 700; }

.actions { display: flex; flex-wrap: wrap; align-items: center; gap: 14px; margin: 6px 0 28px; }
.button {
  display: inline-block; min-height: 46px; padding: 10px 22px; font: inherit; font-weight: 700;
  border-radius: 4px; border: 2px solid transparent; cursor: pointer; text-decoration: none; line-height: 1.3;
}
.button--primary { background: var(--go); color: #fff; box-shadow: 0 3px 0 var(--go-dark); }
.button--primary:hover { background: var(--go-dark); }
.button--secondary { background: #fff; color: var(--brand); border-color: var(--brand); }
.button--secondary:hover { background: #eef5fa; }
.button:focus-visible { outline: 3px solid var(--focus); outline-offset: 0; box-shadow: 0 0 0 6px #0b0c0c; }
.actions__note { color: var(--muted); font-size: 0.9375rem; flex-basis: 100%; margin: 0; }
.button--small { min-height: 44px; padding: 8px 16px; }

.files { list-style: none; margin: 0 0 20px; padding: 0; border-top: 1px solid var(--line); }
.file { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; padding: 12px 0; border-bottom: 1px solid var(--line); }
.file__main { flex: 1 1 16em; min-width: 0; }
.file__name { display: block; font-weight: 700; overflow-wrap: anywhere; }
.file__meta { display: block; color: var(--muted); font-size: 0.9375rem; }
.file__remove { margin: 0; }
.files__none { color: var(--muted); }
.file-input { display: block; max-width: 100%; min-height: 44px; padding: 8px 0; font: inherit; }
.file-input::file-selector-button {
  min-height: 44px; margin: 0 12px 0 0; padding: 8px 16px; font: inherit; font-weight: 700; color: var(--brand);
  background: #fff; border: 2px solid var(--brand); border-radius: 4px; cursor: pointer;
}
.field--error .file-input::file-selector-button { border-color: var(--error); }
.file-input:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.upload { margin: 0 0 20px; }
.files-card { margin-top: 20px; }
.card__subtitle { font-size: 1.0625rem; font-weight: 700; margin: 0 0 8px; }
.outcome-card .summary dd strong { font-size: 1.0625rem; }
.outcome__summary { white-space: pre-wrap; overflow-wrap: anywhere; }
.acknowledge { border-top: 1px solid var(--line); padding: 18px 0 4px; }
.acknowledge form { margin: 0 0 18px; }

.summary { display: grid; grid-template-columns: minmax(9em, 30%) 1fr; margin: 0 0 16px; border-top: 1px solid var(--line); }
.summary dt, .summary dd { margin: 0; padding: 10px 12px 10px 0; border-bottom: 1px solid var(--line); }
.summary dt { font-weight: 700; }
.summary dd { overflow-wrap: anywhere; }
.panel { background: var(--go); color: #fff; border-radius: 8px; padding: 26px 28px; margin: 0 0 24px; }
.panel__title { margin: 0 0 8px; font-size: 1.75rem; }
.panel__body { margin: 0; font-size: 1.125rem; }
.panel--neutral { background: var(--brand); }

.document { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px 28px 4px; }
.toolbar { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: baseline; gap: 8px 20px; margin: 0 0 16px; }
.message { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 28px 30px 14px; max-width: 44em; }
.site-footer { max-width: 980px; margin: 0 auto; padding: 8px 24px 36px; color: var(--muted); font-size: 0.875rem; }

@media (max-width: 700px) {
  .grid { grid-template-columns: 1fr; }
  .site-header__who { text-align: left; }
  .page { padding: 20px 16px 4px; }
  .card { padding: 18px 16px 4px; }
  .summary { grid-template-columns: 1fr; }
  .summary dt { border-bottom: 0; padding-bottom: 0; }
  .document { padding: 4px 14px; }
}
/* On a phone the EHR form's tables (the view and print pages) become blocks: a details table reads
   label above value, and each row of a table with headings is a block with every value under its
   column's heading, from the cell's data-label. The form's own inline styles (a 32% label column, a
   time that never wraps) are overridden here, on the page only. */
@media screen and (max-width: 700px) {
  .document table, .document tbody, .document tr, .document th, .document td { display: block; width: auto !important; }
  .document thead {
    display: block; position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
    clip-path: inset(50%); white-space: nowrap; border: 0;
  }
  .document th, .document td { padding: 0 !important; border: 0 !important; overflow-wrap: break-word; }
  .document tbody > tr { padding: 8px 0; border-bottom: 1px solid var(--line); }
  .document tbody > tr:last-child { border-bottom: 0; }
  .document td[data-label] + td[data-label] { margin-top: 6px; }
  .document td[data-label]::before {
    content: attr(data-label); content: attr(data-label) / "";
    display: block; font-weight: 600; font-size: 0.875em; color: var(--muted);
  }
}
@media print {
  @page { margin: 14mm; }
  body { background: #fff; font-size: 11pt; }
  .site-header, .skip-link, .site-footer, .no-print { display: none !important; }
  .page { max-width: none; padding: 0; }
  .document, .card, .message { border: 0; padding: 0; }
  section, tr, .card { break-inside: avoid; }
  a[href^="http"]::after { content: " (" attr(href) ")"; font-size: 0.875em; }
}
`;
