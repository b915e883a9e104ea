/**
 * The embedded DocumentStore: one SQLite file holding records, a narrowing side table of
 * indexed attribute values, a change log and short-lived state. SQLite narrows; the compiled
 * MongoDB filter (src/store/filter.ts) decides.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Database as Db, Statement } from 'better-sqlite3';
import { BadRequest } from '../../http/errors.ts';
import { compileFilter } from '../filter.ts';
import { cleanDocs } from '../clean-docs.ts';
import { compareKeys, sortByKeys, sortDocs, sortKeyOf, withIdTieBreaker } from '../ordering.ts';
import { compileProjection } from '../projection.ts';
import type {
  ChangePage,
  CollectionStats,
  Doc,
  DocumentStore,
  Filter,
  FindOptions,
  Projection,
  Sort,
  WriteResult,
} from '../port.ts';
import {
  INDEXED_PATHS,
  indexRecord,
  planIndex,
  valueSql,
  type Condition,
  type IndexPlan,
  type IndexValue,
} from './attribute-index.ts';
import { createStateSchema, SqliteStateStore } from './state-store.ts';

/** Called synchronously inside the write transaction, so a co-located index commits or rolls back with the records. */
export interface WriteHook {
  onUpsert(collection: string, docs: Doc[]): void;
  onDelete(collection: string, ids: string[]): void;
}

export interface SqliteStoreOptions {
  /** Path of the database file. */
  file: string;
  databaseName?: string;
  /** How often expired state and old change-log rows are swept. Default one minute. */
  sweepIntervalMs?: number;
  /** Change-log rows kept for `changesSince`. Default 200 000. */
  changesRetained?: number;
}

/** Counters tests and benchmarks read to check that narrowing works. */
export interface SqliteStoreCounters {
  /** Record bodies parsed from JSON. */
  bodiesParsed: number;
  /** Sorted pages read off the sort key's attribute index. */
  sortedIndexWalks: number;
}

type Row = { id: string; body: string };
type SqlParam = string | number;

const CHUNK = 1000;
const ESTIMATE_CAP = 5000;
const ESTIMATE_TTL_MS = 60_000;
const ESTIMATES_KEPT = 10_000;
const CHANGES_PAGE = 100_000;
/** Matches below this many are sorted from their bodies rather than found on a walk of the sort key's index. */
const SMALL_MATCH = 1000;
/**
 * Index rows a sorted walk reads between checks that it still beats reading the keys from the
 * bodies of every match, which costs about as much per match as four rows of the walk.
 */
const WALK_CHECK = 5000;
/** Version of what the side tables hold besides the indexed paths; a change rebuilds them on open. */
const INDEX_LAYOUT = 2;

/** Ids that SQLite and JavaScript may order differently (they hold a character from U+D800 up). */
const ID_OUT_OF_ORDER = /[\uD800-\uFFFF]/;

/** Thrown inside a sorted index walk that has read more rows than its budget. */
class WalkTooLong extends Error {}

type SortItem = { id: string; keys: unknown[] };

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS docs (
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    size INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (collection, id)
  );
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
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS collection_stats (
    collection TEXT PRIMARY KEY,
    count INTEGER NOT NULL,
    size INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    deleted INTEGER NOT NULL
  );
