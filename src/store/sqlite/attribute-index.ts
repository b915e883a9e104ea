/**
 * The narrowing side table of the embedded store: which attribute paths are indexed, the values
 * a record holds at them (MongoDB traversal), the plan that turns a filter's top-level AND into
 * index conditions, and the writes that keep the table in step with the records.
 */
import type { Database as Db } from 'better-sqlite3';
import type { Doc, Filter } from '../port.ts';
import type { StatementCache } from './statement-cache.ts';

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
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
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

export const ATTRIBUTE_INDEX_SCHEMA = `
  -- value has no declared type so strings stay TEXT and numbers stay numeric.
  CREATE TABLE IF NOT EXISTS attr_index (
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    value NOT NULL,
    id TEXT NOT NULL,
    PRIMARY KEY (collection, path, value, id)
  ) WITHOUT ROWID;
  -- Records whose attr_index entries at path do not decide their sort key there (indexRecord).
  CREATE TABLE IF NOT EXISTS attr_irregular (
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    id TEXT NOT NULL,
    PRIMARY KEY (collection, path, id)
  ) WITHOUT ROWID;
`;

/** Version of what the side tables hold besides the indexed paths; a change rebuilds them on open. */
const INDEX_LAYOUT = 2;
/** Records read per page while rebuilding. */
const REBUILD_PAGE = 1000;

const INSERT_ENTRY = 'INSERT OR IGNORE INTO attr_index(collection, path, value, id) VALUES (?, ?, ?, ?)';
const INSERT_IRREGULAR = 'INSERT OR IGNORE INTO attr_irregular(collection, path, id) VALUES (?, ?, ?)';
const DELETE_ENTRY = 'DELETE FROM attr_index WHERE collection = ? AND path = ? AND value = ? AND id = ?';
const DELETE_IRREGULAR = 'DELETE FROM attr_irregular WHERE collection = ? AND path = ? AND id = ?';

/**
 * Rebuilds the attribute index and its irregular-key table when the indexed paths or the
 * layout differ from the ones they were built with. Checked again inside the write
 * transaction, so processes opening the file together rebuild it once.
 */
export function ensureAttributeIndex(db: Db): void {
  const wanted = JSON.stringify({ layout: INDEX_LAYOUT, paths: [...INDEXED_PATHS].sort() });
  const built = db.prepare("SELECT value FROM meta WHERE key = 'indexed_paths'");
  const current = () => (built.get() as { value: string } | undefined)?.value;
  if (current() === wanted) return;
  const insertAttr = db.prepare(INSERT_ENTRY);
  const insertIrregular = db.prepare(INSERT_IRREGULAR);
  // Read in pages: the connection cannot write while a statement is still stepping.
  const page = db.prepare(
    'SELECT collection, id, body FROM docs WHERE (collection, id) > (?, ?) ORDER BY collection, id LIMIT ?',
  );
  db.transaction(() => {
    if (current() === wanted) return;
    db.exec('DELETE FROM attr_index; DELETE FROM attr_irregular; DROP INDEX IF EXISTS attr_by_doc;');
    let after = { collection: '', id: '' };
    for (;;) {
      const rows = page.all(after.collection, after.id, REBUILD_PAGE) as Array<{
        collection: string;
        id: string;
        body: string;
      }>;
      for (const r of rows) {
        const { entries, irregular } = indexRecord(JSON.parse(r.body) as Doc);
        for (const [p, v] of entries) insertAttr.run(r.collection, p, v, r.id);
        for (const p of irregular) insertIrregular.run(r.collection, p, r.id);
      }
      if (rows.length < REBUILD_PAGE) break;
      after = rows[rows.length - 1]!;
    }
    db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('indexed_paths', ?)").run(wanted);
  }).immediate();
}

/**
 * Writes a record's index entries inside the caller's transaction. Given the record as it was
 * (`before`), first removes the entries and irregular marks the new version no longer has.
 */
export function addEntries(statements: StatementCache, collection: string, doc: Doc, before?: Doc): void {
  const { entries, irregular } = indexRecord(doc);
  if (before) {
    const keep = new Set(entries.map(([p, v]) => `${p}\u0000${typeof v}\u0000${v}`));
    const old = indexRecord(before);
    const deleteEntry = statements.get(DELETE_ENTRY);
    const deleteIrregular = statements.get(DELETE_IRREGULAR);
    for (const [p, v] of old.entries) {
      if (!keep.has(`${p}\u0000${typeof v}\u0000${v}`)) deleteEntry.run(collection, p, v, doc.id);
    }
    for (const p of old.irregular) if (!irregular.includes(p)) deleteIrregular.run(collection, p, doc.id);
  }
  const insertAttr = statements.get(INSERT_ENTRY);
  const insertIrregular = statements.get(INSERT_IRREGULAR);
  for (const [p, v] of entries) insertAttr.run(collection, p, v, doc.id);
  for (const p of irregular) insertIrregular.run(collection, p, doc.id);
}

/** Removes every index entry and irregular mark of a deleted record (inside the caller's transaction). */
export function removeEntries(statements: StatementCache, collection: string, doc: Doc): void {
  const { entries, irregular } = indexRecord(doc);
  const deleteEntry = statements.get(DELETE_ENTRY);
  const deleteIrregular = statements.get(DELETE_IRREGULAR);
  for (const [p, v] of entries) deleteEntry.run(collection, p, v, doc.id);
  for (const p of irregular) deleteIrregular.run(collection, p, doc.id);
}
