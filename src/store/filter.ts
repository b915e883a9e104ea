/**
 * The one compiled-filter function: MongoDB query semantics evaluated by mingo, with `$regex`
 * answered by re2js (linear time; patterns come from untrusted users). Every code path that
 * decides whether a record matches a filter goes through `compileFilter`.
 */
import { Context, Query } from 'mingo';
import { RE2JS } from 're2js';
import { UnsupportedQuery } from '../errors.ts';
import type { Filter } from './port.ts';

type Predicate = (doc: Record<string, unknown>) => boolean;

const CACHE_LIMIT = 512;
const patternCache = new Map<string, RE2JS>();

/** PCRE's `x` flag: drop unescaped whitespace and `#` comments outside character classes. */
export function stripExtendedSyntax(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      out += c + (pattern[i + 1] ?? '');
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      // A `]` right after `[` or `[^` is a literal member of the class.
      if (pattern[i + 1] === '^') out += pattern[++i];
      if (pattern[i + 1] === ']') out += pattern[++i];
      continue;
    }
    if (c === '#') {
      while (i < pattern.length && pattern[i] !== '\n') i++;
      continue;
    }
    if (/\s/.test(c)) continue;
    out += c;
  }
  return out;
}

/**
 * PCRE (MongoDB) reads a backslash before any character that is not an ASCII letter or digit as
 * that character itself; RE2 refuses the escape when the character is not ASCII. Clients that
 * escape every non-word character (`25\\ \\°C`) rely on PCRE's reading, so such escapes become
 * the bare character, which is never special.
 */
export function literalNonAsciiEscapes(pattern: string): string {
  if (!/\\[^\x00-\x7f]/.test(pattern)) return pattern;
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const next = pattern.codePointAt(i + 1);
    if (next === undefined) {
      out += c;
      continue;
    }
    const escaped = String.fromCodePoint(next);
    out += next > 0x7f ? escaped : c + escaped;
    i += escaped.length;
  }
  return out;
}

/** The cached value for `key`, or `make()`'s, kept as the most recent of the last CACHE_LIMIT. */
function remembered<T>(cache: Map<string, T>, key: string, make: () => T): T {
  let value = cache.get(key);
  if (value !== undefined) cache.delete(key);
  else value = make();
  cache.set(key, value);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  return value;
}

/** Compiles a user regex with MongoDB `$options` into a linear-time matcher (cached, bounded LRU). */
export function compileRegex(pattern: string, options = ''): RE2JS {
  return remembered(patternCache, `${options}\u0000${pattern}`, () => compileRegexUncached(pattern, options));
}

function compileRegexUncached(pattern: string, options: string): RE2JS {
  let flags = 0;
  let source = pattern;
  for (const flag of options) {
    if (flag === 'i') flags |= RE2JS.CASE_INSENSITIVE;
    else if (flag === 'm') flags |= RE2JS.MULTILINE;
    else if (flag === 's') flags |= RE2JS.DOTALL;
    else if (flag === 'x') source = stripExtendedSyntax(source);
    else if (flag === 'u') continue;
    else
      throw new UnsupportedQuery(`Unsupported $regex option "${flag}"; supported options are i, m, s and x`);
  }
  // After the `x` stripping, which keeps escaped pairs whole (an escaped space stays a space).
  source = literalNonAsciiEscapes(source);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(source, flags);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new UnsupportedQuery(
      `$regex pattern ${JSON.stringify(pattern)} is not supported: ${why}. ` +
        'Patterns run on a linear-time engine: lookaround and backreferences are not available.',
    );
  }
  return compiled;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof RegExp);
}

/** Regexes match strings, and strings inside arrays (one level), as MongoDB does. */
function regexMatches(value: unknown, re: RE2JS): boolean {
  if (typeof value === 'string') return re.test(value);
  if (Array.isArray(value)) return value.some((v) => typeof v === 'string' && re.test(v));
  return false;
}

const RE2_OPERATOR = '$re2Match';

/** Resolves a dotted path with MongoDB traversal, collecting every value reached (arrays kept whole). */
function valuesAt(doc: unknown, segments: string[], index: number, out: unknown[]): void {
  if (index === segments.length) {
    out.push(doc);
    return;
  }
  if (Array.isArray(doc)) {
    const seg = segments[index]!;
    if (/^\d+$/.test(seg)) valuesAt(doc[Number(seg)], segments, index + 1, out);
    for (const el of doc) if (isPlainObject(el)) valuesAt(el, segments, index, out);
    return;
  }
  if (isPlainObject(doc)) {
    const next = doc[segments[index]!];
    if (next !== undefined) valuesAt(next, segments, index + 1, out);
  }
}

const re2Operator = (selector: string, value: unknown) => {
  const re = value as RE2JS;
  const segments = selector.split('.');
  return (obj: Record<string, unknown>) => {
    const found: unknown[] = [];
    valuesAt(obj, segments, 0, found);
    return found.some((v) => regexMatches(v, re));
  };
};

