/**
 * The bulk write path of the embedded store, as PostgreSQL's `COPY` then `CREATE INDEX`: records
 * are written first, in large transactions of their own (no write hooks, so no search or edge
 * index work per row), and the indexes derived from them are built afterwards in one pass each:
 * first the attribute index (attr_index, attr_irregular) from the entries set aside while writing
 * (a temporary table), inserted in key order in one statement; then whatever derived indexes the
 * caller names (the FTS5 search index, the provenance edges), from the records. Inserting each
 * batch's entries with the batch instead costs the same at 10^5 records but not at 10^6: the
 * index outgrows the page cache, and every commit rewrites most of its pages.
 *
 * The loader's semantics are kept: upsert by id, identical rewrites skipped, a change-log row per
 * written record (another process may keep an index caught up from it), exact collection_stats.
 *
 * When to use it (`prefersBulkLoad`): when at least BULK_MIN_RECORDS records of a collection are at
 * hand and the collection holds fewer than a quarter as many. Rebuilding a collection's derived
 * indexes then costs about as much as the load itself; for a small load into a large collection
 * the transactional upsert (indexes written row by row) is cheaper and stays the path.
 *
 * Nothing may be left stale if the process dies mid-way: `meta` says a bulk load is under way, in
 * which process and for which collections, from before its first record is written until every
 * index is built (each write transaction asserts it again). `finishInterruptedBulkLoad` (run on
 * open, before serving) rebuilds the indexes of the collections of loads whose process is gone,
 * from the records, and clears their marks; a load still running in another process is left to
 * finish its own. Until it does, another process reading the file finds that load's records
 * but not their index entries (attribute, search, edges): a bulk load is for filling a store, not
 * for a store in service.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { Doc, WriteResult } from '../port.ts';
import { cleanDocs } from '../clean-docs.ts';
import {
  AttributeKeys,
  indexRecord,
  coveredPaths,
  type IndexValue,
  type RecordIndex,
} from './attribute-index.ts';
import { StatementCache } from './statement-cache.ts';

/** The `meta` key holding the collections of a bulk load under way (JSON). */
export const BULK_LOAD_KEY = 'bulk_load';
/** Records of a collection at hand before the bulk path is considered. */
export const BULK_MIN_RECORDS = 5000;
/** Records per transaction of the bulk write. */
export const BULK_BATCH = 10_000;
/**
 * Page cache of the store's connection while a bulk load writes, KiB. Each batch's attribute
 * entries land all over the attribute index (a million biosamples make nine million entries,
 * over 500 MiB): with the store's usual 64 MiB most inserts would read a page from disk first.
 */
const BULK_CACHE_KIB = 2 * 1024 * 1024;

/** What the bulk path needs of the embedded store: its connection (SQL on its tables). */
export interface BulkLoadableStore {
  readonly engine: string;
  readonly db: Database;
}

export function isBulkLoadable(store: { engine: string }): store is BulkLoadableStore {
  return store.engine === 'sqlite' && (store as Partial<BulkLoadableStore>).db !== undefined;
}

/** The bulk path's rule (see the module comment). */
export function prefersBulkLoad(stored: number, atHand: number): boolean {
  return atHand >= BULK_MIN_RECORDS && stored * 4 < atHand;
}

/** Rebuilds indexes derived from the records (search, edges) of the collections given, from the store. */
export type DerivedIndexBuild = (collections: string[]) => Promise<void>;

/** Records a collection holds (collection_stats, exact). */
export function storedCount(db: Database, collection: string): number {
  return (
    (db.prepare('SELECT count FROM collection_stats WHERE collection = ?').pluck().get(collection) as
      number | undefined) ?? 0
  );
}

/** A bulk load under way: the process writing it, and its collections. */
interface Mark {
  load: string;
  pid: number;
  collections: string[];
}

function marks(db: Database): Mark[] {
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(BULK_LOAD_KEY) as
    string | undefined;
  return row === undefined ? [] : (JSON.parse(row) as { loads: Mark[] }).loads;
}

