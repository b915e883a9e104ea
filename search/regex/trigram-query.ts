/**
 * A regular expression as a boolean query over trigrams, after Russ Cox, "Regular Expression
 * Matching with a Trigram Index" (2012): every string the regex matches satisfies the query, so
 * records whose values fail it can be skipped without running the regex.
 *
 * Atoms are required substrings of three or more characters (a substring stands for the AND of
 * its trigrams; substring engines such as FTS5 `trigram` can use it whole). Everything is
 * lowercase: the index is queried case-insensitively, which is a superset for case-sensitive
 * patterns too.
 */
import type { AstNode, RootNode } from 'regjsparser';
import { parsePattern, regexFlagsOf } from './pattern.ts';

export type TrigramQuery =
  { op: 'all' } | { op: 'none' } | { op: 'and' | 'or'; atoms: string[]; subs: TrigramQuery[] };

export const ALL: TrigramQuery = { op: 'all' };
export const NONE: TrigramQuery = { op: 'none' };

const MAX_EXACT = 7;
const MAX_SET = 20;
/** Largest character class expanded into its members (bigger ones are "any character"). */
const MAX_CLASS = 10;

function key(q: TrigramQuery): string {
  return JSON.stringify(q);
}

function combine(op: 'and' | 'or', parts: TrigramQuery[]): TrigramQuery {
  const atoms = new Set<string>();
  const subs = new Map<string, TrigramQuery>();
  for (const p of parts) {
    if (p.op === 'all') {
      if (op === 'or') return ALL;
      continue;
    }
    if (p.op === 'none') {
      if (op === 'and') return NONE;
      continue;
    }
    if (p.op === op) {
      for (const a of p.atoms) atoms.add(a);
      for (const s of p.subs) subs.set(key(s), s);
    } else if (p.atoms.length === 1 && p.subs.length === 0) {
      atoms.add(p.atoms[0]!);
    } else {
      subs.set(key(p), p);
    }
  }
  if (op === 'and') {
    // An atom that contains another makes the shorter one redundant under AND.
    for (const a of [...atoms]) {
      for (const b of atoms) if (a !== b && b.includes(a)) atoms.delete(a);
    }
  } else {
    for (const a of [...atoms]) {
      for (const b of atoms) if (a !== b && a.includes(b)) atoms.delete(a);
    }
  }
  if (atoms.size === 0 && subs.size === 0) return op === 'and' ? ALL : NONE;
  if (atoms.size === 0 && subs.size === 1) return [...subs.values()][0]!;
  return { op, atoms: [...atoms].sort(), subs: [...subs.values()] };
}

export const and = (...parts: TrigramQuery[]) => combine('and', parts);
export const or = (...parts: TrigramQuery[]) => combine('or', parts);

/** The AND of `q` and "one of these strings occurs", when every string is long enough to help. */
function andStrings(q: TrigramQuery, strings: Set<string>): TrigramQuery {
  if (strings.size === 0) return q;
  for (const s of strings) if ([...s].length < 3) return q;
  return and(q, or(...[...strings].map((s) => ({ op: 'and' as const, atoms: [s], subs: [] }))));
}

interface Info {
  canEmpty: boolean;
  /** Every match is exactly one of these strings (null: unknown). */
  exact: Set<string> | null;
  /** Every match starts with one of these. */
  prefix: Set<string>;
  /** Every match ends with one of these. */
  suffix: Set<string>;
  match: TrigramQuery;
}

const emptyString = (): Info => ({
  canEmpty: true,
  exact: new Set(['']),
  prefix: new Set(),
  suffix: new Set(),
  match: ALL,
});
const anyChar = (): Info => ({
  canEmpty: false,
  exact: null,
  prefix: new Set(['']),
  suffix: new Set(['']),
  match: ALL,
});
const anyMatch = (): Info => ({
  canEmpty: true,
  exact: null,
  prefix: new Set(['']),
  suffix: new Set(['']),
  match: ALL,
});
const noMatch = (): Info => ({
  canEmpty: false,
  exact: null,
  prefix: new Set(),
  suffix: new Set(),
  match: NONE,
});

function cross(a: Set<string>, b: Set<string>): Set<string> {
  const out = new Set<string>();
  for (const x of a) for (const y of b) out.add(x + y);
  return out;
}

const union = (a: Set<string>, b: Set<string>) => new Set([...a, ...b]);
const minLength = (s: Set<string>) => Math.min(...[...s].map((x) => [...x].length));

function addExact(info: Info): void {
  if (info.exact) info.match = andStrings(info.match, info.exact);
}

function simplifySet(info: Info, set: Set<string>, isSuffix: boolean): Set<string> {
  info.match = andStrings(info.match, set);
  let t = set;
  // Keep only the last (or first) two characters, then fewer while the set is too large.
  for (let n = 2; n === 2 || (t.size > MAX_SET && n >= 0); n--) {
    const next = new Set<string>();
    for (const s of t) {
      const chars = [...s];
      next.add(
        chars.length >= n ? (isSuffix ? chars.slice(chars.length - n) : chars.slice(0, n)).join('') : s,
      );
    }
    t = next;
  }
  return t;
}

