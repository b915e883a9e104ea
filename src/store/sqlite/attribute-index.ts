/**
 * The narrowing side table of the embedded store: which attribute paths are indexed, the values
 * a record holds at them (MongoDB traversal), the plan that turns a filter's top-level AND into
 * index conditions, and the writes that keep the table in step with the records.
 *
 * Each (collection, path) pair is numbered once (`attr_paths.key`), so an index row is just
 * (key, value, id); `attr_paths.records` counts the records with an entry there or irregular
 * there, which tells a sorted walk whether any other record sorts as missing without looking.
 */
import type { Database as Db } from 'better-sqlite3';
import type { Doc, Filter } from '../port.ts';
import type { StatementCache } from './statement-cache.ts';

/**
 * Paths worth an index entry. `id` is the documents table's own key. The others are what the
 * endpoints' example filters and the data portal ask for (ecosystem classification, record type,
 * data object type), the provenance links a client follows from study to biosample to process to
 * data object (`part_of`, `associated_studies`, `has_input`, `has_output`, `was_generated_by`),
 * the numeric ranges of map and depth queries, and what listings are sorted by (names, study
 * titles, collection dates, file sizes), so a sorted page walks an index instead of sorting.
 */
export const INDEXED_PATHS: ReadonlySet<string> = new Set([
  'name',
  'title',
  'collection_date.has_raw_value',
  'file_size_bytes',
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
/**
 * An id that SQLite and JavaScript may order differently among other such ids: it holds a
 * character from U+D800 up (SQLite compares text by code point, JavaScript by UTF-16 unit).
 */
export const ODD_ID = /[\uD800-\uFFFF]/;

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
   * Indexed paths at which the record is not one entry that is its sort key, in an order SQLite
   * and JavaScript agree on. Elsewhere the record has one entry, its key, or none and sorts as null.
   */
  irregular: string[];
}

/** The index entries of a record and the indexed paths at which they are not simply its sort key. */
export function indexRecord(doc: Record<string, unknown>): RecordIndex {
  const entries: Array<[string, IndexValue]> = [];
  const irregular: string[] = [];
  const oddId = typeof doc.id === 'string' && ODD_ID.test(doc.id);
  for (const [path, segments] of INDEXED_SEGMENTS) {
    if (!(segments[0]! in doc)) continue;
    const reached: Reached = { values: new Set(), null: false, other: false };
    collect(doc, segments, 0, reached);
    // Null leaves alone sort like a missing path; beside values they are the minimum. Several
    // entries make the key the smallest or the largest, and an odd id breaks the walk's id order.
    const values = reached.values.size;
    if (reached.other || (values > 0 && (reached.null || values > 1 || oddId))) irregular.push(path);
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
  -- One key per (collection, path); records: how many records have an entry there or are irregular there.
  CREATE TABLE IF NOT EXISTS attr_paths (
    key INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    records INTEGER NOT NULL DEFAULT 0,
    UNIQUE (collection, path)
  );
  -- value has no declared type so strings stay TEXT and numbers stay numeric.
  CREATE TABLE IF NOT EXISTS attr_index (
    key INTEGER NOT NULL,
    value NOT NULL,
    id TEXT NOT NULL,
    PRIMARY KEY (key, value, id)
  ) WITHOUT ROWID;
  -- Records whose attr_index entries at a key's path do not decide their sort key there (indexRecord).
  CREATE TABLE IF NOT EXISTS attr_irregular (
    key INTEGER NOT NULL,
    id TEXT NOT NULL,
    PRIMARY KEY (key, id)
  ) WITHOUT ROWID;
`;

/** A key no (collection, path) has: conditions on a pair never written select nothing. */
export const NO_KEY = 0;

/**
 * The keys of (collection, path) pairs. A key never changes once given (a rebuild keeps them), so
 * keys are kept in memory; one not found is looked up again, since another process may have
 * added it since.
 */
export class AttributeKeys {
  /** Keys by collection, then path (looked up per index entry written: no name is built). */
  private readonly known = new Map<string, Map<string, number>>();

  constructor(private readonly statements: StatementCache) {}

  /** The pair's key, or NO_KEY when no record was ever indexed there. */
  get(collection: string, path: string): number {
    let paths = this.known.get(collection);
    let key = paths?.get(path);
    if (key === undefined) {
      key = this.statements
        .get('SELECT key FROM attr_paths WHERE collection = ? AND path = ?')
        .pluck()
        .get(collection, path) as number | undefined;
      if (key === undefined) return NO_KEY;
      if (!paths) this.known.set(collection, (paths = new Map()));
      paths.set(path, key);
    }
    return key;
  }

  /** The pair's key, given now when it has none (inside the caller's write transaction). */
  ensure(collection: string, path: string): number {
    const key = this.get(collection, path);
    if (key !== NO_KEY) return key;
    this.statements
      .get('INSERT OR IGNORE INTO attr_paths(collection, path, records) VALUES (?, ?, 0)')
      .run(collection, path);
    return this.get(collection, path);
  }

  /** Looks up the keys of one collection: `of(collection)(path)`. */
  of(collection: string): (path: string) => number {
    return (path) => this.get(collection, path);
  }

  /** Forgets every key (the tables were dropped). */
  clear(): void {
    this.known.clear();
  }
}

/** Records with entries or irregular at a key's path (0 for NO_KEY). */
export function coveredRecords(statements: StatementCache, key: number): number {
  if (key === NO_KEY) return 0;
  return (statements.get('SELECT records FROM attr_paths WHERE key = ?').pluck().get(key) as number) ?? 0;
}

/** Version of what the side tables hold besides the indexed paths; a change rebuilds them on open. */
const INDEX_LAYOUT = 3;
/** Records read per page while rebuilding. */
const REBUILD_PAGE = 1000;

const INSERT_ENTRY = 'INSERT OR IGNORE INTO attr_index(key, value, id) VALUES (?, ?, ?)';
const INSERT_IRREGULAR = 'INSERT OR IGNORE INTO attr_irregular(key, id) VALUES (?, ?)';
const DELETE_ENTRY = 'DELETE FROM attr_index WHERE key = ? AND value = ? AND id = ?';
const DELETE_IRREGULAR = 'DELETE FROM attr_irregular WHERE key = ? AND id = ?';
const ADD_RECORDS = 'UPDATE attr_paths SET records = records + ? WHERE key = ?';

/** Whether the side tables have the layout before keys (collection and path in every row). */
function hasOldLayout(db: Db): boolean {
  const columns = db.prepare("SELECT name FROM pragma_table_info('attr_index')").pluck().all() as string[];
  return columns.includes('collection');
}

/**
 * The paths at which a record has entries or is irregular, each once: the paths where it does not
 * simply sort as missing (what `attr_paths.records` counts).
 */
export function coveredPaths(index: RecordIndex): Set<string> {
  return new Set([...index.entries.map(([p]) => p), ...index.irregular]);
}

/**
 * Rebuilds the attribute index and its irregular-key table when the indexed paths or the
 * layout differ from the ones they were built with. Checked again inside the write
 * transaction, so processes opening the file together rebuild it once.
 */
export function ensureAttributeIndex(db: Db, statements: StatementCache, keys: AttributeKeys): void {
  const wanted = JSON.stringify({ layout: INDEX_LAYOUT, paths: [...INDEXED_PATHS].sort() });
  const built = db.prepare("SELECT value FROM meta WHERE key = 'indexed_paths'");
  const current = () => (built.get() as { value: string } | undefined)?.value;
  if (current() === wanted) return;
  db.transaction(() => {
    if (current() === wanted) return;
    if (hasOldLayout(db)) db.exec('DROP TABLE attr_index; DROP TABLE attr_irregular;');
    db.exec('DROP INDEX IF EXISTS attr_by_doc;' + ATTRIBUTE_INDEX_SCHEMA);
    db.exec('DELETE FROM attr_index; DELETE FROM attr_irregular; UPDATE attr_paths SET records = 0;');
    statements.clear();
    keys.clear();
    // Read in pages: the connection cannot write while a statement is still stepping.
    const page = db.prepare(
      'SELECT collection, id, body FROM docs WHERE (collection, id) > (?, ?) ORDER BY collection, id LIMIT +?',
    );
    let after = { collection: '', id: '' };
    for (;;) {
      const rows = page.all(after.collection, after.id, REBUILD_PAGE) as Array<{
        collection: string;
        id: string;
        body: string;
      }>;
      for (const r of rows) addEntries({ statements, keys }, r.collection, JSON.parse(r.body) as Doc);
      if (rows.length < REBUILD_PAGE) break;
      after = rows[rows.length - 1]!;
    }
    db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('indexed_paths', ?)").run(wanted);
  }).immediate();
}

/** What writing index entries needs: the connection's statements and the pairs' keys. */
export interface EntryWriter {
  statements: StatementCache;
  keys: AttributeKeys;
}

/**
 * Writes a record's index entries inside the caller's transaction. Given the record as it was
 * (`before`), first removes the entries and irregular marks the new version no longer has.
 */
export function addEntries(w: EntryWriter, collection: string, doc: Doc, before?: Doc): void {
  const { statements, keys } = w;
  const now = indexRecord(doc);
  const paths = coveredPaths(now);
  const addRecords = statements.get(ADD_RECORDS);
  if (before) {
    const keep = new Set(now.entries.map(([p, v]) => `${p}\u0000${typeof v}\u0000${v}`));
    const old = indexRecord(before);
    const deleteEntry = statements.get(DELETE_ENTRY);
    const deleteIrregular = statements.get(DELETE_IRREGULAR);
    for (const [p, v] of old.entries) {
      if (!keep.has(`${p}\u0000${typeof v}\u0000${v}`)) deleteEntry.run(keys.get(collection, p), v, doc.id);
    }
    for (const p of old.irregular)
      if (!now.irregular.includes(p)) deleteIrregular.run(keys.get(collection, p), doc.id);
    for (const p of coveredPaths(old)) {
      if (paths.has(p)) paths.delete(p);
      else addRecords.run(-1, keys.get(collection, p));
    }
  }
  const insertAttr = statements.get(INSERT_ENTRY);
  const insertIrregular = statements.get(INSERT_IRREGULAR);
  for (const [p, v] of now.entries) insertAttr.run(keys.ensure(collection, p), v, doc.id);
  for (const p of now.irregular) insertIrregular.run(keys.ensure(collection, p), doc.id);
  for (const p of paths) addRecords.run(1, keys.ensure(collection, p));
}

/** Removes every index entry and irregular mark of a deleted record (inside the caller's transaction). */
export function removeEntries(w: EntryWriter, collection: string, doc: Doc): void {
  const { statements, keys } = w;
  const old = indexRecord(doc);
  const deleteEntry = statements.get(DELETE_ENTRY);
  const deleteIrregular = statements.get(DELETE_IRREGULAR);
  for (const [p, v] of old.entries) deleteEntry.run(keys.get(collection, p), v, doc.id);
  for (const p of old.irregular) deleteIrregular.run(keys.get(collection, p), doc.id);
  const addRecords = statements.get(ADD_RECORDS);
  for (const p of coveredPaths(old)) addRecords.run(-1, keys.get(collection, p));
}
