// What makes a PDF act rather than show, by the PDF names that say so, and the reader of qpdf's JSON
// that finds them (docs/attachments.md, "PDFs"). It reads only names, as qpdf writes them after
// resolving every object: nothing here reads PDF syntax.
import { jsonParser, type Token } from 'stream-json/core/parser.js';
import { getManyValues, isMany, none } from 'stream-chain/defs.js';

/** What makes a PDF act rather than show, as a refusal names it. */
export type PdfActiveContent =
  | 'JavaScript'
  | 'a launch action'
  | 'an embedded file'
  | 'an XFA form'
  | 'rich media'
  | 'a form submission action'
  | 'a data import action';

/**
 * The PDF names that make a document act, as keys or as values, and what a refusal calls each: a
 * script (`/JS`, `/S /JavaScript`, the document's JavaScript names, a 3D artwork's `/OnInstantiate`),
 * a launch action, an embedded file (a file specification's `/EF`, the `/EmbeddedFiles` names, an
 * `/EmbeddedFile` stream), an XFA form (whose scripts are in its XML), rich media (Flash, video, 3D),
 * and the actions that send form data away or read data in. Additional actions (`/AA`) are kept
 * when every action in them is: what makes an action harmful is its kind, refused wherever it is.
 */
export const ACTIVE_NAMES: ReadonlyMap<string, PdfActiveContent> = new Map([
  ['JS', 'JavaScript'],
  ['JavaScript', 'JavaScript'],
  ['OnInstantiate', 'JavaScript'],
  ['Launch', 'a launch action'],
  ['EF', 'an embedded file'],
  ['EmbeddedFile', 'an embedded file'],
  ['EmbeddedFiles', 'an embedded file'],
  ['XFA', 'an XFA form'],
  ['RichMedia', 'rich media'],
  ['RichMediaContent', 'rich media'],
  ['RichMediaSettings', 'rich media'],
  ['RichMediaExecute', 'rich media'],
  ['SubmitForm', 'a form submission action'],
  ['ImportData', 'a data import action'],
]);

/** The longest JSON string that can be one of those names: longer strings are not kept while read. */
const LONGEST_NAME = Math.max(...[...ACTIVE_NAMES.keys()].map((name) => name.length)) + 1;

/**
 * Reads qpdf's JSON as it comes and finds the first refused name. In qpdf's JSON v2 a PDF name, key
 * or value, is a JSON string that starts with `/`, in canonical form (`/J#61vaScript` is
 * `/JavaScript`); PDF strings start with `u:` or `b:`, references are `N G R`. Names that qpdf
 * cannot write as UTF-8 are none of the refused ones, which are ASCII. Only the first few characters
 * of each string are kept, so a long string costs no memory.
 */
export function nameScanner() {
  const tokenizer = jsonParser({
    packKeys: false,
    packStrings: false,
    packNumbers: true,
    streamNumbers: false,
  });
  const decoder = new TextDecoder('utf-8');
  let text = '';
  let broken = false;
  const scan = (tokens: Token[]): PdfActiveContent | undefined => {
    for (const token of tokens) {
      if (token.name === 'startKey' || token.name === 'startString') {
        text = '';
      } else if (token.name === 'stringChunk') {
        if (text.length <= LONGEST_NAME) text += token.value.slice(0, LONGEST_NAME + 1);
      } else if (token.name === 'endKey' || token.name === 'endString') {
        const found = text.startsWith('/') ? ACTIVE_NAMES.get(text.slice(1)) : undefined;
        if (found !== undefined) return found;
      }
    }
    return undefined;
  };
  // A stage of stream-chain is flushed by calling it with `none`, which its type leaves out.
  const tokenize = tokenizer as (input: string | typeof none) => ReturnType<typeof tokenizer>;
  const feed = (input: string | typeof none): PdfActiveContent | undefined => {
    if (broken) return undefined;
    try {
      const out = tokenize(input);
      if (out === none) return undefined;
      return scan(isMany(out) ? getManyValues<Token>(out) : [out]);
    } catch {
      broken = true;
      return undefined;
    }
  };
  return {
    read: (chunk: Buffer) => feed(decoder.decode(chunk, { stream: true })),
    /** Whether the JSON was whole and well-formed. */
    finish(): boolean {
      feed(decoder.decode());
      feed(none);
      return !broken;
    },
  };
}