function simplify(info: Info, force: boolean): void {
  const exact = info.exact;
  // Unlike the original, long exact strings are kept (the set stays small): whole substrings are
  // more selective in FTS5 than their trigrams taken apart.
  if (exact && (exact.size > MAX_EXACT || (minLength(exact) >= 3 && force))) {
    addExact(info);
    for (const s of exact) {
      const chars = [...s];
      if (chars.length < 3) {
        info.prefix.add(s);
        info.suffix.add(s);
      } else {
        info.prefix.add(chars.slice(0, 2).join(''));
        info.suffix.add(chars.slice(-2).join(''));
      }
    }
    info.exact = null;
  }
  if (!info.exact) {
    info.prefix = simplifySet(info, info.prefix, false);
    info.suffix = simplifySet(info, info.suffix, true);
  }
}

function concat(x: Info, y: Info): Info {
  const xy: Info = {
    canEmpty: x.canEmpty && y.canEmpty,
    exact: null,
    prefix: new Set(),
    suffix: new Set(),
    match: and(x.match, y.match),
  };
  if (x.exact && y.exact) {
    xy.exact = cross(x.exact, y.exact);
  } else {
    if (x.exact) xy.prefix = cross(x.exact, y.prefix);
    else xy.prefix = x.canEmpty ? union(x.prefix, y.prefix) : new Set(x.prefix);
    if (y.exact) xy.suffix = cross(x.suffix, y.exact);
    else xy.suffix = y.canEmpty ? union(y.suffix, x.suffix) : new Set(y.suffix);
  }
  // Strings that span the boundary between x and y must occur too.
  if (
    !x.exact &&
    !y.exact &&
    x.suffix.size <= MAX_SET &&
    y.prefix.size <= MAX_SET &&
    x.suffix.size > 0 &&
    y.prefix.size > 0
  ) {
    if (minLength(x.suffix) + minLength(y.prefix) >= 3)
      xy.match = andStrings(xy.match, cross(x.suffix, y.prefix));
  }
  simplify(xy, false);
  return xy;
}

function alternate(x: Info, y: Info): Info {
  const xy: Info = {
    canEmpty: x.canEmpty || y.canEmpty,
    exact: null,
    prefix: new Set(),
    suffix: new Set(),
    match: ALL,
  };
  if (x.exact && y.exact) {
    xy.exact = union(x.exact, y.exact);
  } else if (x.exact) {
    xy.prefix = union(x.exact, y.prefix);
    xy.suffix = union(x.exact, y.suffix);
    addExact(x);
  } else if (y.exact) {
    xy.prefix = union(x.prefix, y.exact);
    xy.suffix = union(x.suffix, y.exact);
    addExact(y);
  } else {
    xy.prefix = union(x.prefix, y.prefix);
    xy.suffix = union(x.suffix, y.suffix);
  }
  xy.match = or(x.match, y.match);
  simplify(xy, false);
  return xy;
}

/** A character as the index sees it, or null when case folding could make JS and SQLite disagree. */
function foldedChar(codePoint: number): string | null {
  if (codePoint > 0xffff) return null;
  const c = String.fromCodePoint(codePoint);
  const lower = c.toLowerCase();
  if (codePoint > 0x7f && lower !== c.toUpperCase()) return null;
  if (lower.length !== 1) return null;
  return lower;
}

/** A character as a case-sensitive regex matches it, or null for one outside the BMP or a surrogate. */
function exactChar(codePoint: number): string | null {
  if (codePoint > 0xffff || (codePoint >= 0xd800 && codePoint <= 0xdfff)) return null;
  return String.fromCharCode(codePoint);
}

type CharOf = (codePoint: number) => string | null;

function charSet(chars: Iterable<number>, charOf: CharOf): Info {
  const set = new Set<string>();
  for (const cp of chars) {
    const c = charOf(cp);
    if (c === null) return anyChar();
    set.add(c);
    if (set.size > MAX_CLASS) return anyChar();
  }
  if (set.size === 0) return noMatch();
  return { canEmpty: false, exact: set, prefix: new Set(), suffix: new Set(), match: ALL };
}

function classMembers(node: AstNode<any>): number[] | null {
  if (node.type !== 'characterClass' || node.negative) return null;
  const out: number[] = [];
  for (const item of node.body) {
    if (item.type === 'value') out.push(item.codePoint);
    else if (item.type === 'characterClassRange') {
      if (item.max.codePoint - item.min.codePoint > MAX_CLASS) return null;
      for (let c = item.min.codePoint; c <= item.max.codePoint; c++) out.push(c);
    } else if (item.type === 'characterClassEscape' && item.value === 'd') {
      for (let c = 0x30; c <= 0x39; c++) out.push(c);
    } else return null;
    if (out.length > MAX_CLASS * 4) return null;
  }
  return out;
}

