/**
 * Lucene 9's regular expression syntax, as Elasticsearch 8 parses the value of a `regexp` query
 * (org.apache.lucene.util.automaton.RegExp), written from Lucene's documented grammar and its
 * parser's rules for the Elasticsearch stand-in: it refuses what Lucene refuses (with Lucene's
 * messages) and matches what Lucene matches.
 *
 *   regexp     ::= unionexp
 *   unionexp   ::= interexp '|' unionexp | interexp
 *   interexp   ::= concatexp '&' interexp | concatexp          ('&' only with INTERSECTION)
 *   concatexp  ::= repeatexp concatexp | repeatexp
 *   repeatexp  ::= repeatexp ('?' | '*' | '+' | '{n}' | '{n,}' | '{n,m}') | complexp
 *   complexp   ::= '~' complexp | charclassexp                    ('~' only with COMPLEMENT)
 *   charclassexp ::= '[' charclasses ']' | '[^' charclasses ']' | simpleexp
 *   charclasses ::= charclass charclasses | charclass
 *   charclass  ::= charexp '-' charexp | charexp | \d \D \s \S \w \W
 *   simpleexp  ::= charexp | '.' | '"' <string> '"' | '(' ')' | '(' unionexp ')'
 *                | '#' | '@' | '<' ... '>'                         (only with their flags)
 *   charexp    ::= <Unicode character> | '\' <Unicode character>
 *
 * The parser's rules beyond the grammar: a backslash before a letter other than d, D, s, S, w, W
 * is an error ("invalid character class"); a range's ends must be in order; `{n,m}` needs n <= m;
 * `[]` is not an empty class (the `]` is its first member). Case insensitivity (ES
 * `case_insensitive`, Lucene ASCII_CASE_INSENSITIVE) folds single characters and strings up to
 * U+0080 and never ranges. `.` is any one code point, newline included. Predefined classes are
 * Lucene's own: `\s` is [ \t\n\r] (no form feed), `\w` [a-zA-Z_0-9].
 *
 * Only the syntax Elasticsearch enables with `"flags": "NONE"` is supported by the matcher; the
 * optional operators are then ordinary characters, as in Lucene.
 */
import { RE2JS } from 're2js';

export class LuceneRegexpError extends Error {}

type CodeRange = [number, number];

/** A set of code points as sorted, disjoint, non-adjacent ranges. */
type CodeSet = CodeRange[];

export type LuceneNode =
  | { kind: 'union'; left: LuceneNode; right: LuceneNode }
  | { kind: 'concat'; left: LuceneNode; right: LuceneNode }
  | { kind: 'repeat'; exp: LuceneNode; min: number; max: number | undefined }
  | { kind: 'set'; set: CodeSet }
  | { kind: 'string'; text: string }
  | { kind: 'any' };

const MAX_CODE_POINT = 0x10ffff;
const LETTER_ESCAPE_ERRORS = 'abcefghijklmnopqrtuvxyzABCEFGHIJKLMNOPQRTUVXYZ';
const PREDEFINED = 'dDwWsS';