`;

/**
 * SQL checking one more condition for the record `alias`, or undefined when it is cheaper to
 * leave it to the filter: equality is a primary-key probe, a range would scan per record.
 */
function conditionSql(alias: string, c: Condition, params: SqlParam[]): string | undefined {
  if (c.path === 'id') {
    const v = valueSql(`${alias}.id`, c);
    params.push(...v.params);
    return v.sql;
  }
  if (c.op !== 'eq' && c.op !== 'in') return undefined;
  const v = valueSql('y.value', c);
  params.push(c.path, ...v.params);
  return `EXISTS (SELECT 1 FROM attr_index y WHERE y.collection = ${alias}.collection AND y.path = ? AND ${v.sql} AND y.id = ${alias}.id)`;
}

/** Every condition SQL can check; `complete` says whether all of them made it. */
function conditionsSql(
  alias: string,
  conditions: Condition[],
  params: SqlParam[],
): { sql: string; complete: boolean } {
  let sql = '';
  let complete = true;
  for (const c of conditions) {
    const part = conditionSql(alias, c, params);
    if (part === undefined) complete = false;
    else sql += ` AND ${part}`;
  }
  return { sql, complete };
}

/** Longest stretch a scan keeps the event loop before letting other requests run. */
const TURN_MS = 10;
/** The record scan offers a pause after every PAUSE_EVERY + 1 records it tests. */
const PAUSE_EVERY = 63;
const PAUSE = Symbol('pause');

/**
 * Turn-taking for long scans: better-sqlite3 is synchronous, so a scan verifying 10^5 records
 * would hold the process for its whole length. Scans read in chunks with no statement left
 * open between records, so they can pause between records: the scan offers PAUSE, and a reader
 * outside a transaction takes it when TURN_MS have passed.
 */
class Turns {
  private started = performance.now();

  due(): boolean {
    return performance.now() - this.started > TURN_MS;
  }

  async give(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.started = performance.now();
  }
}

export class SqliteDocumentStore implements DocumentStore {
  readonly engine = 'sqlite' as const;
  readonly databaseName: string;
  readonly db: Db;
  readonly state: SqliteStateStore;
  readonly counters: SqliteStoreCounters = { bodiesParsed: 0, sortedIndexWalks: 0 };
  private readonly hooks: WriteHook[] = [];
  private readonly statements = new Map<string, Statement>();
  private readonly estimates = new Map<string, { n: number; at: number }>();
  private readonly sweepTimer: NodeJS.Timeout;
  private readonly changesRetained: number;
  private closed = false;

  constructor(options: SqliteStoreOptions) {
    fs.mkdirSync(path.dirname(options.file), { recursive: true });
    this.databaseName = options.databaseName ?? 'nmdc';
    this.changesRetained = options.changesRetained ?? 200_000;
    this.db = new Database(options.file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('cache_size = -65536'); // 64 MiB page cache
    this.db.pragma('mmap_size = 1073741824'); // reads through the OS page cache, up to 1 GiB
    this.db.pragma('temp_store = MEMORY');
    this.db.exec(SCHEMA);
    this.ensureAttributeIndex();
    createStateSchema(this.db);
    this.state = new SqliteStateStore(this.db);
    this.sweep();
    this.sweepTimer = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 60_000);
    this.sweepTimer.unref();
  }

  /**
   * Rebuilds the attribute index and its irregular-key table when the indexed paths or the
   * layout differ from the ones they were built with. Checked again inside the write
   * transaction, so processes opening the file together rebuild it once.
   */
  private ensureAttributeIndex(): void {
    const wanted = JSON.stringify({ layout: INDEX_LAYOUT, paths: [...INDEXED_PATHS].sort() });
    const built = this.db.prepare("SELECT value FROM meta WHERE key = 'indexed_paths'");
    const current = () => (built.get() as { value: string } | undefined)?.value;
    if (current() === wanted) return;
    const insertAttr = this.db.prepare(
      'INSERT OR IGNORE INTO attr_index(collection, path, value, id) VALUES (?, ?, ?, ?)',
    );
    const insertIrregular = this.db.prepare(
      'INSERT OR IGNORE INTO attr_irregular(collection, path, id) VALUES (?, ?, ?)',
    );
    // Read in pages: the connection cannot write while a statement is still stepping.
    const page = this.db.prepare(
      'SELECT collection, id, body FROM docs WHERE (collection, id) > (?, ?) ORDER BY collection, id LIMIT ?',
    );
    this.db
      .transaction(() => {
        if (current() === wanted) return;
        this.db.exec('DELETE FROM attr_index; DELETE FROM attr_irregular; DROP INDEX IF EXISTS attr_by_doc;');
        let after = { collection: '', id: '' };
        for (;;) {
          const rows = page.all(after.collection, after.id, CHUNK) as Array<{
            collection: string;
            id: string;
            body: string;
          }>;
          for (const r of rows) {
            const { entries, irregular } = indexRecord(JSON.parse(r.body) as Doc);
            for (const [p, v] of entries) insertAttr.run(r.collection, p, v, r.id);
            for (const p of irregular) insertIrregular.run(r.collection, p, r.id);
          }
          if (rows.length < CHUNK) break;
          after = rows[rows.length - 1]!;
        }
        this.db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('indexed_paths', ?)").run(wanted);
      })
      .immediate();
  }

  /** Registers a hook run inside every write transaction. */
  addWriteHook(hook: WriteHook): void {
    this.hooks.push(hook);
  }

  /** Removes expired state and change-log rows older than the retention window. */
  sweep(): void {
    if (this.closed) return;
    this.state.sweep();
    this.db
      .transaction(() => {
        const max = (this.stmt('SELECT max(seq) AS m FROM changes').get() as { m: number | null }).m ?? 0;
        const cutoff = max - this.changesRetained;
        if (cutoff <= this.prunedThrough()) return;
        const removed = this.stmt('DELETE FROM changes WHERE seq <= ?').run(cutoff).changes;
        // Remembered so a reader asking from before it learns that changes are missing (`gap`).
        if (removed > 0)
          this.stmt(
            "INSERT INTO meta(key, value) VALUES ('changes_pruned_through', ?) " +
              'ON CONFLICT(key) DO UPDATE SET value = excluded.value',
          ).run(String(cutoff));
      })
      .immediate();
  }

  /** The newest change-log sequence number the sweep has removed (0 when none). */
  private prunedThrough(): number {
    const row = this.stmt("SELECT value FROM meta WHERE key = 'changes_pruned_through'").get() as
      { value: string } | undefined;
    return row ? Number(row.value) : 0;
  }

  private stmt(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      if (this.statements.size > 500) this.statements.clear();
      this.statements.set(sql, s);
    }
    return s;
  }

  private parse(body: string): Doc {
    this.counters.bodiesParsed++;
    return JSON.parse(body) as Doc;
  }

  async nonEmptyCollections(): Promise<string[]> {
    const rows = this.stmt(
      'SELECT collection FROM collection_stats WHERE count > 0 ORDER BY collection',
    ).all() as Array<{
      collection: string;
    }>;
    return rows.map((r) => r.collection);
  }

  async getById(collection: string, id: string, projection?: Projection): Promise<Doc | null> {
    const row = this.stmt('SELECT body FROM docs WHERE collection = ? AND id = ?').get(collection, id) as
      { body: string } | undefined;
    return row ? compileProjection(projection)(this.parse(row.body)) : null;
  }

  /**
   * Upper-bounded count of index entries for a condition, to pick the most selective driver.
   * Counting a broad condition walks ESTIMATE_CAP index rows, so counts are kept for a while:
   * they only steer the plan, never the result, and a slightly old one steers it just as well.
   */
  private estimate(collection: string, c: Condition): number {
    if (c.path === 'id') return c.op === 'eq' ? 1 : c.op === 'in' ? c.values.length : ESTIMATE_CAP;
    const key = `${collection}\u0000${JSON.stringify(c)}`;
    const now = Date.now();
    const kept = this.estimates.get(key);
    if (kept && now - kept.at < ESTIMATE_TTL_MS) return kept.n;
    const v = valueSql('value', c);
    const row = this.stmt(
      `SELECT count(*) AS n FROM (SELECT 1 FROM attr_index WHERE collection = ? AND path = ? AND ${v.sql} LIMIT ${ESTIMATE_CAP})`,
    ).get(collection, c.path, ...v.params) as { n: number };
    const n = row.n + (c.op === 'eq' ? 0 : 0.5); // equality keeps id order; prefer it on ties
    if (this.estimates.size >= ESTIMATES_KEPT) this.estimates.clear();
    this.estimates.set(key, { n, at: now });
    return n;
  }

  /** True when a condition holds for a sizeable share (2% or more) of the collection. */
  private isBroad(collection: string, c: Condition): boolean {
    if (this.estimate(collection, c) < ESTIMATE_CAP) return false;
    const row = this.stmt('SELECT count FROM collection_stats WHERE collection = ?').get(collection) as
      { count: number } | undefined;
    return ESTIMATE_CAP / Math.max(row?.count ?? 1, 1) >= 0.02;
  }

  /** SQL selecting distinct candidate ids (as `x.id`) satisfying every index condition, in id order. */
  private candidateIdSql(
    collection: string,
    plan: IndexPlan,
  ): {
    from: string;
    where: string[];
    params: SqlParam[];
    complete: boolean;
    ordered: boolean;
    driver?: Condition;
  } {
    const params: SqlParam[] = [];
    if (plan.conditions.length === 0) {
      params.push(collection);
      return { from: 'docs x', where: ['x.collection = ?'], params, complete: true, ordered: true };
    }
    let driverIndex = 0;
    if (plan.conditions.length > 1) {
      const estimates = plan.conditions.map((c) => this.estimate(collection, c));
      driverIndex = estimates.indexOf(Math.min(...estimates));
    }
    const driver = plan.conditions[driverIndex]!;
    const where: string[] = [];
    let from: string;
    if (driver.path === 'id') {
      from = 'docs x';
      where.push('x.collection = ?');
      params.push(collection);
      const v = valueSql('x.id', driver);
      where.push(v.sql);
      params.push(...v.params);
    } else {
      from = 'attr_index x';
      where.push('x.collection = ?', 'x.path = ?');
      params.push(collection, driver.path);
      const v = valueSql('x.value', driver);
      where.push(v.sql);
      params.push(...v.params);
    }
    const rest = conditionsSql(
      'x',
      plan.conditions.filter((_, i) => i !== driverIndex),
      params,
    );
    if (rest.sql) where.push(rest.sql.slice(' AND '.length));
    // Equality on an attribute walks its index in id order; $in and ranges need a sort.
    const ordered = driver.path === 'id' || driver.op === 'eq';
    return { from, where, params, complete: rest.complete, ordered, driver };
  }

  private loadBodies(collection: string, ids: string[]): Row[] {
    if (ids.length === 0) return [];
    return this.stmt(
      'SELECT id, body FROM docs WHERE collection = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY id',
    ).all(collection, JSON.stringify(ids)) as Row[];
  }

  /** Matching records in id order, after `afterId`, parsed chunk by chunk so callers can stop early. */
  private *matchesInIdOrder(
    collection: string,
    filter: Filter,
    candidateIds: Iterable<string> | undefined,
    afterId: string | undefined,
    chunkSize: number,
  ): Generator<Doc | typeof PAUSE> {
    const predicate = compileFilter(filter);
    const plan = planIndex(filter);
    let tested = 0;

    if (candidateIds !== undefined) {
      const sorted = [...new Set(candidateIds)].filter((id) => afterId === undefined || id > afterId).sort();
      const params: SqlParam[] = [];
      const conds = conditionsSql('x', plan.conditions, params);
      const test = plan.exact && conds.complete ? () => true : predicate;
      const sql =
        'SELECT x.id AS id, x.body AS body FROM docs x WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))' +
        conds.sql +
        ' ORDER BY x.id';
      for (let i = 0; i < sorted.length; i += chunkSize) {
        const rows = this.stmt(sql).all(
          collection,
          JSON.stringify(sorted.slice(i, i + chunkSize)),
          ...params,
        ) as Row[];
        for (const row of rows) {
          const doc = this.parse(row.body);
          if (test(doc)) yield doc;
          if ((++tested & PAUSE_EVERY) === 0) yield PAUSE;
        }
      }
      return;
    }

    let candidates = this.candidateIdSql(collection, plan);
    let test = plan.exact && candidates.complete ? () => true : predicate;
    if (!candidates.ordered && chunkSize < CHUNK && this.isBroad(collection, candidates.driver!)) {
      // A few matches of a broad range turn up sooner walking records in id order than
      // sorting every candidate id first.
      candidates = this.candidateIdSql(collection, { conditions: [], exact: false });
      test = predicate;
    }
    const { from, where, params, ordered } = candidates;
    const bodiesInline = from === 'docs x';

    if (!ordered) {
      // Sorting the candidates once beats re-sorting them for every chunk.
      const ids = (
        this.stmt(
          `SELECT DISTINCT x.id AS id FROM ${from} WHERE ${where.join(' AND ')} AND x.id > ? ORDER BY x.id`,
        ).all(...params, afterId ?? '') as Array<{ id: string }>
      ).map((r) => r.id);
      for (let i = 0; i < ids.length; i += chunkSize) {
        for (const row of this.loadBodies(collection, ids.slice(i, i + chunkSize))) {
          const doc = this.parse(row.body);
          if (test(doc)) yield doc;
          if ((++tested & PAUSE_EVERY) === 0) yield PAUSE;
        }
      }
      return;
    }

    const sql =
      `SELECT ${bodiesInline ? 'x.id AS id, x.body AS body' : 'DISTINCT x.id AS id'} FROM ${from} WHERE ${where.join(' AND ')}` +
      ' AND x.id > ? ORDER BY x.id LIMIT ?';
    let cursor = afterId ?? '';
    for (;;) {
      const rows = this.stmt(sql).all(...params, cursor, chunkSize) as Row[];
      if (rows.length === 0) return;
      const bodies = bodiesInline
        ? rows
        : this.loadBodies(
            collection,
            rows.map((r) => r.id),
          );
      for (const row of bodies) {
        const doc = this.parse(row.body);
        if (test(doc)) yield doc;
        if ((++tested & PAUSE_EVERY) === 0) yield PAUSE;
      }
      if (rows.length < chunkSize) return;
      cursor = rows[rows.length - 1]!.id;
    }
  }

  /**
   * A page sorted by one indexed path, read off that path's index entries in key order: a record's
   * key ascending is its smallest entry and descending its largest, which the walk meets first.
   * Records whose entries do not decide their key (attr_irregular) are parsed and merged in;
   * matches without entries sort as null. Only the page and the irregular records are parsed.
   * Undefined when the sort, the filter or a small match set makes another way cheaper, or when
   * the walk reads more rows than its budget before the page is complete.
   */
  private sortedPageFromIndex(
    collection: string,
    filter: Filter,
    sort: Sort,
    skip: number,
    limit: number | undefined,
  ): Doc[] | undefined {
    const keys = withIdTieBreaker(sort);
    if (limit === undefined || keys.length !== 2 || keys[1]![0] !== 'id' || keys[1]![1] !== 1)
      return undefined;
    const [path, direction] = keys[0]!;
    if (!INDEXED_PATHS.has(path)) return undefined;
    compileFilter(filter);
    const plan = planIndex(filter);
    if (Object.keys(filter).length > 0 && !plan.exact) return undefined;
    const params: SqlParam[] = [];
    const conds = conditionsSql('x', plan.conditions, params);
    if (!conds.complete) return undefined;
    if (plan.conditions.some((c) => this.estimate(collection, c) < SMALL_MATCH)) return undefined;
    const need = skip + limit;

    const parsed = new Map<string, Doc>();
    const irregularIds = (
      this.stmt(
        `SELECT x.id AS id FROM attr_irregular x WHERE x.collection = ? AND x.path = ?${conds.sql}`,
      ).all(collection, path, ...params) as Array<{ id: string }>
    ).map((r) => r.id);
    const irregular: SortItem[] = sortByKeys(
      this.loadBodies(collection, irregularIds).map((row) => {
        const doc = this.parse(row.body);
        parsed.set(row.id, doc);
        return { id: row.id, keys: [sortKeyOf(doc, path, direction), row.id] };
      }),
      keys,
    );
    const skipIds = new Set(irregularIds);

    // Matches with entries, in key order: the first row of a record carries its key. The walk
    // goes value by value (the next one is a seek), each value's rows in id order straight off
    // the primary key. Every row comes back, flagged with whether its record matches, so the
    // budget counts what the walk reads.
    const seen = new Set<string>();
    let walked = false;
    const [agg, cmp] = direction === 1 ? ['min', '>'] : ['max', '<'];
    const firstValue = this.stmt(
      `SELECT ${agg}(value) AS value FROM attr_index WHERE collection = ? AND path = ?`,
    );
    const nextValue = this.stmt(
      `SELECT ${agg}(value) AS value FROM attr_index WHERE collection = ? AND path = ? AND value ${cmp} ?`,
    );
    const rowsOfValue = this.stmt(
      `SELECT x.id AS id, (1${conds.sql}) AS matches FROM attr_index x` +
        ' WHERE x.collection = ? AND x.path = ? AND x.value = ? ORDER BY x.id',
    );
    const records =
      (
        this.stmt('SELECT count FROM collection_stats WHERE collection = ?').get(collection) as
          { count: number } | undefined
      )?.count ?? 0;
    function* withEntries(): Generator<SortItem> {
      let rows = 0;
      let hits = 0;
      let value = (firstValue.get(collection, path) as { value: IndexValue | null }).value;
      while (value !== null) {
        for (const row of rowsOfValue.iterate(...params, collection, path, value) as IterableIterator<{
          id: string;
          matches: number;
        }>) {
          // Rows still to read at the match rate so far, against the matches of the collection at it.
          if (++rows % WALK_CHECK === 0 && need * rows * rows > 4 * hits * hits * records)
            throw new WalkTooLong();
          // SQLite orders such ids by code point, JavaScript (and so the reference) by UTF-16 unit.
          if (ID_OUT_OF_ORDER.test(row.id)) throw new WalkTooLong();
          if (!row.matches) continue;
          hits++;
          if (skipIds.has(row.id) || seen.has(row.id)) continue;
          seen.add(row.id);
          yield { id: row.id, keys: [value, row.id] };
        }
        value = (nextValue.get(collection, path, value) as { value: IndexValue | null }).value;
      }
      walked = true;
    }
    // Matches without entries, in id order, once the merge reaches them.
    const withoutEntries = function* (this: SqliteDocumentStore): Generator<SortItem> {
      for (const id of this.matchesWithoutEntries(collection, path, plan, walked ? seen : undefined))
        if (!skipIds.has(id)) yield { id, keys: [null, id] };
    }.bind(this);
    const regular = (function* () {
      if (direction === 1) {
        yield* withoutEntries();
        yield* withEntries();
      } else {
        yield* withEntries();
        yield* withoutEntries();
      }
    })();

    const pageIds: string[] = [];
    try {
      let head: SortItem | undefined;
      let fetched = false;
      let next = 0;
      for (let emitted = 0; emitted < need; emitted++) {
        if (!fetched) {
          const r = regular.next();
          head = r.done ? undefined : r.value;
          fetched = true;
        }
        const other = irregular[next];
        let item: SortItem;
        if (head && (!other || compareKeys(head.keys, other.keys, keys) <= 0)) {
          item = head;
          fetched = false;
        } else if (other) {
          item = other;
          next++;
        } else break;
        if (emitted >= skip) pageIds.push(item.id);
      }
    } catch (err) {
      if (err instanceof WalkTooLong) return undefined;
      throw err;
    } finally {
      regular.return(undefined);
    }
    this.counters.sortedIndexWalks++;
    const missing = pageIds.filter((id) => !parsed.has(id));
    for (const row of this.loadBodies(collection, missing)) parsed.set(row.id, this.parse(row.body));
    return pageIds.map((id) => parsed.get(id)!);
  }

  /**
   * Ids of the matches of an index-decided filter without an entry at `path`, in id order.
   * `withEntries` is the set of matches with one when a walk has collected it already.
   */
  private matchesWithoutEntries(
    collection: string,
    path: string,
    plan: IndexPlan,
    withEntries: ReadonlySet<string> | undefined,
  ): string[] {
    const { from, where, params } = this.candidateIdSql(collection, plan);
    if (withEntries) {
      const ids = this.stmt(`SELECT DISTINCT x.id AS id FROM ${from} WHERE ${where.join(' AND ')}`).all(
        ...params,
      ) as Array<{ id: string }>;
      return ids
        .map((r) => r.id)
        .filter((id) => !withEntries.has(id))
        .sort();
    }
    const ids = this.stmt(
      `SELECT DISTINCT x.id AS id FROM ${from} WHERE ${where.join(' AND ')}` +
        ' AND x.id NOT IN (SELECT id FROM attr_index WHERE collection = ? AND path = ?)',
    ).all(...params, collection, path) as Array<{ id: string }>;
    return ids.map((r) => r.id).sort();
  }

  /**
   * A sorted page without parsing every match: when the index decides the filter exactly, sort
   * keys come from SQLite's JSON functions and only the page's records are parsed. A record
   * whose key path meets an array or object is parsed to follow MongoDB's array rules.
   * Undefined when the filter needs the full check on every record.
   */
  private sortedPageFromKeys(
    collection: string,
    filter: Filter,
    sort: Sort,
    skip: number,
    limit: number | undefined,
    candidateIds: Iterable<string> | undefined,
  ): Doc[] | undefined {
    compileFilter(filter);
    const plan = planIndex(filter);
    const empty = Object.keys(filter).length === 0;
    if (!empty && !plan.exact) return undefined;
    const keys = withIdTieBreaker(sort);
    const paths = keys.map(([p]) => p.split('.'));
    if (paths.some((segs) => segs.some((seg) => seg === '' || /["\\]/.test(seg)))) return undefined;
    const jsonPath = (segs: string[]) => '$' + segs.map((seg) => `."${seg}"`).join('');
    const columns: string[] = [];
    const pathParams: string[] = [];
    for (const segs of paths) {
      columns.push('json_extract(x.body, ?)');
      pathParams.push(jsonPath(segs));
      for (let i = 1; i <= segs.length; i++) {
        columns.push('json_type(x.body, ?)');
        pathParams.push(jsonPath(segs.slice(0, i)));
      }
    }
    const select = `SELECT x.id AS id, ${columns.map((c, i) => `${c} AS c${i}`).join(', ')} FROM docs x`;
    let rows: Array<Record<string, unknown>> = [];
    if (candidateIds !== undefined || plan.conditions.length > 0) {
      let ids: string[];
      if (candidateIds !== undefined) {
        const params: SqlParam[] = [];
        const conds = conditionsSql('x', plan.conditions, params);
        if (!empty && !conds.complete) return undefined;
        ids = [];
        const all = [...new Set(candidateIds)];
        const sql = `SELECT x.id AS id FROM docs x WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))${conds.sql}`;
        for (let i = 0; i < all.length; i += CHUNK * 10) {
          const found = this.stmt(sql).all(
            collection,
            JSON.stringify(all.slice(i, i + CHUNK * 10)),
            ...params,
          ) as Array<{ id: string }>;
          for (const r of found) ids.push(r.id);
        }
      } else {
        const { from, where, params, complete } = this.candidateIdSql(collection, plan);
        if (!complete) return undefined;
        ids = (
          this.stmt(`SELECT DISTINCT x.id AS id FROM ${from} WHERE ${where.join(' AND ')}`).all(
            ...params,
          ) as Array<{ id: string }>
        ).map((r) => r.id);
      }
      const sql = `${select} WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))`;
      for (let i = 0; i < ids.length; i += CHUNK * 10) {
        rows.push(
          ...(this.stmt(sql).all(
            ...pathParams,
            collection,
            JSON.stringify(ids.slice(i, i + CHUNK * 10)),
          ) as typeof rows),
        );
      }
    } else {
      rows = this.stmt(`${select} WHERE x.collection = ?`).all(...pathParams, collection) as typeof rows;
    }
    const items = rows.map((row) => {
      const id = row.id as string;
      const values: unknown[] = [];
      let col = 0;
      let parse = false;
      for (const segs of paths) {
        const value = row[`c${col++}`];
        let type: unknown = null;
        for (let i = 0; i < segs.length; i++) {
          type = row[`c${col++}`];
          if (type === 'array' || (type === 'object' && i === segs.length - 1)) parse = true;
        }
        values.push(type === null ? null : type === 'true' ? true : type === 'false' ? false : value);
      }
      return { id, keys: values, parse };
    });
    const needParse = items.filter((it) => it.parse);
    const pending = new Map(needParse.map((it) => [it.id, it]));
    if (needParse.length > 0) {
      for (const row of this.loadBodies(
        collection,
        needParse.map((it) => it.id),
      )) {
        const doc = this.parse(row.body);
        const item = pending.get(row.id)!;
        item.keys = keys.map(([p, dir]) => sortKeyOf(doc, p, dir));
      }
    }
    sortByKeys(items, keys);
    const pageIds = items.slice(skip, limit === undefined ? undefined : skip + limit).map((it) => it.id);
    const byId = new Map(this.loadBodies(collection, pageIds).map((r) => [r.id, r.body]));
    return pageIds.map((id) => this.parse(byId.get(id)!));
  }

  /**
   * Hands every match, in id order, to `visit` until it returns true, taking the scan's pauses
   * when a turn is due (see Turns). Not for use inside a transaction.
   */
  private async eachMatch(
    collection: string,
    filter: Filter,
    candidateIds: Iterable<string> | undefined,
    afterId: string | undefined,
    chunkSize: number,
    visit: (doc: Doc) => boolean | void,
  ): Promise<void> {
    const turns = new Turns();
    for (const doc of this.matchesInIdOrder(collection, filter, candidateIds, afterId, chunkSize)) {
      if (doc === PAUSE) {
        if (turns.due()) await turns.give();
      } else if (visit(doc)) return;
    }
  }

  async find(collection: string, filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    const skip = options.skip ?? 0;
    const limit = options.limit && options.limit > 0 ? options.limit : undefined;
    if (skip < 0) throw new BadRequest('skip must not be negative');
    const project = compileProjection(options.projection);
    const sort = options.sort && options.sort.length > 0 ? options.sort : undefined;
    const idOrder = !sort || (sort.length === 1 && sort[0]![0] === 'id' && sort[0]![1] === 1);

    if (idOrder) {
      const need = limit === undefined ? Infinity : skip + limit;
      const chunk = Math.min(CHUNK, Math.max(need === Infinity ? CHUNK : need, 32));
      const out: Doc[] = [];
      let seen = 0;
      await this.eachMatch(collection, filter, options.candidateIds, options.afterId, chunk, (doc) => {
        if (seen++ >= skip) out.push(project(doc));
        return seen >= need;
      });
      return out;
    }

    const fast =
      options.afterId === undefined &&
      ((options.candidateIds === undefined &&
        this.sortedPageFromIndex(collection, filter, sort!, skip, limit)) ||
        this.sortedPageFromKeys(collection, filter, sort!, skip, limit, options.candidateIds));
    if (fast) return fast.map(project);
    const all: Doc[] = [];
    await this.eachMatch(collection, filter, options.candidateIds, options.afterId, CHUNK, (doc) => {
      all.push(doc);
    });
    sortDocs(all, sort!);
    const page = all.slice(skip, limit === undefined ? undefined : skip + limit);
    return page.map(project);
  }

  async count(collection: string, filter: Filter, candidateIds?: Iterable<string>): Promise<number> {
    const plan = planIndex(filter);
    const empty = Object.keys(filter).length === 0;
    if (candidateIds === undefined) {
      if (empty) {
        const row = this.stmt('SELECT count FROM collection_stats WHERE collection = ?').get(collection) as
          { count: number } | undefined;
        return row?.count ?? 0;
      }
      const exact = plan.exact ? this.candidateIdSql(collection, plan) : undefined;
      if (exact?.complete) {
        compileFilter(filter); // same validation as every other read
        const { from, where, params } = exact;
        const row = this.stmt(
          `SELECT count(DISTINCT x.id) AS n FROM ${from} WHERE ${where.join(' AND ')}`,
        ).get(...params) as {
          n: number;
        };
        return row.n;
      }
    } else if (empty || (plan.exact && conditionsSql('x', plan.conditions, []).complete)) {
      compileFilter(filter);
      const ids = [...new Set(candidateIds)];
      const params: SqlParam[] = [];
      const conds = conditionsSql('x', plan.conditions, params);
      const sql =
        'SELECT count(*) AS n FROM docs x WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))' +
        conds.sql;
      let n = 0;
      for (let i = 0; i < ids.length; i += CHUNK * 10) {
        n += (
          this.stmt(sql).get(collection, JSON.stringify(ids.slice(i, i + CHUNK * 10)), ...params) as {
            n: number;
          }
        ).n;
      }
      return n;
    }
    let n = 0;
    await this.eachMatch(collection, filter, candidateIds, undefined, CHUNK, () => {
      n++;
    });
    return n;
  }

  async upsertMany(collection: string, docs: Doc[]): Promise<WriteResult> {
    const clean = cleanDocs(docs);
    return this.db.transaction(() => this.upsertInTransaction(collection, clean)).immediate();
  }

  async upsertAtomically(writes: Array<{ collection: string; docs: Doc[] }>): Promise<WriteResult> {
    const cleaned = writes.map((w) => ({ collection: w.collection, docs: cleanDocs(w.docs) }));
    return this.db
      .transaction((): WriteResult => {
        const total = { inserted: 0, updated: 0 };
        for (const { collection, docs } of cleaned) {
          const r = this.upsertInTransaction(collection, docs);
          total.inserted += r.inserted;
          total.updated += r.updated;
        }
        return total;
      })
      .immediate();
  }

  async insertIfAbsent(collection: string, doc: Doc): Promise<boolean> {
    const [clean] = cleanDocs([doc]);
    const exists = this.stmt('SELECT 1 FROM docs WHERE collection = ? AND id = ?');
    return this.db
      .transaction((): boolean => {
        if (exists.get(collection, clean!.id)) return false;
        this.upsertInTransaction(collection, [clean!]);
        return true;
      })
      .immediate();
  }

  /** Upserts inside the caller's transaction: records, attribute index, change log, statistics, hooks. */
  private upsertInTransaction(collection: string, clean: Doc[]): WriteResult {
    const existing = this.stmt('SELECT body, size FROM docs WHERE collection = ? AND id = ?');
    const insertChange = this.stmt('INSERT INTO changes(collection, id, deleted) VALUES (?, ?, 0)');
    const insertDoc = this.stmt('INSERT INTO docs(collection, id, body, size, seq) VALUES (?, ?, ?, ?, ?)');
    const updateDoc = this.stmt(
      'UPDATE docs SET body = ?, size = ?, seq = ? WHERE collection = ? AND id = ?',
    );
    const insertAttr = this.stmt(
      'INSERT OR IGNORE INTO attr_index(collection, path, value, id) VALUES (?, ?, ?, ?)',
    );
    const insertIrregular = this.stmt(
      'INSERT OR IGNORE INTO attr_irregular(collection, path, id) VALUES (?, ?, ?)',
    );
    {
      let inserted = 0;
      let updated = 0;
      let sizeDelta = 0;
      const changed: Doc[] = [];
      for (const doc of clean) {
        const body = JSON.stringify(doc);
        const size = Buffer.byteLength(body);
        const before = existing.get(collection, doc.id) as { body: string; size: number } | undefined;
        if (before) {
          updated++;
          // Rewriting an identical record would only churn pages, the change log and the index.
          if (before.body === body) continue;
          const seq = Number(insertChange.run(collection, doc.id).lastInsertRowid);
          updateDoc.run(body, size, seq, collection, doc.id);
          const { entries, irregular } = indexRecord(doc);
          const keep = new Set(entries.map(([p, v]) => `${p}\u0000${typeof v}\u0000${v}`));
          const old = indexRecord(this.parse(before.body));
          for (const [p, v] of old.entries) {
            if (!keep.has(`${p}\u0000${typeof v}\u0000${v}`)) this.deleteAttr(collection, p, v, doc.id);
          }
          for (const p of old.irregular)
            if (!irregular.includes(p)) this.deleteIrregular(collection, p, doc.id);
          for (const [p, v] of entries) insertAttr.run(collection, p, v, doc.id);
          for (const p of irregular) insertIrregular.run(collection, p, doc.id);
          sizeDelta += size - before.size;
        } else {
          inserted++;
          const seq = Number(insertChange.run(collection, doc.id).lastInsertRowid);
          insertDoc.run(collection, doc.id, body, size, seq);
          const { entries, irregular } = indexRecord(doc);
          for (const [p, v] of entries) insertAttr.run(collection, p, v, doc.id);
          for (const p of irregular) insertIrregular.run(collection, p, doc.id);
          sizeDelta += size;
        }
        changed.push(doc);
      }
      this.adjustStats(collection, inserted, sizeDelta);
      if (changed.length > 0) for (const hook of this.hooks) hook.onUpsert(collection, changed);
      return { inserted, updated };
    }
  }

  private deleteAttr(collection: string, path: string, value: IndexValue, id: string): void {
    this.stmt('DELETE FROM attr_index WHERE collection = ? AND path = ? AND value = ? AND id = ?').run(
      collection,
      path,
      value,
      id,
    );
  }

  private deleteIrregular(collection: string, path: string, id: string): void {
    this.stmt('DELETE FROM attr_irregular WHERE collection = ? AND path = ? AND id = ?').run(
      collection,
      path,
      id,
    );
  }

  private adjustStats(collection: string, countDelta: number, sizeDelta: number): void {
    this.stmt(
      'INSERT INTO collection_stats(collection, count, size) VALUES (?, ?, ?) ' +
        'ON CONFLICT(collection) DO UPDATE SET count = count + excluded.count, size = size + excluded.size',
    ).run(collection, countDelta, sizeDelta);
  }

  async deleteMany(collection: string, filter: Filter, limit?: number): Promise<string[]> {
    const max = limit && limit > 0 ? limit : Infinity;
    const removeDoc = this.stmt('DELETE FROM docs WHERE collection = ? AND id = ? RETURNING size');
    const insertChange = this.stmt('INSERT INTO changes(collection, id, deleted) VALUES (?, ?, 1)');
    const remove = this.db.transaction((): string[] => {
      const victims: Doc[] = [];
      for (const doc of this.matchesInIdOrder(collection, filter, undefined, undefined, CHUNK)) {
        if (doc === PAUSE) continue; // inside a transaction: no turns
        victims.push(doc);
        if (victims.length >= max) break;
      }
      const ids = victims.map((d) => d.id);
      let sizeDelta = 0;
      for (const doc of victims) {
        const row = removeDoc.get(collection, doc.id) as { size: number } | undefined;
        sizeDelta -= row?.size ?? 0;
        const { entries, irregular } = indexRecord(doc);
        for (const [p, v] of entries) this.deleteAttr(collection, p, v, doc.id);
        for (const p of irregular) this.deleteIrregular(collection, p, doc.id);
        insertChange.run(collection, doc.id);
      }
      if (ids.length > 0) {
        this.adjustStats(collection, -ids.length, sizeDelta);
        for (const hook of this.hooks) hook.onDelete(collection, ids);
      }
      return ids;
    });
    return remove.immediate();
  }

  /**
   * Bytes the file spends on record pages and on everything else (indexes, change log, state).
   * An O(1) estimate from page counts: walking the b-trees (dbstat) takes seconds on a large file.
   */
  private pageSizes(totalBodyBytes: number): { docs: number; indexes: number } {
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    const pages = this.db.pragma('page_count', { simple: true }) as number;
    const free = this.db.pragma('freelist_count', { simple: true }) as number;
    const used = (pages - free) * pageSize;
    // Record pages carry the bodies plus b-tree and cell overhead, roughly a tenth.
    const docs = Math.min(used, Math.round(totalBodyBytes * 1.1));
    return { docs, indexes: used - docs };
  }

  async collectionStats(): Promise<CollectionStats[]> {
    const rows = this.stmt(
      'SELECT collection, count, size FROM collection_stats WHERE count > 0 ORDER BY collection',
    ).all() as Array<{
      collection: string;
      count: number;
      size: number;
    }>;
    const totalSize = rows.reduce((s, r) => s + r.size, 0) || 1;
    const totalCount = rows.reduce((s, r) => s + r.count, 0) || 1;
    const pages = this.pageSizes(totalSize);
    return rows.map((r) => {
      const storageSize = Math.round((pages.docs * r.size) / totalSize);
      const totalIndexSize = Math.round((pages.indexes * r.count) / totalCount);
      return {
        collection: r.collection,
        count: r.count,
        size: r.size,
        avgObjSize: r.count ? Math.round(r.size / r.count) : 0,
        storageSize,
        totalIndexSize,
        totalSize: storageSize + totalIndexSize,
      };
    });
  }

  async changesSince(sinceSeq: number): Promise<ChangePage> {
    if (sinceSeq < this.prunedThrough()) {
      return { changes: [], seq: await this.latestSeq(), gap: true };
    }
    const rows = this.stmt(
      'SELECT seq, collection, id, deleted FROM changes WHERE seq > ? ORDER BY seq LIMIT ?',
    ).all(sinceSeq, CHANGES_PAGE) as Array<{ seq: number; collection: string; id: string; deleted: number }>;
    const latest = new Map<string, { collection: string; id: string; deleted: boolean }>();
    for (const r of rows) {
      const key = `${r.collection}\u0000${r.id}`;
      latest.delete(key);
      latest.set(key, { collection: r.collection, id: r.id, deleted: r.deleted === 1 });
    }
    let seq = sinceSeq;
    if (rows.length > 0) seq = rows[rows.length - 1]!.seq;
    else {
      const max = (this.stmt('SELECT max(seq) AS m FROM changes').get() as { m: number | null }).m;
      seq = Math.max(sinceSeq, max ?? 0);
    }
    return { changes: [...latest.values()], seq };
  }

  async latestSeq(): Promise<number> {
    return (this.stmt('SELECT max(seq) AS m FROM changes').get() as { m: number | null }).m ?? 0;
  }

  async *scan(collection: string, batchSize = 1000): AsyncIterable<Doc[]> {
    for await (const texts of this.scanTexts(collection, batchSize)) yield texts.map((t) => this.parse(t));
  }

  async *scanTexts(collection: string, batchSize = 1000): AsyncIterable<string[]> {
    let cursor = '';
    for (;;) {
      const rows = this.stmt(
        'SELECT id, body FROM docs WHERE collection = ? AND id > ? ORDER BY id LIMIT ?',
      ).all(collection, cursor, batchSize) as Row[];
      if (rows.length === 0) return;
      yield rows.map((r) => r.body);
      if (rows.length < batchSize) return;
      cursor = rows[rows.length - 1]!.id;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweepTimer);
    this.statements.clear();
    this.db.close();
  }
}

export type { IndexValue };
