/**
 * Which user patterns a backtracking engine runs without backtracking blow-up. MongoDB evaluates
 * `$regex` with PCRE, which backtracks: `(a+)+$`, `(a|a)*b` or `\d*\d*\d*x` take exponential or
 * high-polynomial time on the right input, and one such match pins a mongod core (maxTimeMS is
 * checked between documents, not inside a match). The service runs every pattern on a
 * linear-time engine itself; only patterns this analysis calls safe are sent to MongoDB.
 *
 * Safe means: at any start position the match never backtracks more than linearly, because every
 * choice the pattern offers is decided by the next character:
 * - a repetition of variable length (`*`, `+`, `?`, `{m,n}`) repeats one character (a literal, a
 *   class, an escape such as `\d`, or `.`) or a fixed sequence of them, and nothing that can come
 *   right after it can start another repetition (`\d+-` and `[a-z]+$` are safe, `.*x` and
 *   `\w+\d` are not: the repetition would have to give characters back);
 * - alternatives followed by more of the pattern start with different characters (`(soil|water)
 *   sample` is safe, `(ab|ac)d` is not); alternatives at the very end may be anything;
 * - no repetition is nested in another, no backreference, lookaround or empty repetition.
 * Anything the parser cannot read the way RE2 does (`parsePattern`), and any character outside
 * the Basic Multilingual Plane, is unsafe. Unsafe is always the cautious answer: the pattern is
 * then evaluated in the service instead of by MongoDB.
 */
import type { AstNode, CharacterClassBody, RootNode } from 'regjsparser';
import { parsePattern, type RegexFlags } from './pattern.ts';

/** A set of UTF-16 code units as sorted, disjoint, inclusive ranges. */
type CharSet = Array<[number, number]>;

const MAX_UNIT = 0xffff;
const ALL: CharSet = [[0, MAX_UNIT]];
const EMPTY: CharSet = [];

function normalize(ranges: CharSet): CharSet {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: CharSet = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

const union = (...sets: CharSet[]): CharSet => normalize(sets.flat());

function complement(set: CharSet): CharSet {
  const out: CharSet = [];
  let next = 0;
  for (const [lo, hi] of normalize(set)) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_UNIT) out.push([next, MAX_UNIT]);
  return out;
}

function intersects(a: CharSet, b: CharSet): boolean {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i]![1] < b[j]![0]) i++;
    else if (b[j]![1] < a[i]![0]) j++;
    else return true;
  }
  return false;
}

const DIGITS: CharSet = [[0x30, 0x39]];
const WORD: CharSet = normalize([
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
]);
// PCRE's \s: space, \t, \n, \v, \f, \r.
const SPACE: CharSet = normalize([
  [0x09, 0x0d],
  [0x20, 0x20],
]);

function escapeSet(value: 'd' | 'D' | 'w' | 'W' | 's' | 'S'): CharSet {
  const base = value.toLowerCase() === 'd' ? DIGITS : value.toLowerCase() === 'w' ? WORD : SPACE;
  return value === value.toUpperCase() ? complement(base) : base;
}

/**
 * With case-insensitive matching every cased character also stands for its other cases. Ranges
 * are widened by each character's simple case mappings, and any range reaching beyond ASCII by
 * every cased character there is (cautious: sets only grow).
 */
function caseFolded(set: CharSet): CharSet {
  const extra: CharSet = [];
  for (const [lo, hi] of set) {
    if (hi > 0x7f) {
      extra.push([0x41, 0x5a], [0x61, 0x7a], [0x80, MAX_UNIT]);
      continue;
    }
    for (let c = lo; c <= hi; c++) {
      const ch = String.fromCharCode(c);
      for (const other of [ch.toLowerCase(), ch.toUpperCase()]) {
        const code = other.charCodeAt(0);
        if (other.length === 1 && code !== c) extra.push([code, code]);
      }
    }
  }
  return union(set, extra);
}

function classBodySet(item: CharacterClassBody): CharSet | undefined {
  switch (item.type) {
    case 'value':
      return [[item.codePoint, item.codePoint]];
    case 'characterClassRange':
      return [[item.min.codePoint, item.max.codePoint]];
    case 'characterClassEscape':
      return escapeSet(item.value);
    case 'unicodePropertyEscape':
    default:
      return undefined;
  }
}

class Unsafe extends Error {}

/** What can start a match of a node, and whether it can match the empty string. */
interface Start {
  first: CharSet;
  nullable: boolean;
}

class Analysis {
  constructor(private readonly flags: RegexFlags) {}

  /** The characters a single-character atom matches; undefined when the node is not one. */
  atomSet(node: AstNode): CharSet | undefined {
    let set: CharSet | undefined;
    if (node.type === 'value') {
      if (node.codePoint > MAX_UNIT) throw new Unsafe();
      set = [[node.codePoint, node.codePoint]];
    } else if (node.type === 'characterClassEscape') set = escapeSet(node.value);
    else if (node.type === 'dot') set = ALL;
    else if (node.type === 'characterClass') {
      if (node.kind !== 'union') throw new Unsafe();
      const parts = node.body.map(classBodySet);
      if (parts.some((p) => p === undefined)) throw new Unsafe();
      set = union(...(parts as CharSet[]));
      // A negated class excludes every case of its members (and is closed under case already).
      if (node.negative) return complement(this.flags.ignoreCase ? caseFolded(set) : set);
    } else return undefined;
    return this.flags.ignoreCase ? caseFolded(set) : set;
  }

