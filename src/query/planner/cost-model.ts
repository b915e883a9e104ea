/**
 * What each way of reading records costs, in microseconds of this process, as functions of the
 * estimated cardinalities. The constants were measured on the embedded store (2 cores, records of
 * about 1.5 KB; `npm run bench:search` prints what the choices give): they only need to be right
 * in proportion, since a plan is the cheapest of the candidates, never an absolute promise.
 */
import type { AccessPathKind } from '../../store/port.ts';

export const COST = {
  /** Reading one record row in id order (the b-tree step, not the body's content). */
  rowStep: 0.3,
  /** The body test (LIKE) per kilobyte of stored text. */
  bodyTestPerKb: 0.5,
  /** JSON.parse plus the full filter per kilobyte of stored text. */
  parsePerKb: 6,
  /** Fetching one record by id (an index seek) besides parsing it. */
  fetchById: 2.5,
  /** One candidate id from the search index (map rows, the id set, sorting it). */
  candidate: 1.2,
  /** Asking the search index at all (the MATCH, path keys). */
  searchQuery: 150,
  /** One attribute index entry. */
  indexEntry: 0.3,
  /** One attribute index entry SQLite steps over (OFFSET) before a page. */
  skippedEntry: 0.05,
  /** Reading one sort key with SQL JSON functions. */
  sortKey: 1.5,
  /** Sorting, per element per comparison level (n log2 n). */
  sortStep: 0.05,
} as const;

export interface PathEstimate {
  path: AccessPathKind;
  /** Records read (tested or parsed). */
  docsExamined: number;
  /** Index entries or candidate ids read. */
  keysExamined: number;
  /** Microseconds. */
  cost: number;
  /** Why this path was estimated as it was, or why it cannot be used. */
  note: string;
  applicable: boolean;
}

export interface CostInputs {
  /** Records in the collection. */
  size: number;
  /** Average stored record size in bytes. */
  averageBytes: number;
  /** Estimated matches of the whole filter. */
  matches: number;
  /** Share of records whose stored text passes the body test (1 when there is none). */
  bodyTestPass: number;
  hasBodyTest: boolean;
  /** Records the read must produce before it can stop (skip + limit), Infinity for all. */
  need: number;
  /** Records the page returns (limit, or `need` without one). Default `need`. */
  page?: number;
  /** The requested order is id order (a walk can stop early). */
  idOrder: boolean;
}

const kb = (c: CostInputs) => Math.max(c.averageBytes, 100) / 1024;
const sortCost = (n: number) => (n > 1 ? n * Math.log2(n) * COST.sortStep : 0);
/** Fetching `n` records by id and parsing them. */
const readById = (c: CostInputs, n: number) => n * (COST.fetchById + COST.parsePerKb * kb(c));
/** The share of `n` index answers that match the whole filter. */
const precisionOf = (c: CostInputs, n: number) => (n === 0 ? 1 : Math.min(1, Math.max(c.matches, 0.5) / n));

/** Records a walk in id order reads before it has `need` matches (all of them without a limit). */
export function rowsWalked(c: CostInputs): number {
  if (!c.idOrder || !Number.isFinite(c.need)) return c.size;
  const share = c.size === 0 ? 1 : Math.max(c.matches, 0.5) / c.size;
  return Math.min(c.size, Math.ceil(c.need / share));
}

export function idWalkCost(c: CostInputs): PathEstimate {
  const rows = rowsWalked(c);
  const parsed = c.hasBodyTest ? rows * c.bodyTestPass : rows;
  const cost =
    rows * (COST.rowStep + (c.hasBodyTest ? COST.bodyTestPerKb * kb(c) : 0)) +
    parsed * COST.parsePerKb * kb(c) +
    (c.idOrder ? 0 : sortCost(c.matches));
  return {
    path: 'id-walk',
    docsExamined: Math.round(rows),
    keysExamined: 0,
    cost,
    note: c.idOrder
      ? `walks ids until ${Number.isFinite(c.need) ? c.need : 'every'} match${c.need === 1 ? '' : 'es'}` +
        (c.hasBodyTest ? `, parsing ${(c.bodyTestPass * 100).toFixed(1)}% that pass the body test` : '')
      : 'reads every record, then sorts the matches',
    applicable: true,
  };
}