function normalize(ranges: CodeRange[]): CodeSet {
  const sorted = ranges.filter(([a, b]) => a <= b).sort((x, y) => x[0] - y[0]);
  const out: CodeSet = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

function complement(set: CodeSet): CodeSet {
  const out: CodeSet = [];
  let next = 0;
  for (const [a, b] of set) {
    if (a > next) out.push([next, a - 1]);
    next = b + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

const cp = (s: string) => s.codePointAt(0)!;

/** Lucene's expansions of the predefined classes (RegExp.expandPredefined). */
function predefined(c: string): CodeSet {
  const digit: CodeSet = [[cp('0'), cp('9')]];
  const space: CodeSet = normalize([
    [cp(' '), cp(' ')],
    [9, 10],
    [13, 13],
  ]);
  const word: CodeSet = normalize([
    [cp('a'), cp('z')],
    [cp('A'), cp('Z')],
    [cp('_'), cp('_')],
    [cp('0'), cp('9')],
  ]);
  switch (c) {
    case 'd':
      return digit;
    case 'D':
      return complement(digit);
    case 's':
      return space;
    case 'S':
      return complement(space);
    case 'w':
      return word;
    default:
      return complement(word);
  }
}

/** The other case of a code point up to U+0080, as Lucene's ASCII case-insensitive matching folds it. */
function otherCase(c: number): number | undefined {
  if (c > 128) return undefined;
  const s = String.fromCodePoint(c);
  const lower = s.toLowerCase();
  const other = lower === s ? s.toUpperCase() : lower;
  return other !== s && other.length === 1 ? cp(other) : undefined;
}

class Parser {
  private pos = 0;

  constructor(
    private readonly text: string,
    /** ASCII case-insensitive matching: single characters (in classes too) stand for both cases. */
    private readonly caseInsensitive: boolean,
  ) {}

  private charSet(c: number): CodeSet {
    const o = this.caseInsensitive ? otherCase(c) : undefined;
    return normalize(
      o === undefined
        ? [[c, c]]
        : [
            [c, c],
            [o, o],
          ],
    );
  }

  parse(): LuceneNode {
    if (this.text.length === 0) return { kind: 'string', text: '' };
    const e = this.parseUnion();
    if (this.pos < this.text.length)
      throw new LuceneRegexpError(`end-of-string expected at position ${this.pos}`);
    return e;
  }

  private more(): boolean {
    return this.pos < this.text.length;
  }

  private peek(chars: string): boolean {
    return this.more() && chars.includes(String.fromCodePoint(this.text.codePointAt(this.pos)!));
  }

  private match(c: string): boolean {
    if (!this.more() || this.text.codePointAt(this.pos) !== cp(c)) return false;
    this.pos += c.length;
    return true;
  }

  private next(): number {
    if (!this.more()) throw new LuceneRegexpError('unexpected end-of-string');
    const c = this.text.codePointAt(this.pos)!;
    this.pos += c > 0xffff ? 2 : 1;
    return c;
  }

  private parseUnion(): LuceneNode {
    let e = this.parseConcat();
    while (this.match('|')) e = { kind: 'union', left: e, right: this.parseConcat() };
    return e;
  }

  private parseConcat(): LuceneNode {
    let e = this.parseRepeat();
    while (this.more() && !this.peek(')|')) e = { kind: 'concat', left: e, right: this.parseRepeat() };
    return e;
  }

  private parseRepeat(): LuceneNode {
    let e = this.parseCharClassExp();
    while (this.peek('?*+{')) {
      if (this.match('?')) e = { kind: 'repeat', exp: e, min: 0, max: 1 };
      else if (this.match('*')) e = { kind: 'repeat', exp: e, min: 0, max: undefined };
      else if (this.match('+')) e = { kind: 'repeat', exp: e, min: 1, max: undefined };
      else if (this.match('{')) {
        let start = this.pos;
        while (this.peek('0123456789')) this.next();
        if (start === this.pos) throw new LuceneRegexpError(`integer expected at position ${this.pos}`);
        const n = this.integer(this.text.slice(start, this.pos));
        let m: number | undefined = n;
        if (this.match(',')) {
          start = this.pos;
          while (this.peek('0123456789')) this.next();
          m = start !== this.pos ? this.integer(this.text.slice(start, this.pos)) : undefined;
        }
        if (!this.match('}')) throw new LuceneRegexpError(`expected '}' at position ${this.pos}`);
        if (m !== undefined && n > m)
          throw new LuceneRegexpError(`invalid repetition range(out of order): ${n}..${m}`);
        e = { kind: 'repeat', exp: e, min: n, max: m };
      }
    }
    return e;
  }

  /** Java's Integer.parseInt: more than 2^31 - 1 is a NumberFormatException (an IllegalArgumentException). */
  private integer(digits: string): number {
    const n = Number(digits);
    if (n > 2 ** 31 - 1) throw new LuceneRegexpError(`For input string: "${digits}"`);
    return n;
  }

  private parseCharClassExp(): LuceneNode {
    if (!this.match('[')) return this.parseSimple();
    const negate = this.match('^');
    let set = this.parseCharClass();
    while (this.more() && !this.peek(']')) set = normalize([...set, ...this.parseCharClass()]);
    if (!this.match(']')) throw new LuceneRegexpError(`expected ']' at position ${this.pos}`);
    return { kind: 'set', set: negate ? complement(set) : set };
  }

  /** One member of a class: a predefined class, a range (never case-folded) or a character. */
  private parseCharClass(): CodeSet {
    const pre = this.matchPredefined();
    if (pre !== null) return pre;
    const c = this.parseCharExp();
    if (this.match('-')) {
      const to = this.parseCharExp();
      if (c > to) throw new LuceneRegexpError(`invalid range: from (${c}) cannot be > to (${to})`);
      return [[c, to]];
    }
    return this.charSet(c);
  }

  /** `\d` and friends; `\\`; an error for a backslash before any other letter. Consumes the backslash. */
  private matchPredefined(): CodeSet | null {
    if (!this.match('\\')) return null;
    if (this.peek(PREDEFINED)) return predefined(String.fromCodePoint(this.next()));
    if (this.peek('\\')) return this.charSet(this.next());
    if (this.peek(LETTER_ESCAPE_ERRORS))
      throw new LuceneRegexpError(`invalid character class \\${String.fromCodePoint(this.next())}`);
    return null;
  }

  private parseCharExp(): number {
    this.match('\\');
    return this.next();
  }

  private parseSimple(): LuceneNode {
    if (this.match('.')) return { kind: 'any' };
    if (this.match('"')) {
      const start = this.pos;
      while (this.more() && !this.peek('"')) this.next();
      if (!this.match('"')) throw new LuceneRegexpError(`expected '"' at position ${this.pos}`);
      const text = this.text.slice(start, this.pos - 1);
      return { kind: 'string', text };
    }
    if (this.match('(')) {
      if (this.match(')')) return { kind: 'string', text: '' };
      const e = this.parseUnion();
      if (!this.match(')')) throw new LuceneRegexpError(`expected ')' at position ${this.pos}`);
      return e;
    }
    const pre = this.matchPredefined();
    if (pre !== null) return { kind: 'set', set: pre };
    return { kind: 'set', set: this.charSet(this.parseCharExp()) };
  }
}

/**
 * Parses a regexp as Lucene does with no optional syntax (ES `"flags": "NONE"`); throws
 * LuceneRegexpError. With `caseInsensitive`, single characters stand for both their cases.
 */
export function parseLuceneRegexp(text: string, caseInsensitive = false): LuceneNode {
  return new Parser(text, caseInsensitive).parse();
}

const hex = (c: number) => `\\x{${c.toString(16)}}`;

function setSource(set: CodeSet): string {
  if (set.length === 0) return '[^\\x{0}-\\x{10ffff}]';
  return `[${set.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join('')}]`;
}

/** An RE2 pattern (whole-string anchored) that accepts exactly what Lucene's automaton accepts. */
function re2Source(node: LuceneNode, caseInsensitive: boolean): string {
  switch (node.kind) {
    case 'union':
      return `(?:${re2Source(node.left, caseInsensitive)}|${re2Source(node.right, caseInsensitive)})`;
    case 'concat':
      return `${re2Source(node.left, caseInsensitive)}${re2Source(node.right, caseInsensitive)}`;
    case 'repeat': {
      if (node.min > 1000 || (node.max ?? 0) > 1000)
        throw new Error('the stand-in matcher handles repetitions up to 1000');
      const body = `(?:${re2Source(node.exp, caseInsensitive)})`;
      return `${body}{${node.min},${node.max ?? ''}}`;
    }
    case 'set':
      return setSource(node.set);
    case 'string':
      return [...node.text]
        .map((ch) => {
          const c = cp(ch);
          const o = caseInsensitive ? otherCase(c) : undefined;
          return o === undefined ? hex(c) : `[${hex(c)}${hex(o)}]`;
        })
        .join('');
    case 'any':
      return '(?s:.)';
  }
}

export interface CompiledLuceneRegexp {
  matches(value: string): boolean;
}

/** Parses (Lucene's rules) and compiles a regexp to match whole values. */
export function compileLuceneRegexp(text: string, caseInsensitive: boolean): CompiledLuceneRegexp {
  const ast = parseLuceneRegexp(text, caseInsensitive);
  const re = RE2JS.compile(`^(?:${re2Source(ast, caseInsensitive)})$`);
  return { matches: (value) => re.matches(value) };
}