  start(node: AstNode): Start {
    const atom = this.atomSet(node);
    if (atom) return { first: atom, nullable: false };
    switch (node.type) {
      case 'anchor':
        return { first: EMPTY, nullable: true };
      case 'alternative':
        return this.startOfSequence(node.body);
      case 'disjunction': {
        const starts = node.body.map((alt) => this.start(alt));
        return { first: union(...starts.map((s) => s.first)), nullable: starts.some((s) => s.nullable) };
      }
      case 'group':
        return this.startOfSequence(node.body);
      case 'quantifier': {
        const inner = this.start(node.body[0]!);
        return { first: inner.first, nullable: node.min === 0 || inner.nullable };
      }
      case 'characterClass':
      case 'characterClassEscape':
      case 'characterClassRange':
      case 'dot':
      case 'reference':
      case 'value':
      default:
        throw new Unsafe();
    }
  }

  startOfSequence(body: AstNode[]): Start {
    const firsts: CharSet[] = [];
    for (const item of body) {
      const s = this.start(item);
      firsts.push(s.first);
      if (!s.nullable) return { first: union(...firsts), nullable: false };
    }
    return { first: union(...firsts), nullable: true };
  }

  /** A fixed sequence of single-character atoms (what a variable repetition may repeat). */
  isFixedSequence(node: AstNode): boolean {
    if (this.atomSet(node)) return true;
    if (node.type === 'group' && node.behavior === 'normal')
      return this.isFixedSequence(groupBody(node.body));
    if (node.type === 'group' && node.behavior === 'ignore')
      return this.isFixedSequence(groupBody(node.body));
    if (node.type === 'alternative') return node.body.length > 0 && node.body.every((n) => this.atomSet(n));
    return false;
  }

  /** Checks a node given the characters that can come right after it (`follow`). */
  check(node: AstNode, follow: CharSet): void {
    if (this.atomSet(node)) return;
    switch (node.type) {
      case 'anchor':
        return;
      case 'alternative':
        this.checkSequence(node.body, follow);
        return;
      case 'group':
        if (node.behavior !== 'normal' && node.behavior !== 'ignore') throw new Unsafe();
        this.checkSequence(node.body, follow);
        return;
      case 'disjunction': {
        const alternatives = node.body;
        if (follow.length > 0) {
          // Something follows: a failure there comes back here, so at most one alternative may
          // be able to start at any position, and none may match the empty string.
          const starts = alternatives.map((alt) => this.start(alt));
          if (starts.some((s) => s.nullable)) throw new Unsafe();
          for (let i = 0; i < starts.length; i++)
            for (let j = i + 1; j < starts.length; j++)
              if (intersects(starts[i]!.first, starts[j]!.first)) throw new Unsafe();
        }
        for (const alt of alternatives) this.check(alt, follow);
        return;
      }
      case 'quantifier': {
        const body = node.body[0]!;
        if (node.max === node.min) {
          // A fixed count: each repetition is followed by the next one or by what follows.
          this.check(body, union(this.start(body).first, follow));
          return;
        }
        if (!this.isFixedSequence(body)) throw new Unsafe();
        if (intersects(this.start(body).first, follow)) throw new Unsafe();
        return;
      }
      case 'characterClass':
      case 'characterClassEscape':
      case 'characterClassRange':
      case 'dot':
      case 'reference':
      case 'value':
      default:
        throw new Unsafe();
    }
  }

  checkSequence(body: AstNode[], follow: CharSet): void {
    let after = follow;
    for (let i = body.length - 1; i >= 0; i--) {
      const item = body[i]!;
      this.check(item, after);
      const s = this.start(item);
      after = s.nullable ? union(s.first, after) : s.first;
    }
  }
}

/** A group's body as one node (regjsparser gives a list: one disjunction, or the sequence's items). */
function groupBody(body: RootNode[]): AstNode {
  if (body.length === 1) return body[0]!;
  return { type: 'alternative', body, range: [0, 0], raw: '' } as AstNode;
}

/**
 * Whether a backtracking engine (MongoDB's PCRE) runs the pattern without backtracking blow-up
 * (see the top of the file). Never throws for syntax: an unreadable pattern is unsafe.
 */
export function safeOnBacktrackingEngine(pattern: string, options = ''): boolean {
  let parsed;
  try {
    parsed = parsePattern(pattern, options);
  } catch {
    return false;
  }
  if (!parsed.ok) return false;
  // The parser reads UTF-16 code units; MongoDB reads code points. Characters outside the Basic
  // Multilingual Plane would be read differently: cautious.
  if (/[\uD800-\uDFFF]/.test(pattern)) return false;
  try {
    new Analysis(parsed.flags).check(parsed.ast as AstNode, EMPTY);
    return true;
  } catch (err) {
    if (err instanceof Unsafe) return false;
    throw err;
  }
}
