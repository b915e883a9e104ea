/**
 * A user regex as a Lucene `regexp` (Elasticsearch) that matches a SUPERSET of the values the
 * regex matches. Lucene regexps match the whole value and lack lookarounds, back-references,
 * word boundaries and shorthand classes, so: unanchored ends get `.*`, shorthands are expanded
 * with their RE2 meaning (the source of truth runs RE2), and anything Lucene cannot say is
 * relaxed (`.*`, `.`, or nothing), never tightened.
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

const DIGITS = '0-9';
const WORD = '0-9A-Za-z_';
const SPACE = '\\t\\n\\f\\r\\ ';

function escapeChar(codePoint: number): string {
  const c = String.fromCodePoint(codePoint);
  if (/[A-Za-z0-9]/.test(c) || codePoint > 0x7f) return c;
  if (c === '\n') return '\\n';
  if (c === '\t') return '\\t';
  if (c === '\r') return '\\r';
  // Lucene reads a backslash followed by any character as that character.
  return `\\${c}`;
}

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
    // Lucene may not fold case inside classes, so a folded class lists both cases itself.
    // (A negated class is left as written: not folding it only widens what it matches.)
    const fold = ctx.ignoreCase && !node.negative;
    if (item.type === 'value') {
      if (fold && item.codePoint > 0x7f) return '.';
      body += escapeChar(item.codePoint);
      if (fold) {
        const c = String.fromCodePoint(item.codePoint);
        const other = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
        if (other !== c) body += escapeChar(other.codePointAt(0)!);
        body += foldExtras(item.codePoint, true);
      }
    } else if (item.type === 'characterClassRange') {
      if (fold && item.max.codePoint > 0x7f) return '.';
      body += `${escapeChar(item.min.codePoint)}-${escapeChar(item.max.codePoint)}`;
      if (fold) body += foldedRange(item.min.codePoint, item.max.codePoint);
    } else if (item.type === 'characterClassEscape') {
      if (item.value === 'd') body += DIGITS;
      else if (item.value === 'w') body += WORD;
      else if (item.value === 's') body += SPACE;
      // A complemented shorthand inside a class cannot be written in Lucene.
      else return '.';
    } else {
      return '.';
    }
  }
  if (body === '') return node.negative ? '.' : '[]';
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
      return literal(node.codePoint, ctx);
    case 'dot':
      return '.';
    case 'characterClass':
      return characterClass(node, ctx);
    case 'characterClassEscape':
      switch (node.value) {
        case 'd':
          return `[${DIGITS}]`;
        case 'D':
          return `[^${DIGITS}]`;
        case 'w':
          return `[${WORD}]`;
        case 'W':
          return `[^${WORD}]`;
        case 's':
          return `[${SPACE}]`;
        default:
          return `[^${SPACE}]`;
      }
    case 'anchor':
      // Anchors that decide the whole value are handled in `luceneRegexpOf`; elsewhere they only constrain.
      return '()';
    case 'alternative':
      return node.body.length === 0 ? '()' : node.body.map((n) => render(n, ctx)).join('');
    case 'disjunction':
      return `(${node.body.map((n) => render(n, ctx)).join('|')})`;
    case 'group':
      if (node.behavior === 'normal' || node.behavior === 'ignore') {
        return `(${node.body.length === 0 ? '' : node.body.map((n) => render(n, ctx)).join('')})`;
      }
      return '()';
    case 'quantifier':
      return `(${render(node.body[0]!, ctx)})${repeatSuffix(node.min, node.max)}`;
    default:
      // Back-references and property escapes.
      return '.*';
  }
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
  const middle = body
    .slice(start, end)
    .map((n) => render(n, ctx))
    .join('');
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