/** Records read through `candidates` ids in id order (or all of them for another order). */
export function candidateCost(c: CostInputs, candidates: number): PathEstimate {
  const precision = precisionOf(c, candidates);
  const fetched =
    c.idOrder && Number.isFinite(c.need) ? Math.min(candidates, Math.ceil(c.need / precision)) : candidates;
  const cost =
    COST.searchQuery +
    candidates * COST.candidate +
    readById(c, fetched) +
    (c.idOrder ? 0 : sortCost(c.matches));
  return {
    path: 'candidate-ids',
    docsExamined: Math.round(fetched),
    keysExamined: Math.round(candidates),
    cost,
    note: `about ${Math.round(candidates)} candidate ids from the search index`,
    applicable: true,
  };
}

/**
 * The largest candidate set for which reading candidates still beats `otherCost`: the index is
 * asked with it as its limit, so a predicate broader than the estimate said gives up early.
 */
export function candidateBreakEven(c: CostInputs, otherCost: number): number {
  let lo = 0;
  let hi = Math.max(c.size, 1);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (candidateCost({ ...c, matches: Math.min(c.matches, mid) }, mid).cost <= otherCost) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The attribute index: `entries` rows of the most selective condition, then the records. */
export function attributeIndexCost(
  c: CostInputs,
  entries: number,
  exact: boolean,
  orderedByDriver: boolean,
): PathEstimate {
  const precision = precisionOf(c, entries);
  const stopsEarly = c.idOrder && Number.isFinite(c.need) && orderedByDriver;
  const keys = stopsEarly ? Math.min(entries, Math.ceil(c.need / precision)) : entries;
  const fetched = exact && c.idOrder ? Math.min(keys, c.need) : keys;
  const cost =
    keys * COST.indexEntry +
    readById(c, fetched) +
    (!orderedByDriver && c.idOrder ? sortCost(entries) : 0) +
    (c.idOrder ? 0 : sortCost(c.matches));
  return {
    path: 'attribute-index',
    docsExamined: Math.round(fetched),
    keysExamined: Math.round(keys),
    cost,
    note: `about ${Math.round(entries)} attribute index entries${exact ? ', which decide the filter' : ''}`,
    applicable: true,
  };
}

/**
 * A walk of the sort key's attribute index in key order, stopping when the page is full. When the
 * index decides the filter, SQLite skips the rows before the page and only the page is read;
 * otherwise (`checked`) every record the walk meets is read and checked, those failing the body
 * test unparsed.
 */
export function sortedIndexWalkCost(c: CostInputs, checked: boolean): PathEstimate {
  const share = c.size === 0 ? 1 : Math.max(c.matches, 0.5) / c.size;
  const keys = Math.min(c.size, Math.ceil(c.need / share));
  const page = Math.min(c.page ?? c.need, c.matches);
  const read = checked
    ? keys * (COST.fetchById + (c.hasBodyTest ? COST.bodyTestPerKb * kb(c) : 0)) +
      keys * c.bodyTestPass * COST.parsePerKb * kb(c)
    : readById(c, page);
  return {
    path: 'sorted-index-walk',
    docsExamined: checked ? keys : page,
    keysExamined: keys,
    cost: keys * (checked ? COST.indexEntry : COST.skippedEntry) + read,
    note: checked
      ? 'walks the sort key index in order, checking each record it meets, until the page is full'
      : 'walks the sort key index in order until the page is full, reading only the page',
    applicable: true,
  };
}

/** Sort keys of every match read with SQL JSON functions; only the page is parsed. */
export function sortKeysCost(c: CostInputs): PathEstimate {
  const page = Math.min(c.need, c.matches);
  return {
    path: 'sort-keys',
    docsExamined: page,
    keysExamined: Math.round(c.matches),
    cost: c.matches * COST.sortKey + sortCost(c.matches) + readById(c, page),
    note: 'sort keys of every match from SQL, only the page parsed',
    applicable: true,
  };
}

export function notApplicable(path: AccessPathKind, note: string): PathEstimate {
  return { path, docsExamined: 0, keysExamined: 0, cost: Infinity, note, applicable: false };
}
