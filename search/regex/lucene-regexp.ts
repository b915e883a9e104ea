/**
 * A user regex as a Lucene `regexp` (Elasticsearch) that matches a SUPERSET of the values the
 * regex matches. Lucene regexps match the whole value and lack lookarounds, back-references and
 * word boundaries, so: unanchored ends get `.*`, shorthands get their RE2 meaning (the source of
 * truth runs RE2), and anything Lucene cannot say is relaxed (`.*`, `.`, or nothing), never
 * tightened.
 *
 * The output is valid in Lucene 9's syntax (Elasticsearch 8): Lucene refuses a backslash before
 * any letter but d, D, s, S, w, W ("invalid character class"), so control characters are written
 * as themselves, never as `\t` or `\n`; its `\d`, `\D`, `\w` and `\W` mean what RE2's do, but
 * its `\s` lacks the form feed, so RE2's `\s` is spelled out.
 */
import type { AstNode, RootNode } from 'regjsparser';
import { parsePattern } from './pattern.ts';

export interface LuceneRegexp {
  regexp: string;
  caseInsensitive: boolean;
}

/** Repetition bounds above this become `*` (a superset) to keep Lucene's automaton small. */
const MAX_REPEAT = 32;

const MATCH_ANYTHING: LuceneRegexp = { regexp: '.*', caseInsensitive: false };

/** RE2's `\s`: tab, newline, form feed, carriage return, space (written as themselves). */
const SPACE = '\t\n\f\r ';
/** Under RE2 case folding `\w` also matches the Kelvin sign and the long s; Lucene's `\w` does not. */
const FOLDED_WORD_EXTRAS = '\u212a\u017f';

/**
 * A literal character. ASCII letters, digits, anything beyond ASCII and the control characters
 * stand for themselves; other ASCII characters may be Lucene operators and get a backslash
 * (a backslash before anything but a letter is that character).
 */
function escapeChar(codePoint: number): string {
  const c = String.fromCodePoint(codePoint);
  if (/[A-Za-z0-9]/.test(c) || codePoint > 0x7f || codePoint < 0x20 || codePoint === 0x7f) return c;
  return `\\${c}`;
}

const isSurrogate = (codePoint: number) => codePoint >= 0xd800 && codePoint <= 0xdfff;
const isHighSurrogate = (codePoint: number) => codePoint >= 0xd800 && codePoint <= 0xdbff;
const isLowSurrogate = (codePoint: number) => codePoint >= 0xdc00 && codePoint <= 0xdfff;

/** Under RE2 case folding `k` and `s` also match the Kelvin sign and the long s; Lucene folds ASCII only. */
function foldExtras(codePoint: number, ignoreCase: boolean): string {
  if (!ignoreCase) return '';
  const c = String.fromCodePoint(codePoint).toLowerCase();
  if (c === 'k') return '\u212a';
  if (c === 's') return '\u017f';
  return '';
}

/** The other-case counterpart of an ASCII range under case folding (empty when it has no letters). */
function foldedRange(min: number, max: number): string {
  const lower = (c: number) => c >= 0x61 && c <= 0x7a;
  const upper = (c: number) => c >= 0x41 && c <= 0x5a;
  const extras = min <= 0x73 && max >= 0x6b ? '\u212a\u017f' : '';
  if (lower(min) && lower(max))
    return `${String.fromCharCode(min - 32)}-${String.fromCharCode(max - 32)}${extras}`;
  if (upper(min) && upper(max))
    return `${String.fromCharCode(min + 32)}-${String.fromCharCode(max + 32)}\u212a\u017f`;
  return min <= 0x7a && max >= 0x41 ? 'A-Za-z\u212a\u017f' : '';
}

interface Context {
  ignoreCase: boolean;
}

function literal(codePoint: number, ctx: Context): string {
  const c = String.fromCodePoint(codePoint);
  // Lucene's case-insensitive flag covers ASCII only; other cased letters match any character.
  if (ctx.ignoreCase && codePoint > 0x7f && c.toLowerCase() !== c.toUpperCase()) return '.';
  const extra = foldExtras(codePoint, ctx.ignoreCase);
  return extra ? `[${c.toLowerCase()}${c.toUpperCase()}${extra}]` : escapeChar(codePoint);
}

function characterClass(node: Extract<AstNode<any>, { type: 'characterClass' }>, ctx: Context): string {
  let body = '';
  for (const item of node.body) {
    // Lucene does not fold ranges, so a folded class lists both cases itself. (A negated class is
    // left as written: not folding it only widens what it matches.) In a negated class every
    // member must match no more than its RE2 meaning, elsewhere no less.
    const fold = ctx.ignoreCase && !node.negative;
    if (item.type === 'value') {
      // Surrogate halves (a pattern read without the `u` flag) are not characters to Lucene.
      if (isSurrogate(item.codePoint) || (fold && item.codePoint > 0x7f)) return '.';
      body += escapeChar(item.codePoint);
      if (fold) {
        const c = String.fromCodePoint(item.codePoint);
        const other = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
        if (other !== c) body += escapeChar(other.codePointAt(0)!);
        body += foldExtras(item.codePoint, true);
      }
    } else if (item.type === 'characterClassRange') {
      if (isSurrogate(item.min.codePoint) || isSurrogate(item.max.codePoint)) return '.';
      if (fold && item.max.codePoint > 0x7f) return '.';
      body += `${escapeChar(item.min.codePoint)}-${escapeChar(item.max.codePoint)}`;
      if (fold) body += foldedRange(item.min.codePoint, item.max.codePoint);
    } else if (item.type === 'characterClassEscape') {
      if (item.value === 's') body += SPACE;
      else if (item.value === 'w') body += `\\w${fold ? FOLDED_WORD_EXTRAS : ''}`;
      else if (item.value === 'd' || item.value === 'D' || item.value === 'W') body += `\\${item.value}`;
      // Lucene's `\S` also matches a form feed: more than RE2's, so only outside a negated class.
      else if (!node.negative) body += '\\S';
      else return '.';
    } else {
      return '.';
    }
  }
  // `[]` is not an empty class to Lucene; a class that matches nothing is relaxed to any character.
  if (body === '') return '.';
  return `[${node.negative ? '^' : ''}${body}]`;
}