function setMarks(db: Database, loads: Mark[]): void {
  if (loads.length === 0) db.prepare('DELETE FROM meta WHERE key = ?').run(BULK_LOAD_KEY);
  else
    db.prepare(
      'INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    ).run(BULK_LOAD_KEY, JSON.stringify({ loads }));
}

/** Loads of this process that have not finished: their marks are not an interrupted load's. */
const runningHere = new Set<string>();

/** Whether the load a mark names may still finish: its process runs (and, here, the load does). */
function isRunning(mark: Mark): boolean {
  if (mark.pid === process.pid) return runningHere.has(mark.load);
  try {
    process.kill(mark.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // alive, another user's
  }
}

/** The collections of bulk loads whose process is gone before they finished (none: undefined). */
export function pendingBulkLoad(db: Database): string[] | undefined {
  const dead = marks(db).filter((m) => !isRunning(m));
  return dead.length === 0 ? undefined : [...new Set(dead.flatMap((m) => m.collections))].sort();
}

/** Attribute entries set aside until `finish`, with the change seq of the version they are of. */
const SET_ASIDE = `
  CREATE TEMP TABLE IF NOT EXISTS bulk_attr (key INTEGER NOT NULL, value NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL);
  CREATE TEMP TABLE IF NOT EXISTS bulk_irregular (key INTEGER NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL);
`;
/**
 * Sets aside entries given as JSON `[key, value, id, seq]` rows. A JSON integer is made REAL:
 * that is how the transactional path binds a JS number, so both store the same values.
 */
const SET_ASIDE_ENTRIES =
  'INSERT INTO temp.bulk_attr(key, value, id, seq) SELECT value ->> 0, ' +
  "CASE json_type(value, '$[1]') WHEN 'integer' THEN CAST(value ->> 1 AS REAL) ELSE value ->> 1 END, " +
  'value ->> 2, value ->> 3 FROM json_each(?)';
const SET_ASIDE_IRREGULAR =
  'INSERT INTO temp.bulk_irregular(key, id, seq) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)';
const ADD_RECORDS = 'UPDATE attr_paths SET records = records + ? WHERE key = ?';

/**
 * Moves the entries set aside into the attribute index in key order, so its b-tree is appended to
 * rather than split at random. With `latestOnly`, entries of a version written over since are
 * left out (a record written twice in one load).
 */
function moveAsideEntries(db: Database, latestOnly: boolean): void {
  const latest = latestOnly
    ? ' JOIN attr_paths p ON p.key = b.key JOIN docs d ON d.collection = p.collection AND d.id = b.id AND d.seq = b.seq'
    : '';
  db.exec(
    'INSERT OR IGNORE INTO attr_index(key, value, id) ' +
      `SELECT b.key, b.value, b.id FROM temp.bulk_attr b${latest} ORDER BY 1, 2, 3; ` +
      'INSERT OR IGNORE INTO attr_irregular(key, id) ' +
      `SELECT b.key, b.id FROM temp.bulk_irregular b${latest} ORDER BY 1, 2; ` +
      'DELETE FROM temp.bulk_attr; DELETE FROM temp.bulk_irregular;',
  );
}

/**
 * Writes a collection's records again in id order, so that their rowids, the order the records
 * table keeps them in, follow their ids (PostgreSQL's CLUSTER). A bulk load writes records in the
 * order they come, and a walk in id order (a listing's page, a search's walk, the derived index
 * builds after the load) then reads each record from another page of the table. At 10^6
 * biosamples, 600 records in id order read in 547 us before and 107 us after, and a GLOB over
 * their text in 732 us and 286 us. One transaction, about 40 s at 10^6 (a death rolls it back,
 * leaving the records as written); records written later go at the table's end as before.
 */
function clusterById(db: Database, collection: string): void {
  db.transaction(() => {
    db.exec('DROP TABLE IF EXISTS temp.bulk_clustered');
    db.prepare(
      'CREATE TEMP TABLE bulk_clustered AS SELECT id, body, size, seq FROM docs WHERE collection = ? ORDER BY id',
    ).run(collection);
    db.prepare('DELETE FROM docs WHERE collection = ?').run(collection);
    db.prepare(
      'INSERT INTO docs(collection, id, body, size, seq) ' +
        'SELECT ?, id, body, size, seq FROM temp.bulk_clustered ORDER BY rowid',
    ).run(collection);
    db.exec('DROP TABLE temp.bulk_clustered');
  }).immediate();
}

/** Rows read per page when a collection's attribute index is rebuilt from its records. */
const REBUILD_PAGE = 2000;

/** Rebuilds a collection's attribute index from its records (a bulk load died before `finish`). */
export function rebuildAttributeIndex(db: Database, collection: string): void {
  db.exec(SET_ASIDE);
  const keys = new AttributeKeys(new StatementCache(db));
  const page = db.prepare('SELECT id, body FROM docs WHERE collection = ? AND id > ? ORDER BY id LIMIT +?');
  const entries = db.prepare(SET_ASIDE_ENTRIES);
  const irregular = db.prepare(SET_ASIDE_IRREGULAR);
  const addRecords = db.prepare(ADD_RECORDS);
  db.transaction(() => {
    db.exec('DELETE FROM temp.bulk_attr; DELETE FROM temp.bulk_irregular;');
    const ofCollection = 'SELECT key FROM attr_paths WHERE collection = ?';
    db.prepare(`DELETE FROM attr_index WHERE key IN (${ofCollection})`).run(collection);
    db.prepare(`DELETE FROM attr_irregular WHERE key IN (${ofCollection})`).run(collection);
    db.prepare('UPDATE attr_paths SET records = 0 WHERE collection = ?').run(collection);
    const records = new Map<number, number>();
    let after = '';
    for (;;) {
      const rows = page.all(collection, after, REBUILD_PAGE) as Array<{ id: string; body: string }>;
      const batch = new Map(rows.map((r) => [r.id, indexRecord(JSON.parse(r.body) as Doc)]));
      const aside = setAside(keys, collection, batch, () => 0, records);
      if (aside.entries.length > 0) entries.run(JSON.stringify(aside.entries));
      if (aside.irregular.length > 0) irregular.run(JSON.stringify(aside.irregular));
      if (rows.length < REBUILD_PAGE) break;
      after = rows[rows.length - 1]!.id;
    }
    for (const [key, n] of records) addRecords.run(n, key);
    moveAsideEntries(db, false);
  }).immediate();
}

/**
 * The rows `SET_ASIDE_*` take for the entries of records (by id); adds to `records` (by key), when
 * given, one for each record covered at the key's path (`coveredPaths`).
 */
function setAside(
  keys: AttributeKeys,
  collection: string,
  indexed: Map<string, RecordIndex>,
  seqOf: (id: string) => number,
  records?: Map<number, number>,
): {
  entries: Array<[number, IndexValue, string, number]>;
  irregular: Array<[number, string, number]>;
} {
  const entries: Array<[number, IndexValue, string, number]> = [];
  const irregular: Array<[number, string, number]> = [];
  for (const [id, r] of indexed) {
    const seq = seqOf(id);
    for (const [p, v] of r.entries) entries.push([keys.ensure(collection, p), v, id, seq]);
    for (const p of r.irregular) irregular.push([keys.ensure(collection, p), id, seq]);
    if (records) {
      for (const p of coveredPaths(r)) {
        const key = keys.ensure(collection, p);
        records.set(key, (records.get(key) ?? 0) + 1);
      }
    }
  }
  return { entries, irregular };
}

/**
 * One bulk load: `write` batches of records of any collections, then `finish` once. If the
 * process dies before `finish` returns, the mark it leaves makes the next open rebuild.
 */
export class SqliteBulkLoad {
  private readonly db: Database;
  private readonly collections: string[] = [];
  private readonly mark: Mark;
  private readonly statements: Record<
    | 'existing'
    | 'change'
    | 'insertDoc'
    | 'updateDoc'
    | 'entries'
    | 'irregular'
    | 'deleteAttr'
    | 'deleteIrregular'
    | 'addRecords'
    | 'stats',
    Statement
  >;
  private finished = false;
  /** Ids written by this load, per collection; `rewritten` once one of them is written again. */
  private readonly written = new Map<string, Set<string>>();
  private rewritten = false;
  /** The page cache setting the load replaced, put back by `finish`. */
  private readonly cacheBefore: number;
  private readonly keys: AttributeKeys;

  /**
   * @param owner the process the mark names (default this one; a test names one that is gone to
   *   stand for a load whose process died).
   */
  constructor(store: BulkLoadableStore, owner = process.pid) {
    this.db = store.db;
    if (pendingBulkLoad(this.db) !== undefined)
      throw new Error('an interrupted bulk load must be finished first (finishInterruptedBulkLoad)');
    this.mark = { load: `${process.pid}.${Date.now()}.${Math.random()}`, pid: owner, collections: [] };
    runningHere.add(this.mark.load);
    const db = this.db;
    this.cacheBefore = db.pragma('cache_size', { simple: true }) as number;
    db.pragma(`cache_size = -${BULK_CACHE_KIB}`);
    db.exec(SET_ASIDE);
    db.exec('DELETE FROM temp.bulk_attr; DELETE FROM temp.bulk_irregular;');
    this.keys = new AttributeKeys(new StatementCache(db));
    this.statements = {
      existing: db.prepare('SELECT body, size FROM docs WHERE collection = ? AND id = ?'),
      change: db.prepare('INSERT INTO changes(collection, id, deleted) VALUES (?, ?, 0)'),
      insertDoc: db.prepare('INSERT INTO docs(collection, id, body, size, seq) VALUES (?, ?, ?, ?, ?)'),
      updateDoc: db.prepare('UPDATE docs SET body = ?, size = ?, seq = ? WHERE collection = ? AND id = ?'),
      entries: db.prepare(SET_ASIDE_ENTRIES),
      irregular: db.prepare(SET_ASIDE_IRREGULAR),
      deleteAttr: db.prepare('DELETE FROM attr_index WHERE key = ? AND value = ? AND id = ?'),
      deleteIrregular: db.prepare('DELETE FROM attr_irregular WHERE key = ? AND id = ?'),
      addRecords: db.prepare(ADD_RECORDS),
      stats: db.prepare(
        'INSERT INTO collection_stats(collection, count, size) VALUES (?, ?, ?) ' +
          'ON CONFLICT(collection) DO UPDATE SET count = count + excluded.count, size = size + excluded.size',
      ),
    };
  }

  /**
   * Upserts records of one collection in one transaction: records, change log and statistics;
   * the attribute entries are set aside for `finish`, the old entries of a replaced record go now.
   * No write hook runs.
   */
  write(collection: string, docs: Doc[]): WriteResult {
    if (this.finished) throw new Error('this bulk load has finished');
    const clean = cleanDocs(docs);
    const s = this.statements;
    return this.db
      .transaction((): WriteResult => {
        if (!this.collections.includes(collection)) this.collections.push(collection);
        // Asserted in every write: a recovery in another process may have cleared it meanwhile.
        const all = marks(this.db);
        const mine = all.find((m) => m.load === this.mark.load);
        if (mine?.collections.length !== this.collections.length) {
          this.mark.collections = [...this.collections];
          setMarks(this.db, [...all.filter((m) => m.load !== this.mark.load), this.mark]);
        }
        let inserted = 0;
        let updated = 0;
        let sizeDelta = 0;
        // The entries of each record's last version in the batch, and the seq of that version.
        const indexed = new Map<string, RecordIndex>();
        const seqs = new Map<string, number>();
        // Records covered (coveredPaths), by key: the versions written less the versions they replace.
        const records = new Map<number, number>();
        const keys = this.keys;
        let written = this.written.get(collection);
        if (!written) this.written.set(collection, (written = new Set()));
        for (const doc of clean) {
          const body = JSON.stringify(doc);
          const size = Buffer.byteLength(body);
          const before = s.existing.get(collection, doc.id) as { body: string; size: number } | undefined;
          const seq = () => {
            const n = Number(s.change.run(collection, doc.id).lastInsertRowid);
            seqs.set(doc.id, n);
            return n;
          };
          if (before) {
            updated++;
            // Rewriting an identical record would only churn pages, the change log and the indexes.
            if (before.body === body) continue;
            if (written.has(doc.id)) this.rewritten = true;
            s.updateDoc.run(body, size, seq(), collection, doc.id);
            const old = indexRecord(JSON.parse(before.body) as Doc);
            for (const [p, v] of old.entries) s.deleteAttr.run(keys.get(collection, p), v, doc.id);
            for (const p of old.irregular) s.deleteIrregular.run(keys.get(collection, p), doc.id);
            for (const p of coveredPaths(old)) {
              const key = keys.get(collection, p);
              records.set(key, (records.get(key) ?? 0) - 1);
            }
            sizeDelta += size - before.size;
          } else {
            inserted++;
            s.insertDoc.run(collection, doc.id, body, size, seq());
            sizeDelta += size;
          }
          written.add(doc.id);
          const index = indexRecord(doc);
          indexed.set(doc.id, index);
          for (const p of coveredPaths(index)) {
            const key = keys.ensure(collection, p);
            records.set(key, (records.get(key) ?? 0) + 1);
          }
        }
        const { entries, irregular } = setAside(keys, collection, indexed, (id) => seqs.get(id)!);
        if (entries.length > 0) s.entries.run(JSON.stringify(entries));
        if (irregular.length > 0) s.irregular.run(JSON.stringify(irregular));
        for (const [key, n] of records) if (n !== 0) s.addRecords.run(n, key);
        s.stats.run(collection, inserted, sizeDelta);
        return { inserted, updated };
      })
      .immediate();
  }

  /** Builds the attribute index, then the derived indexes of the loaded collections, then clears the mark. */
  async finish(buildDerived: DerivedIndexBuild): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    this.written.clear();
    try {
      for (const collection of this.collections) clusterById(this.db, collection);
      this.db.transaction(() => moveAsideEntries(this.db, this.rewritten)).immediate();
      if (this.collections.length > 0) await buildDerived(this.collections);
      clearMarks(this.db, (m) => m.load === this.mark.load);
    } finally {
      // Failed: the mark stays, and the next open finishes the load.
      runningHere.delete(this.mark.load);
      this.db.pragma(`cache_size = ${this.cacheBefore}`);
    }
  }
}

function clearMarks(db: Database, cleared: (m: Mark) => boolean): void {
  db.transaction(() =>
    setMarks(
      db,
      marks(db).filter((m) => !cleared(m)),
    ),
  ).immediate();
}

/**
 * Finishes a bulk load that did not (the process died): rebuilds the attribute index and the
 * derived indexes of its collections from the records, then clears the mark. Returns the
 * collections rebuilt (none: nothing was pending).
 */
export async function finishInterruptedBulkLoad(
  store: BulkLoadableStore,
  buildDerived: DerivedIndexBuild,
): Promise<string[]> {
  const dead = marks(store.db).filter((m) => !isRunning(m));
  if (dead.length === 0) return [];
  const collections = [...new Set(dead.flatMap((m) => m.collections))].sort();
  for (const collection of collections) rebuildAttributeIndex(store.db, collection);
  await buildDerived(collections);
  const finished = new Set(dead.map((m) => m.load));
  clearMarks(store.db, (m) => finished.has(m.load));
  return collections;
}
