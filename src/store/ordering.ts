/**
 * MongoDB sort order for JSON values: type brackets first (null < numbers < strings < objects <
 * arrays < booleans), then values within a bracket. A sort key that reaches an array uses its
 * smallest element ascending and its largest descending, as MongoDB does.
 */
import type { Doc, Sort } from './port.ts';

function bracket(value: unknown): number {
  if (value === null || value === undefined) return 1;
  if (typeof value === 'number') return 2;
  if (typeof value === 'string') return 3;
  if (Array.isArray(value)) return 5;
  if (typeof value === 'object') return 4;
  if (typeof value === 'boolean') return 6;
  return 7;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Total order over JSON values following MongoDB's BSON comparison. */
export function compareValues(a: unknown, b: unknown): number {
  const ba = bracket(a);
  const bb = bracket(b);
  if (ba !== bb) return ba - bb;
  switch (ba) {
    case 2:
      return (a as number) - (b as number);
    case 3:
      return compareStrings(a as string, b as string);
    case 4: {
      const ea = Object.entries(a as object);
      const eb = Object.entries(b as object);
      for (let i = 0; i < Math.min(ea.length, eb.length); i++) {
        const byType = bracket(ea[i]![1]) - bracket(eb[i]![1]);
        if (byType !== 0) return byType;
        const byName = compareStrings(ea[i]![0], eb[i]![0]);
        if (byName !== 0) return byName;
        const byValue = compareValues(ea[i]![1], eb[i]![1]);
        if (byValue !== 0) return byValue;
      }
      return ea.length - eb.length;
    }
    case 5: {
      const xa = a as unknown[];
      const xb = b as unknown[];
      for (let i = 0; i < Math.min(xa.length, xb.length); i++) {
        const c = compareValues(xa[i], xb[i]);
        if (c !== 0) return c;
      }
      return xa.length - xb.length;
    }
    case 6:
      return Number(a) - Number(b);
    default:
      return 0;
  }
}

/** Values reached by a dotted path, with arrays at every step traversed one level. */
function sortCandidates(doc: unknown, segments: string[], index: number, out: unknown[]): void {
  if (index === segments.length) {
    if (Array.isArray(doc)) {
      if (doc.length === 0) out.push(EMPTY_ARRAY);
      else for (const el of doc) out.push(el);
    } else out.push(doc);
    return;
  }
  if (Array.isArray(doc)) {
    for (const el of doc) {
      if (el !== null && typeof el === 'object' && !Array.isArray(el))
        sortCandidates(el, segments, index, out);
    }
    return;
  }
  if (doc !== null && typeof doc === 'object') {
    const next = (doc as Record<string, unknown>)[segments[index]!];
    if (next !== undefined) sortCandidates(next, segments, index + 1, out);
  }
}

// An empty array sorts before null in MongoDB.
const EMPTY_ARRAY = Symbol('empty array');

function keyCompare(a: unknown, b: unknown): number {
  if (a === EMPTY_ARRAY || b === EMPTY_ARRAY)
    return (a === EMPTY_ARRAY ? 0 : 1) - (b === EMPTY_ARRAY ? 0 : 1);
  return compareValues(a, b);
}

/** The value a record sorts by for one key and direction. */
export function sortKeyOf(doc: unknown, path: string, direction: 1 | -1): unknown {
  const found: unknown[] = [];
  sortCandidates(doc, path.split('.'), 0, found);
  if (found.length === 0) return null;
  let best = found[0];
  for (let i = 1; i < found.length; i++) {
    const c = keyCompare(found[i], best);
    if ((direction === 1 && c < 0) || (direction === -1 && c > 0)) best = found[i];
  }
  return best;
}

/** The sort with `id` ascending appended as the final tie-breaker (unless it sorts by id already). */
export function withIdTieBreaker(sort: Sort): Sort {
  return sort.some(([f]) => f === 'id') ? sort : [...sort, ['id', 1]];
}

/** Compares two records by their sort keys (one per entry of `sort`, from `sortKeyOf`). */
export function compareKeys(x: unknown[], y: unknown[], sort: Sort): number {
  for (let i = 0; i < sort.length; i++) {
    const c = keyCompare(x[i], y[i]);
    if (c !== 0) return c * sort[i]![1];
  }
  return 0;
}

/** Sorts items whose sort keys (one per entry of `sort`, from `sortKeyOf`) are already computed. */
export function sortByKeys<T extends { keys: unknown[] }>(items: T[], sort: Sort): T[] {
  return items.sort((x, y) => compareKeys(x.keys, y.keys, sort));
}

/** Sorts records in place by the given keys, `id` ascending breaking ties. */
export function sortDocs<T extends Doc>(docs: T[], sort: Sort): T[] {
  const keys = withIdTieBreaker(sort);
  const decorated = sortByKeys(
    docs.map((doc) => ({ doc, keys: keys.map(([path, dir]) => sortKeyOf(doc, path, dir)) })),
    keys,
  );
  for (let i = 0; i < docs.length; i++) docs[i] = decorated[i]!.doc;
  return docs;
}