/** The query operator that tests a compiled re2js pattern, for mingo contexts. */
export const RE2_QUERY_OPERATORS = { [RE2_OPERATOR]: re2Operator };

type Scalar = string | number | boolean;
const isScalar = (v: unknown): v is Scalar =>
  typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean';

/**
 * Lists from which `$in` and `$nin` of plain values test a Set built once per filter. mingo
 * builds a hash of the list for every record it tests: a find of 5,000 ids by `$in` among their
 * 5,000 records took 49 s.
 */
const SET_FROM = 16;
const IN_SET_OPERATOR = '$inSet';
const NIN_SET_OPERATOR = '$ninSet';

/**
 * `$in` over a Set of strings, numbers and booleans, as MongoDB tests it: a value at the path (any
 * of them, through arrays of objects) that is one of them, or an array holding one.
 */
const inSetOperator = (selector: string, value: unknown) => {
  const set = value as Set<Scalar>;
  const segments = selector.split('.');
  return (obj: Record<string, unknown>) => {
    const found: unknown[] = [];
    valuesAt(obj, segments, 0, found);
    return found.some((v) => (Array.isArray(v) ? v.some((e) => set.has(e as Scalar)) : set.has(v as Scalar)));
  };
};

const SET_QUERY_OPERATORS = {
  [IN_SET_OPERATOR]: inSetOperator,
  // MongoDB's $nin: no value at the path is one of them (a missing path matches).
  [NIN_SET_OPERATOR]: (selector: string, value: unknown) => {
    const test = inSetOperator(selector, value);
    return (obj: Record<string, unknown>) => !test(obj);
  },
};

const context = Context.init().addQueryOps({
  ...RE2_QUERY_OPERATORS,
  ...SET_QUERY_OPERATORS,
} as unknown as Parameters<Context['addQueryOps']>[0]);

/** A field's operators with each long `$in` or `$nin` of plain values made a Set operator. */
function fieldOperatorsWithSets(ops: Record<string, unknown>): Record<string, unknown> {
  // An object that is not all operators is a value the field must equal.
  if (!Object.keys(ops).every((k) => k.startsWith('$'))) return ops;
  const out: Record<string, unknown> = {};
  for (const [op, operand] of Object.entries(ops)) {
    if (
      (op === '$in' || op === '$nin') &&
      Array.isArray(operand) &&
      operand.length >= SET_FROM &&
      operand.every(isScalar)
    )
      out[op === '$in' ? IN_SET_OPERATOR : NIN_SET_OPERATOR] = new Set(operand);
    else if (op === '$not' && isPlainObject(operand)) out[op] = fieldOperatorsWithSets(operand);
    else out[op] = operand;
  }
  return out;
}

/** The filter with long `$in` and `$nin` lists of its fields (and of `$and`, `$or`, `$nor` clauses) as Sets. */
function withInSets(filter: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(filter)) {
    if ((key === '$and' || key === '$or' || key === '$nor') && Array.isArray(value))
      out[key] = value.map((clause) => (isPlainObject(clause) ? withInSets(clause) : clause));
    else if (!key.startsWith('$') && isPlainObject(value)) out[key] = fieldOperatorsWithSets(value);
    else out[key] = value;
  }
  return out;
}

/** Rewrites `{$regex, $options}` (at any depth: $not, $elemMatch, $and/$or/$nor) to the re2js operator. */
export function rewriteRegexes(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRegexes);
  if (!isPlainObject(node)) return node;
  const out: Record<string, unknown> = {};
  const hasRegex = '$regex' in node;
  for (const [key, value] of Object.entries(node)) {
    if (key === '$options') {
      if (!hasRegex) throw new UnsupportedQuery('$options needs a $regex beside it');
      continue;
    }
    if (key === '$regex') {
      if (typeof value !== 'string') {
        throw new UnsupportedQuery('$regex must be a string');
      }
      const options = node.$options;
      if (options !== undefined && typeof options !== 'string') {
        throw new UnsupportedQuery('$options must be a string');
      }
      out[RE2_OPERATOR] = compileRegex(value, options ?? '');
      continue;
    }
    out[key] = rewriteRegexes(value);
  }
  return out;
}

/** Throws UnsupportedQuery when a filter holds a regex the linear-time engine cannot run. */
export function assertRegexesSupported(filter: Filter): void {
  rewriteRegexes(filter);
}

const predicateCache = new Map<string, Predicate>();

/**
 * Compiles a MongoDB filter into a predicate over plain records. Filters are JSON data, so their
 * JSON text identifies them: the last CACHE_LIMIT compiled predicates are kept (building a
 * mingo query costs more than testing a page of records with it).
 */
export function compileFilter(filter: Filter): Predicate {
  if (Object.keys(filter).length === 0) return () => true;
  return remembered(predicateCache, JSON.stringify(filter), () => {
    const query = new Query(withInSets(rewriteRegexes(filter) as Record<string, unknown>), {
      context,
      idKey: 'id',
      useStrictMode: true,
    });
    return (doc: Record<string, unknown>) => query.test(doc);
  });
}
