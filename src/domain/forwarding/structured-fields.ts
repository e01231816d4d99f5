// A parser for HTTP Structured Field dictionaries (RFC 9651, which obsoletes RFC 8941), the syntax
// of `Content-Digest`. It follows the RFC's parsing algorithm step by step, because a digest header
// that is parsed loosely (split on commas, strip colons) can be made to mean something other than
// what a conforming sender wrote. Anything that is not a valid dictionary yields `undefined`: the
// RFC says to ignore the whole field in that case, and callers then treat the digest as missing.

export type BareItem =
  | { readonly type: 'integer' | 'decimal' | 'date'; readonly value: number }
  | { readonly type: 'string' | 'token' | 'display-string'; readonly value: string }
  | { readonly type: 'byte-sequence'; readonly value: Uint8Array }
  | { readonly type: 'boolean'; readonly value: boolean };

export type Parameters = ReadonlyMap<string, BareItem>;

export interface Item {
  readonly kind: 'item';
  readonly value: BareItem;
  readonly parameters: Parameters;
}

export interface InnerList {
  readonly kind: 'inner-list';
  readonly items: readonly Item[];
  readonly parameters: Parameters;
}

export type DictionaryMember = Item | InnerList;

class SyntaxFailure extends Error {}

const KEY_START = /[a-z*]/;
const KEY_CHAR = /[a-z0-9_\-.*]/;
const TOKEN_START = /[A-Za-z*]/;
// tchar (RFC 9110) plus ":" and "/".
const TOKEN_CHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z:/]/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DIGIT = /[0-9]/;

/** A cursor over the field value; each method consumes what it parses or throws SyntaxFailure. */
class Cursor {
  private position = 0;
  private readonly input: string;
  constructor(input: string) {
    this.input = input;
  }

  peek(): string | undefined {
    return this.input[this.position];
  }
  next(): string {
    const c = this.input[this.position];
    if (c === undefined) throw new SyntaxFailure('unexpected end');
    this.position += 1;
    return c;
  }
  done(): boolean {
    return this.position >= this.input.length;
  }
  skip(chars: string): void {
    while (!this.done() && chars.includes(this.input[this.position] ?? '')) this.position += 1;
  }
  expect(char: string): void {
    if (this.next() !== char) throw new SyntaxFailure(`expected ${char}`);
  }

  dictionary(): Map<string, DictionaryMember> {
    const members = new Map<string, DictionaryMember>();
    this.skip(' ');
    while (!this.done()) {
      const key = this.key();
      let member: DictionaryMember;
      if (this.peek() === '=') {
        this.next();
        member = this.itemOrInnerList();
      } else {
        member = { kind: 'item', value: { type: 'boolean', value: true }, parameters: this.parameters() };
      }
      // A repeated key overwrites the earlier value (RFC 9651 §4.2.2).
      members.set(key, member);
      this.skip(' \t');
      if (this.done()) return members;
      this.expect(',');
      this.skip(' \t');
      if (this.done()) throw new SyntaxFailure('trailing comma');
    }
    return members;
  }

  private itemOrInnerList(): DictionaryMember {
    return this.peek() === '(' ? this.innerList() : this.item();
  }

  private innerList(): InnerList {
    this.expect('(');
    const items: Item[] = [];
    for (;;) {
      this.skip(' ');
      if (this.peek() === ')') {
        this.next();
        return { kind: 'inner-list', items, parameters: this.parameters() };
      }
      items.push(this.item());
      const after = this.peek();
      if (after !== ' ' && after !== ')') throw new SyntaxFailure('bad inner list');
    }
  }

  private item(): Item {
    const value = this.bareItem();
    return { kind: 'item', value, parameters: this.parameters() };
  }

  private parameters(): Map<string, BareItem> {
    const parameters = new Map<string, BareItem>();
    while (this.peek() === ';') {
      this.next();
      this.skip(' ');
      const key = this.key();
      let value: BareItem = { type: 'boolean', value: true };
      if (this.peek() === '=') {
        this.next();
        value = this.bareItem();
      }
      parameters.set(key, value);
    }
    return parameters;
  }