function repeatSuffix(min: number, max: number | undefined): string {
  if (max === undefined) return min === 0 ? '*' : min === 1 ? '+' : min > MAX_REPEAT ? '*' : `{${min},}`;
  if (min === 0 && max === 1) return '?';
  if (max > MAX_REPEAT) return '*';
  return min === max ? `{${min}}` : `{${min},${max}}`;
}

function render(node: RootNode<any>, ctx: Context): string {
  switch (node.type) {
    case 'value':
      // A surrogate half on its own (a pattern read without the `u` flag) is no character to
      // Lucene; whole pairs are joined in `sequence`.
      return isSurrogate(node.codePoint) ? '.*' : literal(node.codePoint, ctx);
    case 'dot':
      return '.';
    case 'characterClass':
      return characterClass(node, ctx);
    case 'characterClassEscape':
      switch (node.value) {
        case 'w':
          return ctx.ignoreCase ? `[\\w${FOLDED_WORD_EXTRAS}]` : '\\w';
        case 's':
          return `[${SPACE}]`;
        case 'S':
          return `[^${SPACE}]`;
        case 'd':
        case 'D':
        case 'W':
          // The same ASCII classes in both.
          return `\\${node.value}`;
      }
    case 'anchor':
      // Anchors that decide the whole value are handled in `luceneRegexpOf`; elsewhere they only constrain.
      return '()';
    case 'alternative':
      return node.body.length === 0 ? '()' : sequence(node.body, ctx);
    case 'disjunction':
      return `(${node.body.map((n) => render(n, ctx)).join('|')})`;
    case 'group':
      if (node.behavior === 'normal' || node.behavior === 'ignore') {
        return `(${sequence(node.body, ctx)})`;
      }
      return '()';
    case 'quantifier':
      return `(${render(node.body[0]!, ctx)})${repeatSuffix(node.min, node.max)}`;
    case 'reference':
    case 'unicodePropertyEscape':
      // Back-references and property escapes.
      return '.*';
  }
}

/** Renders nodes one after the other, a surrogate pair's two halves as one character. */
function sequence(nodes: RootNode<any>[], ctx: Context): string {
  let out = '';
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i]!;
    const next = nodes[i + 1];
    if (
      node.type === 'value' &&
      isHighSurrogate(node.codePoint) &&
      next?.type === 'value' &&
      isLowSurrogate(next.codePoint)
    ) {
      const pair = String.fromCharCode(node.codePoint, next.codePoint);
      out += literal(pair.codePointAt(0)!, ctx);
      i++;
    } else out += render(node, ctx);
  }
  return out;
}

function topLevelAlternative(body: RootNode<any>[], ctx: Context, multiline: boolean): string {
  let start = 0;
  let end = body.length;
  let anchoredStart = false;
  let anchoredEnd = false;
  if (!multiline) {
    while (start < end && body[start]!.type === 'anchor' && (body[start] as any).kind === 'start') {
      anchoredStart = true;
      start++;
    }
    while (end > start && body[end - 1]!.type === 'anchor' && (body[end - 1] as any).kind === 'end') {
      anchoredEnd = true;
      end--;
    }
  }
  const middle = sequence(body.slice(start, end), ctx);
  return `${anchoredStart ? '' : '.*'}${middle === '' ? '()' : middle}${anchoredEnd ? '' : '.*'}`;
}

/** True when a regexp constrains nothing but length (no literal, no class): useless for narrowing. */
export function constrainsOnlyLength(regexp: string): boolean {
  return /^[.*()+?|]*$/.test(regexp);
}

/** The Lucene regexp for `pattern` with `$options`; `.*` when the pattern cannot be analysed. */
export function luceneRegexpOf(pattern: string, options = ''): LuceneRegexp {
  const parsed = parsePattern(pattern, options);
  if (!parsed.ok) return MATCH_ANYTHING;
  const ctx: Context = { ignoreCase: parsed.flags.ignoreCase };
  const multiline = parsed.flags.multiline;
  const ast = parsed.ast;
  const alternatives = ast.type === 'disjunction' ? ast.body : [ast];
  const rendered = alternatives.map((alt) =>
    topLevelAlternative(alt.type === 'alternative' ? alt.body : [alt], ctx, multiline),
  );
  const regexp = rendered.length === 1 ? rendered[0]! : rendered.map((r) => `(${r})`).join('|');
  return { regexp, caseInsensitive: ctx.ignoreCase };
}
