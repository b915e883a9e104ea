/**
 * Which parts of a MongoDB filter the search index can narrow. A filter is an AND of
 * conjuncts; a conjunct is either one indexable predicate or an OR of branches that are each
 * an AND of indexable predicates. Everything else (`$nor`, `$not`, comparisons, ...) is left to
 * the source of truth, which evaluates the whole original filter anyway.
 */
import type { Filter } from '../src/store/port.ts';
import type { IndexablePredicate } from './port.ts';
import { assertPatternLength } from './regex/pattern.ts';

export type Conjunct =
  { kind: 'predicate'; predicate: IndexablePredicate } | { kind: 'or'; branches: Conjunct[][] };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function regexPredicate(path: string, operand: Record<string, unknown>): IndexablePredicate | null {
  if (typeof operand.$regex !== 'string') return null;
  const flags = typeof operand.$options === 'string' ? operand.$options : '';
  return { kind: 'regex', path, pattern: operand.$regex, flags };
}

function conjunctsOfField(path: string, operand: unknown, out: Conjunct[]): void {
  if (!isObject(operand)) return;
  const regex = regexPredicate(path, operand);
  if (regex) out.push({ kind: 'predicate', predicate: regex });
  const elem = operand.$elemMatch;
  if (isObject(elem)) {
    // An element matching the inner filter has the inner strings under `path`.
    const inner = regexPredicate(path, elem);
    if (inner) out.push({ kind: 'predicate', predicate: inner });
    else out.push(...conjunctsOf(elem, `${path}.`));
  }
}

/** The indexable conjuncts of a filter (field paths prefixed with `prefix`). */
export function conjunctsOf(filter: Filter, prefix = ''): Conjunct[] {
  const out: Conjunct[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) {
      for (const sub of value) if (isObject(sub)) out.push(...conjunctsOf(sub, prefix));
    } else if (key === '$or' && Array.isArray(value) && value.length > 0) {
      const branches = value.map((sub) => (isObject(sub) ? conjunctsOf(sub, prefix) : []));
      // One branch the index cannot narrow makes the whole OR unnarrowable.
      if (branches.every((b) => b.length > 0)) out.push({ kind: 'or', branches });
    } else if (!key.startsWith('$')) {
      conjunctsOfField(prefix + key, value, out);
    }
  }
  return out;
}

/** Applies the pattern length cap to every `$regex` of a filter, wherever it is. */
export function assertRegexLengths(node: unknown): void {
  if (Array.isArray(node)) {
    for (const el of node) assertRegexLengths(el);
  } else if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$regex' && typeof value === 'string') assertPatternLength(value);
      else assertRegexLengths(value);
    }
  }
}
