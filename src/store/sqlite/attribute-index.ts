/**
 * The narrowing side table of the embedded store: which attribute paths are indexed, the values
 * a record holds at them (MongoDB traversal), and the plan that turns a filter's top-level AND
 * into index conditions.
 */
import type { Filter } from '../port.ts';

/**
 * Paths worth an index entry. `id` is the documents table's own key. The others are what the
 * endpoints' example filters and the data portal ask for (ecosystem classification, record type,
 * data object type), the provenance links a client follows from study to biosample to process to
 * data object (`part_of`, `associated_studies`, `has_input`, `has_output`, `was_generated_by`),
 * and the numeric ranges of map and depth queries.
 */
export const INDEXED_PATHS: ReadonlySet<string> = new Set([
  'part_of',
  'associated_studies',
  'ecosystem_category',
  'ecosystem_type',
  'ecosystem_subtype',
  'specific_ecosystem',
  'data_object_type',
  'was_generated_by',
  'has_input',
  'has_output',
  'type',
  'lat_lon.latitude',
  'lat_lon.longitude',
  'depth.has_numeric_value',
]);

const INDEXED_SEGMENTS = [...INDEXED_PATHS].map((p) => [p, p.split('.')] as const);

export type IndexValue = string | number;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A string whose UTF-16 order may differ from its UTF-8 (SQLite BINARY) order: it holds a surrogate. */
const SURROGATE = /[\uD800-\uDFFF]/;

function isIndexValue(v: unknown): v is IndexValue {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/** What a path reaches in a record: the scalars an index entry holds, and whether it also met anything else. */
interface Reached {
  values: Set<IndexValue>;
  /** A null (or undefined) leaf. */
  null: boolean;
  /**
   * A leaf a sort key can be but an entry cannot hold (a boolean, an object, a nested or empty
   * array, a non-finite number), or a string whose SQLite order may differ from JavaScript's.
   */
  other: boolean;
}

/**
 * Scalars (strings, finite numbers) reached at a path the way MongoDB equality reaches them,
 * which is also the traversal `sortKeyOf` (ordering.ts) makes.
 */
function collect(node: unknown, segments: readonly string[], i: number, out: Reached): void {
  if (i === segments.length) {
    const leaves = Array.isArray(node) ? node : [node];
    if (leaves.length === 0) out.other = true;
    for (const leaf of leaves) {
      if (isIndexValue(leaf)) {
        out.values.add(leaf);
        if (typeof leaf === 'string' && SURROGATE.test(leaf)) out.other = true;
      } else if (leaf === null || leaf === undefined) out.null = true;
      else out.other = true;
    }
    return;
  }
  if (Array.isArray(node)) {
    for (const el of node) if (isObject(el)) collect(el, segments, i, out);
  } else if (isObject(node)) {
    const next = node[segments[i]!];
    if (next !== undefined) collect(next, segments, i + 1, out);
  }
}

export interface RecordIndex {
  /** Every (path, value) index entry of the record. */
  entries: Array<[string, IndexValue]>;
  /**
   * Indexed paths at which the entries do not decide the record's sort key. Elsewhere the key
   * ascending is the smallest entry at the path, descending the largest, and null without one.
   */
  irregular: string[];
}

/** The index entries of a record and the indexed paths at which they do not decide its sort key. */
export function indexRecord(doc: Record<string, unknown>): RecordIndex {
  const entries: Array<[string, IndexValue]> = [];
  const irregular: string[] = [];
  for (const [path, segments] of INDEXED_SEGMENTS) {
    if (!(segments[0]! in doc)) continue;
    const reached: Reached = { values: new Set(), null: false, other: false };
    collect(doc, segments, 0, reached);
    // Null leaves alone sort like a missing path; beside values they are the minimum.
    if (reached.other || (reached.null && reached.values.size > 0)) irregular.push(path);
    for (const v of reached.values) entries.push([path, v]);
  }
  return { entries, irregular };
}

export type Condition =
  | { path: string; op: 'eq'; value: IndexValue }
  | { path: string; op: 'in'; values: IndexValue[] }
  | { path: string; op: 'gt' | 'gte' | 'lt' | 'lte'; value: IndexValue };

export interface IndexPlan {
  /** Conditions every match satisfies (each one on its own: array fields may meet them with different elements). */
  conditions: Condition[];
  /** True when the conditions alone decide the filter exactly, so bodies need no check. */
  exact: boolean;
}

const RANGE_OPS = { $gt: 'gt', $gte: 'gte', $lt: 'lt', $lte: 'lte' } as const;

/** Splits a filter's top-level AND (including nested `$and`) into index conditions. */
export function planIndex(filter: Filter): IndexPlan {
  const conditions: Condition[] = [];
  let exact = true;
  const visit = (clause: Filter) => {
    for (const [key, value] of Object.entries(clause)) {
      if (key === '$and' && Array.isArray(value)) {
        for (const sub of value) {
          if (isObject(sub)) visit(sub);
          else exact = false;
        }
        continue;
      }
      if (key.startsWith('$') || !(key === 'id' || INDEXED_PATHS.has(key))) {
        exact = false;
        continue;
      }
      if (isIndexValue(value)) {
        conditions.push({ path: key, op: 'eq', value });
        continue;
      }
      if (
        !isObject(value) ||
        Object.keys(value).length === 0 ||
        !Object.keys(value).every((k) => k.startsWith('$'))
      ) {
        exact = false;
        continue;
      }
      for (const [op, operand] of Object.entries(value)) {
        if (op === '$eq' && isIndexValue(operand)) conditions.push({ path: key, op: 'eq', value: operand });
        else if (
          op === '$in' &&
          Array.isArray(operand) &&
          operand.length > 0 &&
          operand.every(isIndexValue)
        ) {
          conditions.push({ path: key, op: 'in', values: operand as IndexValue[] });
        } else if (op in RANGE_OPS && isIndexValue(operand)) {
          conditions.push({ path: key, op: RANGE_OPS[op as keyof typeof RANGE_OPS], value: operand });
        } else exact = false;
      }
    }
  };
  visit(filter);
  return { conditions, exact: exact && conditions.length > 0 };
}

/**
 * SQL for one condition on a value column. Ranges stay inside their type bracket: in SQLite
 * every number sorts before every text value, as in MongoDB, so a numeric range is capped
 * below '' and a text range starts at ''.
 */
export function valueSql(column: string, c: Condition): { sql: string; params: IndexValue[] } {
  switch (c.op) {
    case 'eq':
      return { sql: `${column} = ?`, params: [c.value] };
    case 'in':
      return { sql: `${column} IN (${c.values.map(() => '?').join(',')})`, params: c.values };
    default: {
      const cmp = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[c.op];
      const numeric = typeof c.value === 'number';
      const bound =
        c.op === 'gt' || c.op === 'gte'
          ? numeric
            ? ` AND ${column} < ''`
            : ''
          : numeric
            ? ''
            : ` AND ${column} >= ''`;
      return { sql: `${column} ${cmp} ?${bound}`, params: [c.value] };
    }
  }
}