function sequence(nodes: RootNode<any>[], charOf: CharOf): Info {
  let info = emptyString();
  for (const n of nodes) info = concat(info, analyze(n, charOf));
  return info;
}

function repeat(x: Info, min: number, max: number | undefined): Info {
  if (max === 0) return emptyString();
  if (min === 0) return max === 1 ? alternate(x, emptyString()) : anyMatch();
  if (min === max && min <= 3 && x.exact) {
    let info = x;
    for (let i = 1; i < min; i++) info = concat(info, x);
    return info;
  }
  // At least one x: prefixes and suffixes stay; exactness is lost.
  const info: Info = { ...x, prefix: new Set(x.prefix), suffix: new Set(x.suffix) };
  if (x.exact) {
    info.prefix = new Set(x.exact);
    info.suffix = new Set(x.exact);
    info.exact = null;
  }
  simplify(info, false);
  return info;
}

function analyze(node: RootNode<any>, charOf: CharOf): Info {
  switch (node.type) {
    case 'value':
      return charSet([node.codePoint], charOf);
    case 'dot':
    case 'unicodePropertyEscape':
      return anyChar();
    case 'characterClassEscape':
      return node.value === 'd'
        ? charSet([0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39], charOf)
        : anyChar();
    case 'characterClass': {
      const members = classMembers(node);
      return members ? charSet(members, charOf) : anyChar();
    }
    case 'anchor':
      return emptyString();
    case 'alternative':
      return sequence(node.body, charOf);
    case 'disjunction': {
      let info = analyze(node.body[0]!, charOf);
      for (const b of node.body.slice(1)) info = alternate(info, analyze(b, charOf));
      return info;
    }
    case 'group':
      // Lookarounds only constrain; dropping them keeps a superset.
      return node.behavior === 'normal' || node.behavior === 'ignore'
        ? sequence(node.body, charOf)
        : emptyString();
    case 'quantifier':
      return repeat(analyze(node.body[0]!, charOf), node.min, node.max);
    case 'reference':
    default:
      return anyMatch();
  }
}

/** Analyses kept (a plan and each search of a page ask for the same pattern's). */
const ANALYSES_KEPT = 500;
const analyses = new Map<string, TrigramQuery>();

/**
 * The trigram query every value matched by `pattern` (with `$options`) satisfies. Remembered for
 * the last ANALYSES_KEPT patterns: callers only read the query.
 *
 * With `keepCase`, a pattern without the `i` option keeps its letters' case: each atom is then a
 * substring of every match as written (a test of stored text, not of the case-folded index).
 */
export function trigramQueryOf(pattern: string, options = '', keepCase = false): TrigramQuery {
  const exact = keepCase && !regexFlagsOf(options).ignoreCase;
  const key = `${exact ? 'c' : 'f'}${options}\u0000${pattern}`;
  let query = analyses.get(key);
  if (query !== undefined) analyses.delete(key);
  else query = analyzePattern(pattern, options, exact ? exactChar : foldedChar);
  analyses.set(key, query);
  if (analyses.size > ANALYSES_KEPT) analyses.delete(analyses.keys().next().value!);
  return query;
}

function analyzePattern(pattern: string, options: string, charOf: CharOf): TrigramQuery {
  const parsed = parsePattern(pattern, options);
  if (!parsed.ok) return ALL;
  const info = analyze(parsed.ast, charOf);
  simplify(info, true);
  addExact(info);
  return info.match;
}

/** The distinct trigrams of a value, lowercased as the index stores them. */
export function trigramsOf(value: string): Set<string> {
  const chars = [...value.toLowerCase()];
  const out = new Set<string>();
  for (let i = 0; i + 3 <= chars.length; i++) out.add(chars[i]! + chars[i + 1]! + chars[i + 2]!);
  return out;
}

/** Does a value satisfy the query? Atoms are checked as "all of its trigrams are present". */
export function satisfiesTrigramQuery(query: TrigramQuery, trigrams: Set<string>): boolean {
  switch (query.op) {
    case 'all':
      return true;
    case 'none':
      return false;
    case 'and':
      return (
        query.atoms.every((a) => atomHolds(a, trigrams)) &&
        query.subs.every((s) => satisfiesTrigramQuery(s, trigrams))
      );
    case 'or':
      return (
        query.atoms.some((a) => atomHolds(a, trigrams)) ||
        query.subs.some((s) => satisfiesTrigramQuery(s, trigrams))
      );
  }
}

function atomHolds(atom: string, trigrams: Set<string>): boolean {
  for (const t of trigramsOf(atom)) if (!trigrams.has(t)) return false;
  return true;
}

/** Readable form for logs and tests: `AND("abc" OR("xyz" "uvw"))`. */
export function formatTrigramQuery(q: TrigramQuery): string {
  if (q.op === 'all' || q.op === 'none') return q.op.toUpperCase();
  const parts = [...q.atoms.map((a) => JSON.stringify(a)), ...q.subs.map(formatTrigramQuery)];
  return `${q.op.toUpperCase()}(${parts.join(' ')})`;
}