  private key(): string {
    const first = this.peek();
    if (first === undefined || !KEY_START.test(first)) throw new SyntaxFailure('bad key');
    let key = '';
    while (!this.done() && KEY_CHAR.test(this.peek() ?? '')) key += this.next();
    return key;
  }

  private bareItem(): BareItem {
    const c = this.peek();
    if (c === undefined) throw new SyntaxFailure('missing item');
    if (c === '-' || DIGIT.test(c)) return this.number();
    if (c === '"') return { type: 'string', value: this.string() };
    if (TOKEN_START.test(c)) return { type: 'token', value: this.token() };
    if (c === ':') return { type: 'byte-sequence', value: this.byteSequence() };
    if (c === '?') return { type: 'boolean', value: this.boolean() };
    if (c === '@') {
      this.next();
      const date = this.number();
      if (date.type !== 'integer') throw new SyntaxFailure('bad date');
      return { type: 'date', value: date.value };
    }
    if (c === '%') return { type: 'display-string', value: this.displayString() };
    throw new SyntaxFailure('bad item');
  }

  private number(): { type: 'integer' | 'decimal'; value: number } {
    let sign = 1;
    if (this.peek() === '-') {
      this.next();
      sign = -1;
    }
    if (!DIGIT.test(this.peek() ?? '')) throw new SyntaxFailure('bad number');
    let text = '';
    let decimal = false;
    while (!this.done()) {
      const c = this.peek() ?? '';
      if (DIGIT.test(c)) text += this.next();
      else if (c === '.' && !decimal) {
        if (text.length > 12) throw new SyntaxFailure('decimal too long');
        decimal = true;
        text += this.next();
      } else break;
      if (!decimal && text.length > 15) throw new SyntaxFailure('integer too long');
      if (decimal && text.length > 16) throw new SyntaxFailure('decimal too long');
    }
    if (!decimal) return { type: 'integer', value: sign * Number(text) };
    if (text.endsWith('.') || text.length - text.indexOf('.') - 1 > 3)
      throw new SyntaxFailure('bad decimal fraction');
    return { type: 'decimal', value: sign * Number(text) };
  }

  private string(): string {
    this.expect('"');
    let value = '';
    for (;;) {
      const c = this.next();
      if (c === '"') return value;
      if (c === '\\') {
        const escaped = this.next();
        if (escaped !== '"' && escaped !== '\\') throw new SyntaxFailure('bad escape');
        value += escaped;
      } else if (c < ' ' || c > '~') {
        throw new SyntaxFailure('bad string character');
      } else {
        value += c;
      }
    }
  }

  private token(): string {
    let value = this.next();
    while (!this.done() && TOKEN_CHAR.test(this.peek() ?? '')) value += this.next();
    return value;
  }

  private byteSequence(): Uint8Array {
    this.expect(':');
    let encoded = '';
    for (let c = this.next(); c !== ':'; c = this.next()) encoded += c;
    if (!BASE64.test(encoded)) throw new SyntaxFailure('bad base64');
    return new Uint8Array(Buffer.from(encoded, 'base64'));
  }

  private boolean(): boolean {
    this.expect('?');
    const c = this.next();
    if (c === '1') return true;
    if (c === '0') return false;
    throw new SyntaxFailure('bad boolean');
  }

  private displayString(): string {
    this.expect('%');
    this.expect('"');
    const bytes: number[] = [];
    for (;;) {
      const c = this.next();
      if (c === '"') break;
      if (c < ' ' || c > '~') throw new SyntaxFailure('bad display string character');
      if (c === '%') {
        const hex = this.next() + this.next();
        if (!/^[0-9a-f]{2}$/.test(hex)) throw new SyntaxFailure('bad percent-encoding');
        bytes.push(Number.parseInt(hex, 16));
      } else {
        bytes.push(c.charCodeAt(0));
      }
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes));
    } catch {
      throw new SyntaxFailure('bad UTF-8 in display string');
    }
  }
}

/** The members of a Structured Field dictionary in order, or `undefined` when `text` is not one. */
export function parseDictionary(text: string): ReadonlyMap<string, DictionaryMember> | undefined {
  try {
    return new Cursor(text).dictionary();
  } catch (error) {
    if (error instanceof SyntaxFailure) return undefined;
    throw error;
  }
}
