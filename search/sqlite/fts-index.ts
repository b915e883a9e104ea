/**
 * The embedded search index: SQLite FTS5 tables in the store's own file.
 *
 * Metadata repeats itself (ontology terms, ecosystem names, class names, units), so each distinct
 * string is tokenized once: `search_strings` holds it, and a contentless FTS5 table indexes it
 * under the same rowid, `search_trigram` (trigram tokenizer, case-insensitive). It answers regex,
 * substring and word predicates alike (a word holds its trigrams). `search_values` maps an owner
 * and a dotted path to the strings held there, all as integer keys (`search_records`,
 * `search_paths`). A query runs the FTS5 MATCH on strings, then follows the map to record ids,
 * keeping the predicate's path.
 *
 * Records of a study repeat most of their pairs (ecosystem, ontology terms, site, units). The
 * pairs that recur together in a written batch are kept once per distinct set, as a group
 * (`search_groups`, see `prepared-batch.ts`): the map's owner is then minus the group's key, and
 * each member record points at its group (`search_records.grp`). A generated biosample has 37
 * pairs; it costs 9 map rows and a pointer instead of 37 rows, and map rows set the build rate.
 *
 * The store's write hook keeps the map in step with the records inside the same transaction, so
 * the index is never behind. A record written again keeps its key, and only the rows that differ
 * are written or deleted. Strings and groups no record uses any more are harmless (they lead to
 * no id) and are pruned at the end of a rebuild.
 *
 * A rebuild renews an indexed collection in place: every record is derived again from the source
 * of truth and its rows made exact, so on an exact index it only reads. Worker threads
 * (`preparer.ts`) parse and prepare the batches and look up the keys of strings already indexed,
 * which this thread trusts only if no string was removed in between (`strings-generation.ts`);
 * this thread writes.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { Doc } from '../../src/store/port.ts';
import { StatementCache } from '../../src/store/sqlite/statement-cache.ts';
import type { Candidates, IndexablePredicate, SearchIndex } from '../port.ts';
import { fingerprintOf, indexedPathScope, wellFormed } from '../indexed-values.ts';
import { prepareBatch, type PreparedBatch } from './prepared-batch.ts';
import { WorkerPreparer } from './preparer.ts';
import { STRINGS_GENERATION } from './strings-generation.ts';
import { trigramQueryOfPredicate } from '../predicates.ts';
import type { TrigramQuery } from '../regex/trigram-query.ts';
import { WORD_PATTERN } from '../words.ts';
import { isCollectionName } from '../../src/schema/nmdc.ts';

const BY_STRING_INDEX =
  'CREATE INDEX IF NOT EXISTS search_values_by_string ON search_values(string, path, record)';
const BY_GROUP_INDEX = 'CREATE INDEX IF NOT EXISTS search_records_by_group ON search_records(grp)';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS search_strings (
    rowid INTEGER PRIMARY KEY,
    value TEXT NOT NULL UNIQUE
  );
  CREATE VIRTUAL TABLE IF NOT EXISTS search_trigram USING fts5(
    value, content = '', contentless_delete = 1, tokenize = 'trigram case_sensitive 0'
  );
  CREATE VIRTUAL TABLE IF NOT EXISTS search_trigram_vocab USING fts5vocab(search_trigram, 'row');
  CREATE TRIGGER IF NOT EXISTS search_strings_added AFTER INSERT ON search_strings BEGIN
    INSERT INTO search_trigram(rowid, value) VALUES (new.rowid, new.value);
  END;
  CREATE TABLE IF NOT EXISTS search_records (
    rowid INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    grp INTEGER,
    UNIQUE (collection, id)
  );
  -- A distinct set of recurring pairs, found by a hash of its pairs.
  CREATE TABLE IF NOT EXISTS search_groups (
    rowid INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    hash TEXT NOT NULL,
    UNIQUE (collection, hash)
  );
  CREATE TABLE IF NOT EXISTS search_paths (
    rowid INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE
  );
  -- Integer keys only: this table has a row per (owner, path, string) and its write cost sets the build rate.
  -- The owner (column "record") is a search_records key, or minus a search_groups key.
  CREATE TABLE IF NOT EXISTS search_values (
    record INTEGER NOT NULL,
    path INTEGER NOT NULL,
    string INTEGER NOT NULL,
    PRIMARY KEY (record, path, string)
  ) WITHOUT ROWID;
  ${BY_STRING_INDEX};
  CREATE TABLE IF NOT EXISTS search_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
`;

/** Map owners of a collection: its records and (negated) its groups; binds the collection twice. */
const OWNERS_OF_COLLECTION =
  'SELECT rowid FROM search_records WHERE collection = ? UNION ALL SELECT -rowid FROM search_groups WHERE collection = ?';
/** Map rows of the other collections, read owner by owner through the map's key; binds it twice. */
const ROWS_OF_OTHERS =
  'SELECT v.record, v.path, v.string FROM (SELECT rowid AS owner FROM search_records WHERE collection != ? ' +
  'UNION ALL SELECT -rowid FROM search_groups WHERE collection != ?) o JOIN search_values v ON v.record = o.owner';

interface StoredRecord {
  rowid: number;
  id: string;
  fingerprint: string;
  grp: number | null;
}

/** The write hook of the embedded store (see src/store/sqlite). */
export interface HookableStore {
  readonly db: Database;
  addWriteHook(hook: {
    onUpsert(collection: string, docs: Doc[], texts?: string[]): void;
    onDelete(collection: string, ids: string[]): void;
  }): void;
}

const quote = (s: string) => `"${wellFormed(s).replace(/"/g, '""')}"`;

/**
 * A trigram query as an FTS5 MATCH expression. Atoms are quoted substrings (FTS5 phrases), or,
 * with `rewriteAtom`, whatever it makes of them (a few of their rarest trigrams).
 */
export function ftsMatchOf(q: TrigramQuery, rewriteAtom: (atom: string) => string = quote): string {
  if (q.op === 'all' || q.op === 'none') throw new Error(`${q.op} has no MATCH form`);
  const parts = [...q.atoms.map(rewriteAtom), ...q.subs.map((s) => `(${ftsMatchOf(s, rewriteAtom)})`)];
  return parts.join(q.op === 'and' ? ' AND ' : ' OR ');
}

/** Trigrams of an atom used in MATCH: a phrase must read every trigram's doclist; a few rare ones cost far less. */
const TRIGRAMS_PER_ATOM = 3;
const FREQUENCY_TTL_MS = 5 * 60_000;
const FREQUENCY_CACHE_SIZE = 200_000;
/**
 * Page cache of each connection during a rebuild (SQLite fills it only as pages are read): the
 * records and map tables, and the strings' index, are read at random.
 */
const REBUILD_CACHE_KIB = 256 * 1024;
/** A renewing batch of at least this many rows, most of them written, turns the rebuild to bulk. */
const BULK_AFTER_ROWS = 1000;
/**
 * Records a build from empty writes per transaction. Each commit writes every page it dirtied,
 * and string inserts dirty the strings' unique index at random: 2,000 records a commit cost five
 * times what one large transaction does. Not larger: another writer waits for a commit (5 s at most).
 */
const BULK_COMMIT_RECORDS = 25_000;
/**
 * FTS5 merge settings (with SQLite's defaults) a build from empty turns down while it writes:
 * segments are then merged when the build ends rather than over and over while it grows.
 */
const MERGE_DEFAULTS = { automerge: 4, crisismerge: 16, usermerge: 4 } as const;
const BULK_MERGE = { automerge: 0, crisismerge: 64, usermerge: 16 } as const;
type MergeSetting = keyof typeof MERGE_DEFAULTS;
/** search_meta key set while a build from empty has the merge settings turned down (see `restoreAfterBulkBuild`). */
const BULK_BUILD_KEY = 'bulk_build';

export class FtsSearchIndex implements SearchIndex {
  readonly engine = 'sqlite-fts5' as const;
  readonly synchronous: boolean;
  private readonly statements: StatementCache;
  private readonly frequencies = new Map<string, { count: number; at: number }>();
  private readonly preparer: WorkerPreparer;
  /** The last batch given to `indexTexts`, settled or not. */
  private turns: Promise<void> = Promise.resolve();

  /**
   * @param db the database to keep the index in.
   * @param mode `hooked`: the store calls `write()`/`erase()` inside its own write transaction;
   *   `ownsDatabase`: close the database with the index.
   */
  constructor(
    readonly db: Database,
    private readonly mode: { hooked: boolean; ownsDatabase: boolean },
  ) {
    this.statements = new StatementCache(db);
    db.transaction(() => {
      // Files from before word predicates were answered by trigrams: drop the words table and the
      // trigger that fed it (SCHEMA creates the trigger again).
      if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'search_words'").get() !== undefined)
        db.exec('DROP TRIGGER IF EXISTS search_strings_added; DROP TABLE search_words;');
      db.exec(SCHEMA);
      // Files from before groups: every map row is a record's own, which stays valid.
      const columns = db.prepare("SELECT name FROM pragma_table_info('search_records')").pluck().all();
      if (!columns.includes('grp')) db.exec('ALTER TABLE search_records ADD COLUMN grp INTEGER');
      db.exec(BY_GROUP_INDEX);
      // A build from empty that died leaves its settings turned down (SCHEMA made the
      // by-string index again); its collections are rebuilt by whoever started it.
      this.restoreAfterBulkBuild();
    }).immediate();
    this.synchronous = mode.hooked;
    this.preparer = new WorkerPreparer(db.memory ? undefined : db.name, REBUILD_CACHE_KIB);
  }

  /** Opens the index inside an embedded store's file and keeps it in step through the write hook. */
  static attachTo(store: HookableStore): FtsSearchIndex {
    const index = new FtsSearchIndex(store.db, { hooked: true, ownsDatabase: false });
    store.addWriteHook({
      onUpsert: (collection, docs, texts) => {
        if (index.covers(collection)) index.write(collection, docs, false, texts);
      },
      onDelete: (collection, ids) => {
        if (index.covers(collection)) index.erase(collection, ids);
      },
    });
    return index;
  }

  /**
   * The metadata collections of the schema: what `.search` and `$regex` filters are asked of. The
   * service's own records (accounts, jobs, operations, objects, runs) are not indexed; filters on
   * them are decided by the store alone.
   */
  covers(collection: string): boolean {
    return isCollectionName(collection);
  }

  private stmt(sql: string): Statement {
    return this.statements.get(sql);
  }

  private recordKeys(collection: string, ids: string[]): StoredRecord[] {
    return this.stmt(
      'SELECT rowid, id, fingerprint, grp FROM search_records WHERE collection = ? AND id IN (SELECT value FROM json_each(?))',
    ).all(collection, JSON.stringify(ids)) as StoredRecord[];
  }

  /**
   * Indexes records; with `skipUnchanged`, records whose fingerprint is already stored are left
   * alone. `texts`, the records as stored, spare serialising them again for their fingerprints. A batch costs a handful of statements (JSON arrays expanded by `json_each`), not a few
   * per value: per-statement overhead would otherwise set the build rate.
   */
  write(collection: string, docs: Doc[], skipUnchanged: boolean, texts?: string[]): number {
    if (docs.length === 0) return 0;
    if (skipUnchanged) {
      // Leave out what is already indexed before the work of extracting it.
      const stored = new Map(
        this.recordKeys(
          collection,
          docs.map((d) => d.id),
        ).map((r) => [r.id, r.fingerprint]),
      );
      if (stored.size > 0) docs = docs.filter((d) => stored.get(d.id) !== fingerprintOf(d));
    }
    return this.apply(collection, prepareBatch(docs, skipUnchanged ? undefined : texts), skipUnchanged);
  }

  /**
   * Writes a prepared batch: replaces the map rows of records indexed before, points records at
   * their groups (creating the missing ones with their pairs) and adds each record's own pairs.
   * With `skipUnchanged`, records whose fingerprint is already stored are left alone.
   */
  apply(collection: string, batch: PreparedBatch, skipUnchanged: boolean): number {
    if (batch.ids.length === 0) return 0;
    const renewing = this.renewing?.collection === collection ? this.renewing : null;
    const stored = new Map(this.recordKeys(collection, batch.ids).map((r) => [r.id, r]));
    const renewed: number[] = [];
    const written: number[] = [];
    batch.ids.forEach((id, i) => {
      const before = stored.get(id);
      if (skipUnchanged && before?.fingerprint === batch.fingerprints[i]) return;
      if (before !== undefined) renewed.push(before.rowid);
      written.push(i);
    });
    if (written.length === 0) return 0;
    const groups = this.groupKeys(collection, batch, new Set(written.map((i) => batch.groupOf[i]!)));

    // Records rows, written only when new or changed; a record keeps its key when updated.
    const changed: Array<[string, string, number | null]> = [];
    for (const i of written) {
      const set = batch.groupOf[i]!;
      const row: [string, string, number | null] = [
        batch.ids[i]!,
        batch.fingerprints[i]!,
        set < 0 ? null : groups.get(set)!.key,
      ];
      const before = stored.get(row[0]);
      if (before?.fingerprint !== row[1] || before.grp !== row[2]) changed.push(row);
    }
    // RETURNING lists rows in no set order: keys are matched by id.
    const recordKey = new Map(
      changed.length === 0
        ? []
        : (this.stmt(
            'INSERT INTO search_records(collection, id, fingerprint, grp) ' +
              'SELECT ?, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?) WHERE true ' +
              'ON CONFLICT(collection, id) DO UPDATE SET fingerprint = excluded.fingerprint, grp = excluded.grp ' +
              'RETURNING id, rowid',
          )
            .raw()
            .all(collection, JSON.stringify(changed)) as Array<[string, number]>),
    );

    // Map rows: each record's pairs outside its group, and the pairs of groups created now.
    const owned: Array<[number, number[]]> = [];
    for (const i of written) {
      const key = recordKey.get(batch.ids[i]!) ?? stored.get(batch.ids[i]!)?.rowid;
      if (key === undefined)
        throw new Error(
          `search index: record id ${JSON.stringify(batch.ids[i])} did not read back as written`,
        );
      owned.push([key, batch.own[i]!]);
    }
    // Rows of owners indexed before are made exact: the records replaced, and during a rebuild
    // each group the first time a batch uses it.
    for (const [set, g] of groups) {
      if (g.created) owned.push([-g.key, batch.sets[set]!]);
      else if (renewing && !renewing.groups.has(g.key)) {
        renewing.groups.add(g.key);
        owned.push([-g.key, batch.sets[set]!]);
        renewed.push(-g.key);
      }
    }
    if (renewing) {
      this.stmt('DELETE FROM temp.search_unseen WHERE rowid IN (SELECT value FROM json_each(?))').run(
        JSON.stringify(owned.map(([owner]) => owner).filter((owner) => owner > 0)),
      );
    }
    // Keys the worker read stay valid if no string was removed since (read in this transaction).
    const known =
      batch.known !== undefined && batch.known.generation === this.stringsGeneration()
        ? batch.known.keys
        : undefined;
    const { rows, written: changedRows } = this.insertPairs(batch, owned, renewed, known);
    if (renewing?.bulkable && !renewing.bulk && rows >= BULK_AFTER_ROWS && changedRows * 2 > rows) {
      // Most rows are being written after all (a new layout, a damaged map): keeping the
      // by-string index up to date row by row is then dearer than building it once at the end.
      renewing.bulk = true;
      this.db.exec('DROP INDEX IF EXISTS search_values_by_string');
    }
    return written.length;
  }

  /**
   * The group of each shared set in `used`, created when missing (its pairs must then be
   * written). Looked up in the database every time: another process may have rebuilt the index.
   */
  private groupKeys(
    collection: string,
    batch: PreparedBatch,
    used: Set<number>,
  ): Map<number, { key: number; created: boolean }> {
    const out = new Map<number, { key: number; created: boolean }>();
    used.delete(-1);
    if (used.size === 0) return out;
    const hashes = [...used].map((set) => batch.hashes[set]!);
    const { keys: key, added: created } = this.keysOf('search_groups', 'hash', hashes, collection);
    for (const set of used) {
      const hash = batch.hashes[set]!;
      out.set(set, { key: key.get(hash)!, created: created.has(hash) });
    }
    return out;
  }

  /**
   * Writes map rows for owners and their pairs (numbers of `batch`), adding unseen paths and
   * strings; the other rows of the `renewed` owners are deleted. Rows already there are neither
   * written nor deleted, so renewing an exact index writes nothing. `known` holds string keys by
   * pair, already looked up (0: look it up here).
   */
  private insertPairs(
    batch: PreparedBatch,
    owned: Array<[number, number[]]>,
    renewed: number[],
    known?: Float64Array,
  ): { rows: number; written: number } {
    const paths = new Set<string>();
    const strings = new Set<string>();
    for (const [, mine] of owned)
      for (const p of mine) {
        paths.add(batch.pairPath[p]!);
        if (!known?.[p]) strings.add(batch.pairValue[p]!);
      }
    const pathKey = this.keysOf('search_paths', 'path', [...paths]).keys;
    const stringKey = this.keysOf('search_strings', 'value', [...strings]).keys;
    const rows: Array<[number, number, number]> = [];
    for (const [owner, mine] of owned)
      for (const p of mine) {
        const path = pathKey.get(batch.pairPath[p]!);
        const string = known?.[p] || stringKey.get(batch.pairValue[p]!);
        // A missing key would make INSERT OR IGNORE drop the row, and the record would be missed.
        if (path === undefined || string === undefined)
          throw new Error('search index: a path or string did not read back as written');
        rows.push([owner, path, string]);
      }
    return { rows: rows.length, written: this.writeRows(rows, renewed) };
  }

  /**
   * Makes the map rows of the `renewed` owners exactly those of `rows` among theirs, and adds the
   * rows of other owners. The rows already there are compared in memory: only the difference is
   * written, and renewing an exact index writes nothing.
   */
  private writeRows(rows: Array<[number, number, number]>, renewed: number[]): number {
    let deleted = 0;
    let missing = rows;
    if (renewed.length > 0) {
      // Each renewed owner's wanted rows by (path, string), as one number while keys are small.
      const pairOf = (path: number, string: number): number | string =>
        path < 2 ** 21 && string < 2 ** 32 ? path * 2 ** 32 + string : `${path},${string}`;
      const wanted = new Map<number, Map<number | string, [number, number, number]>>(
        renewed.map((owner) => [owner, new Map()]),
      );
      missing = [];
      for (const row of rows) {
        const mine = wanted.get(row[0]);
        if (mine) mine.set(pairOf(row[1], row[2]), row);
        else missing.push(row);
      }
      const wrong: Array<[number, number, number]> = [];
      const present = this.stmt(
        'SELECT record, path, string FROM search_values WHERE record IN (SELECT value FROM json_each(?))',
      )
        .raw()
        .all(JSON.stringify(renewed)) as Array<[number, number, number]>;
      for (const row of present) if (!wanted.get(row[0])!.delete(pairOf(row[1], row[2]))) wrong.push(row);
      for (const mine of wanted.values()) for (const row of mine.values()) missing.push(row);
      deleted = wrong.length;
      if (wrong.length > 0)
        this.stmt(
          'DELETE FROM search_values WHERE (record, path, string) IN (SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?))',
        ).run(JSON.stringify(wrong));
    }
    if (missing.length === 0) return deleted;
    this.stmt(
      'INSERT OR IGNORE INTO search_values(record, path, string) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)',
    ).run(JSON.stringify(missing));
    return deleted + missing.length;
  }

  /**
   * Keys of `values` in a table with a unique text `column` (scoped to `collection` when given),
   * adding the missing ones; `added` lists those. Adding a string also tokenizes it (trigger).
   */
  private keysOf(
    table: 'search_strings' | 'search_paths' | 'search_groups',
    column: 'value' | 'path' | 'hash',
    values: string[],
    collection?: string,
  ): { keys: Map<string, number>; added: Set<string> } {
    if (values.length === 0) return { keys: new Map(), added: new Set() };
    const scope = collection === undefined ? [] : [collection];
    const scoped = collection === undefined ? '' : 'collection = ? AND ';
    const keys = new Map(
      this.stmt(
        `SELECT ${column}, rowid FROM ${table} WHERE ${scoped}${column} IN (SELECT value FROM json_each(?))`,
      )
        .raw()
        .all(...scope, JSON.stringify(values)) as Array<[string, number]>,
    );
    const added = new Set(values.filter((v) => !keys.has(v)));
    if (added.size > 0) {
      const into =
        collection === undefined ? `${table}(${column}) SELECT` : `${table}(collection, ${column}) SELECT ?,`;
      const rows = this.stmt(
        `INSERT OR IGNORE INTO ${into} value FROM json_each(?) RETURNING ${column}, rowid`,
      )
        .raw()
        .all(...scope, JSON.stringify([...added])) as Array<[string, number]>;
      for (const [value, rowid] of rows) keys.set(value, rowid);
    }
    return { keys, added };
  }

  /** Removes records: their own map rows and their records row (a group they were in stays until pruned). */
  erase(collection: string, ids: string[]): void {
    this.eraseKeys(this.recordKeys(collection, ids).map((r) => r.rowid));
  }

  private eraseKeys(records: number[]): void {
    const keys = JSON.stringify(records);
    this.stmt('DELETE FROM search_values WHERE record IN (SELECT value FROM json_each(?))').run(keys);
    this.stmt('DELETE FROM search_records WHERE rowid IN (SELECT value FROM json_each(?))').run(keys);
  }

  /** Records as stored JSON text (a rebuild): parsed and prepared on worker threads, written here. */
  async indexTexts(collection: string, texts: string[]): Promise<void> {
    // Workers take turns, so a batch may be ready before an earlier one: writes keep call order.
    const prepared = this.preparer.prepare(texts);
    prepared.catch(() => {}); // rejected before its turn: reported by the turn below
    const turn = this.turns
      .then(() => prepared)
      .then((batch) => {
        const bulk = this.bulkBuild?.collection === collection ? this.bulkBuild : null;
        if (bulk && !bulk.open) {
          this.db.exec('BEGIN IMMEDIATE');
          bulk.open = true;
        }
        this.db.transaction(() => this.apply(collection, batch, false))();
        if (bulk) {
          bulk.records += batch.ids.length;
          if (bulk.records >= BULK_COMMIT_RECORDS) {
            this.db.exec('COMMIT');
            bulk.open = false;
            bulk.records = 0;
          }
        }
      });
    this.turns = turn.catch(() => {});
    return turn;
  }

  async index(collection: string, docs: Doc[]): Promise<void> {
    // Records already written through the hook have the same fingerprint: nothing to do, except
    // in a rebuild, which makes every record's rows exact.
    const renewing = this.renewing?.collection === collection;
    this.db.transaction(() => this.write(collection, docs, !renewing))();
  }

  async remove(collection: string, ids: string[]): Promise<void> {
    this.db.transaction(() => this.erase(collection, ids))();
  }

  async candidates(collection: string, predicate: IndexablePredicate, limit: number): Promise<Candidates> {
    let match: string;
    if (predicate.kind === 'words') {
      // A word holds its own trigrams (the tokenizer folds case on both sides); words shorter than
      // a trigram cannot narrow. A superset: the store decides.
      const long = [...predicate.text.matchAll(WORD_PATTERN)]
        .map((m) => m[0])
        .filter((w) => [...w].length >= 3);
      if (long.length === 0) return { all: true };
      match = long.map((w) => this.rarestTrigrams(w)).join(' AND ');
    } else {
      const query = trigramQueryOfPredicate(predicate);
      if (query.op === 'all') return { all: true };
      if (query.op === 'none') return { all: false, ids: new Set() };
      match = ftsMatchOf(query, (atom) => this.rarestTrigrams(atom));
    }
    const scope = indexedPathScope(wellFormed(predicate.path));
    const pathKeys =
      scope === ''
        ? null
        : (this.stmt('SELECT rowid FROM search_paths WHERE path = ? OR (path > ? AND path < ?)')
            .pluck()
            .all(scope, `${scope}.`, `${scope}/`) as number[]);
    // No record holds a string at that path: nothing can match.
    if (pathKeys !== null && pathKeys.length === 0) return { all: false, ids: new Set() };
    const pathFilter = '(? IS NULL OR v.path IN (SELECT value FROM json_each(?)))';
    const pathParams = [pathKeys && 1, JSON.stringify(pathKeys ?? [])];
    // The map rows of matching strings, read once (index only): more than twice `limit` means the
    // set is too large to help, decided before any record is looked up. Rows of other collections
    // can only make the index give up early, which is always safe.
    const owners = this.stmt(
      'SELECT v.record FROM search_trigram f JOIN search_values v ON v.string = f.rowid ' +
        `WHERE search_trigram MATCH ? AND ${pathFilter} LIMIT ?`,
    )
      .pluck()
      .all(match, ...pathParams, limit * 2 + 1) as number[];
    if (owners.length > limit * 2) return { all: true };
    const records = new Set<number>();
    const groups = new Set<number>();
    for (const owner of owners) (owner > 0 ? records : groups).add(Math.abs(owner));
    // Records holding a matching string themselves, then the members of groups holding one.
    const ids = new Set<string>();
    for (const [sql, keys] of [
      [
        'SELECT r.id FROM json_each(?) k CROSS JOIN search_records r ON r.rowid = k.value WHERE r.collection = ?',
        records,
      ],
      [
        'SELECT r.id FROM json_each(?) g CROSS JOIN search_records r ON r.grp = g.value WHERE r.collection = ?',
        groups,
      ],
    ] as const) {
      if (keys.size === 0) continue;
      const rows = this.stmt(sql)
        .pluck()
        .iterate(JSON.stringify([...keys]), collection) as IterableIterator<string>;
      for (const id of rows) {
        ids.add(id);
        if (ids.size > limit) {
          rows.return?.();
          return { all: true };
        }
      }
    }
    return { all: false, ids };
  }

  /**
   * How many strings hold a trigram. Reading it from the vocabulary walks the trigram's doclist,
   * so counts are cached for a while: they only steer the choice of trigrams, never the result.
   */
  private trigramFrequency(trigram: string): number {
    const now = Date.now();
    const cached = this.frequencies.get(trigram);
    if (cached && now - cached.at < FREQUENCY_TTL_MS) return cached.count;
    const count =
      (this.stmt('SELECT doc FROM search_trigram_vocab WHERE term = ?').pluck().get(trigram) as
        number | undefined) ?? 0;
    if (this.frequencies.size >= FREQUENCY_CACHE_SIZE) this.frequencies.clear();
    this.frequencies.set(trigram, { count, at: now });
    return count;
  }

  /**
   * The AND of an atom's rarest trigrams (a superset of the phrase; the source of truth decides).
   * Document counts come from the FTS5 vocabulary; a trigram no string has makes the atom false.
   */
  private rarestTrigrams(atom: string): string {
    const chars = [...atom];
    if (chars.length <= 3) return quote(atom);
    const seen = new Map<string, number>();
    for (let i = 0; i + 3 <= chars.length; i++) {
      const t = chars[i]! + chars[i + 1]! + chars[i + 2]!;
      if (!seen.has(t)) seen.set(t, this.trigramFrequency(t));
    }
    const rarest = [...seen.entries()].sort((a, b) => a[1] - b[1]).slice(0, TRIGRAMS_PER_ATOM);
    return `(${rarest.map(([t]) => quote(t)).join(' AND ')})`;
  }

  async clear(collection: string): Promise<void> {
    this.db.transaction(() => {
      this.dropEntries(collection);
      if (this.stmt('SELECT 1 FROM search_values LIMIT 1').get() === undefined) {
        // Nothing left: emptying the FTS tables wholesale is much faster than row by row.
        this.db.exec("INSERT INTO search_trigram(search_trigram) VALUES ('delete-all')");
        this.db.exec('DELETE FROM search_strings');
        this.stmt(STRINGS_GENERATION.raise).run();
      }
    })();
  }

  /**
   * Removes a collection's records and map rows. When they are most of the map, the other
   * collections' rows are set aside, the map is emptied in one step (SQLite drops its pages
   * instead of deleting rows one by one) and they are put back.
   */
  private dropEntries(collection: string): void {
    if (this.isMostOfMap(collection)) {
      this.db.exec('DROP TABLE IF EXISTS temp.search_values_kept');
      this.stmt(`CREATE TEMP TABLE search_values_kept AS ${ROWS_OF_OTHERS}`).run(collection, collection);
      this.db.exec('DELETE FROM search_values');
      this.db.exec(
        'INSERT INTO search_values(record, path, string) SELECT record, path, string FROM temp.search_values_kept ' +
          'ORDER BY record, path, string; DROP TABLE temp.search_values_kept;',
      );
    } else {
      this.stmt(`DELETE FROM search_values WHERE record IN (${OWNERS_OF_COLLECTION})`).run(
        collection,
        collection,
      );
    }
    this.stmt('DELETE FROM search_records WHERE collection = ?').run(collection);
    this.stmt('DELETE FROM search_groups WHERE collection = ?').run(collection);
  }

  /** Whether a collection holds at least half of the indexed records (so also when there are none). */
  private isMostOfMap(collection: string): boolean {
    const mine = this.stmt('SELECT count(*) FROM search_records WHERE collection = ?')
      .pluck()
      .get(collection) as number;
    const all = this.stmt('SELECT count(*) FROM search_records').pluck().get() as number;
    return mine * 2 >= all;
  }

  /** The page cache setting a rebuild replaced. */
  private cacheBefore: number | null = null;
  /** What `endRebuild` must prune: every string, or only those the cleared rows held. */
  private pruneScope: 'all' | 'cleared' = 'all';
  /**
   * A rebuild renewing a collection's entries in place: the groups renewed so far; whether the
   * collection is most of the map, so the by-string index may be dropped; and whether it was.
   */
  private renewing: { collection: string; groups: Set<number>; bulkable: boolean; bulk: boolean } | null =
    null;
  /**
   * A build from empty: batches are written in transactions of BULK_COMMIT_RECORDS records (`open`
   * while one is), with the merge settings turned down.
   */
  private bulkBuild: { collection: string; records: number; open: boolean } | null = null;

  /** The merge settings stored in the FTS5 table (undefined: SQLite's default). */
  private mergeSettings(): Record<MergeSetting, number | undefined> {
    const read = this.db.prepare('SELECT v FROM search_trigram_config WHERE k = ?').pluck();
    const out = {} as Record<MergeSetting, number | undefined>;
    for (const k of Object.keys(MERGE_DEFAULTS) as MergeSetting[]) out[k] = read.get(k) as number | undefined;
    return out;
  }

  private setMergeSettings(values: Record<MergeSetting, number>): void {
    const set = this.db.prepare('INSERT INTO search_trigram(search_trigram, rank) VALUES (?, ?)');
    // As integers: FTS5 refuses a REAL, which is how a JS number is bound.
    for (const [k, v] of Object.entries(values)) set.run(k, BigInt(v));
  }

  /** Turns the merge settings down for a build from empty, remembering them (caller's transaction). */
  private turnDownMerging(): void {
    const saved = this.mergeSettings();
    const remember = this.db.prepare(
      'INSERT INTO search_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    );
    // Saved only by the first build: one that died left the turned-down values in place.
    if (this.db.prepare('SELECT 1 FROM search_meta WHERE key = ?').get(BULK_BUILD_KEY) === undefined) {
      for (const k of Object.keys(MERGE_DEFAULTS) as MergeSetting[])
        remember.run(`${BULK_BUILD_KEY}_${k}`, saved[k] ?? MERGE_DEFAULTS[k]);
      remember.run(BULK_BUILD_KEY, 1);
    }
    this.setMergeSettings(BULK_MERGE);
  }

  /**
   * Puts back the merge settings a build from empty turned down, and checks that they read back
   * (caller's transaction). Nothing to do when no build left them down.
   */
  restoreAfterBulkBuild(): void {
    const meta = this.db.prepare('SELECT value FROM search_meta WHERE key = ?').pluck();
    if (meta.get(BULK_BUILD_KEY) === undefined) return;
    const wanted = {} as Record<MergeSetting, number>;
    for (const k of Object.keys(MERGE_DEFAULTS) as MergeSetting[])
      wanted[k] = (meta.get(`${BULK_BUILD_KEY}_${k}`) as number | undefined) ?? MERGE_DEFAULTS[k];
    this.setMergeSettings(wanted);
    const now = this.mergeSettings();
    for (const k of Object.keys(wanted) as MergeSetting[])
      if ((now[k] ?? MERGE_DEFAULTS[k]) !== wanted[k])
        throw new Error(`search index: FTS5 setting ${k} reads ${now[k]} after restoring ${wanted[k]}`);
    this.db
      .prepare("DELETE FROM search_meta WHERE key = ? OR key LIKE 'bulk\\_build\\_%' ESCAPE '\\'")
      .run(BULK_BUILD_KEY);
  }

  /** True while a build from empty has turned settings down or dropped the by-string index. */
  bulkBuildPending(): boolean {
    const marked =
      this.db.prepare('SELECT 1 FROM search_meta WHERE key = ?').get(BULK_BUILD_KEY) !== undefined;
    const indexed =
      this.db
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'search_values_by_string'")
        .get() !== undefined;
    return marked || !indexed;
  }

  /**
   * A rebuild keeps the strings (most come back, and tokenizing them again is the dearest part of
   * indexing). A collection with entries is renewed in place: each record given is made exact
   * (`apply` deletes only rows that are wrong and writes only rows that are missing, so an index
   * that was right costs reads only), and records not given by a completed rebuild are removed.
   * A collection without entries is built in bulk: in large transactions with FTS5 merging turned
   * down until `endRebuild` (a process that dies meanwhile has it restored on the next open), and,
   * when it is most of the map, without the map's by-string index, built again in one sorted pass
   * at the end.
   */
  async beginRebuild(collection: string): Promise<void> {
    // A renewal visits records' rows in the store's order, not in the order they were keyed:
    // the map and records tables are read at random, so they get a page cache to hold them.
    this.cacheBefore ??= this.db.pragma('cache_size', { simple: true }) as number;
    // Never smaller than the cache already set (a bulk load raises it for the same reason).
    const kib = this.cacheBefore < 0 ? -this.cacheBefore : 0;
    this.db.pragma(`cache_size = -${Math.max(REBUILD_CACHE_KIB, kib)}`);
    this.db.exec(
      'CREATE TEMP TABLE IF NOT EXISTS search_cleared (rowid INTEGER PRIMARY KEY); DELETE FROM temp.search_cleared; ' +
        'CREATE TEMP TABLE IF NOT EXISTS search_unseen (rowid INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL); ' +
        'DELETE FROM temp.search_unseen;',
    );
    this.db.transaction(() => {
      this.pruneScope = 'all';
      const unseen = this.stmt(
        'INSERT INTO temp.search_unseen(rowid, fingerprint) SELECT rowid, fingerprint FROM search_records WHERE collection = ?',
      ).run(collection).changes;
      if (unseen > 0) {
        this.renewing = {
          collection,
          groups: new Set(),
          bulkable: this.isMostOfMap(collection),
          bulk: false,
        };
        return;
      }
      // Built from empty in large transactions, with merging turned down until the end.
      this.bulkBuild = { collection, records: 0, open: false };
      this.turnDownMerging();
      if (this.isMostOfMap(collection)) {
        this.db.exec('DROP INDEX IF EXISTS search_values_by_string');
      } else {
        this.pruneScope = 'cleared';
        this.stmt(
          'INSERT OR IGNORE INTO temp.search_cleared(rowid) SELECT DISTINCT string FROM search_values ' +
            `WHERE record IN (${OWNERS_OF_COLLECTION})`,
        ).run(collection, collection);
      }
      this.dropEntries(collection);
    })();
  }

  /**
   * Ends a rebuild: removes the records a completed renewal was not given (unless written since
   * it began), builds the by-string index if it was dropped, and prunes groups and strings.
   */
  async endRebuild(collection: string, completed = true): Promise<void> {
    await this.turns; // every batch written or failed
    await this.preparer.close();
    if (this.cacheBefore !== null) this.db.pragma(`cache_size = ${this.cacheBefore}`);
    this.cacheBefore = null;
    const renewing = this.renewing?.collection === collection;
    this.renewing = null;
    const bulk = this.bulkBuild?.collection === collection ? this.bulkBuild : null;
    this.bulkBuild = null;
    // A failed build's last rows are kept as committed ones are: the rebuild is redone anyway.
    if (bulk?.open && this.db.inTransaction) this.db.exec('COMMIT');
    this.db.exec(BY_STRING_INDEX);
    this.db.transaction(() => {
      this.restoreAfterBulkBuild();
      if (renewing && completed) {
        this.eraseKeys(
          this.stmt(
            'SELECT u.rowid FROM temp.search_unseen u JOIN search_records r ON r.rowid = u.rowid AND r.fingerprint = u.fingerprint',
          )
            .pluck()
            .all() as number[],
        );
      }
      this.db.exec('DELETE FROM temp.search_unseen');
      this.pruneGroups();
      this.pruneStrings(this.pruneScope === 'cleared');
    })();
    this.pruneScope = 'all';
  }

  /** Removes groups no record points at any more, with their map rows. */
  pruneGroups(): number {
    this.db.exec(
      'CREATE TEMP TABLE IF NOT EXISTS search_orphan_groups (rowid INTEGER PRIMARY KEY); DELETE FROM temp.search_orphan_groups;',
    );
    const found = this.stmt(
      'INSERT INTO temp.search_orphan_groups(rowid) SELECT rowid FROM search_groups g ' +
        'WHERE NOT EXISTS (SELECT 1 FROM search_records r WHERE r.grp = g.rowid)',
    ).run().changes;
    if (found > 0) {
      this.db.exec(
        'DELETE FROM search_values WHERE record IN (SELECT -rowid FROM temp.search_orphan_groups); ' +
          'DELETE FROM search_groups WHERE rowid IN (SELECT rowid FROM temp.search_orphan_groups);',
      );
    }
    this.db.exec('DELETE FROM temp.search_orphan_groups');
    return found;
  }

  /** Removes strings no record holds any more (with `onlyCleared`, among those a rebuild cleared). */
  pruneStrings(onlyCleared = false): number {
    this.db.exec(
      'CREATE TEMP TABLE IF NOT EXISTS search_orphans (rowid INTEGER PRIMARY KEY); DELETE FROM temp.search_orphans;',
    );
    const found = this.stmt(
      'INSERT INTO temp.search_orphans(rowid) SELECT rowid FROM search_strings s ' +
        `WHERE ${onlyCleared ? 's.rowid IN (SELECT rowid FROM temp.search_cleared) AND ' : ''}` +
        'NOT EXISTS (SELECT 1 FROM search_values v WHERE v.string = s.rowid)',
    ).run().changes;
    if (found > 0) {
      for (const table of ['search_trigram', 'search_strings'])
        this.db.exec(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM temp.search_orphans)`);
      this.stmt(STRINGS_GENERATION.raise).run();
    }
    this.db.exec('DELETE FROM temp.search_orphans');
    return found;
  }

  async *fingerprints(collection: string): AsyncIterable<Array<{ id: string; fingerprint: string }>> {
    let after = '';
    for (;;) {
      const batch = this.stmt(
        'SELECT id, fingerprint FROM search_records WHERE collection = ? AND id > ? ORDER BY id LIMIT 5000',
      ).all(collection, after) as Array<{ id: string; fingerprint: string }>;
      if (batch.length === 0) return;
      yield batch;
      after = batch[batch.length - 1]!.id;
    }
  }

  private stringsGeneration(): number {
    return (this.stmt(STRINGS_GENERATION.read).pluck().get() as number | undefined) ?? 0;
  }

  async watermark(): Promise<number> {
    const v = this.stmt("SELECT value FROM search_meta WHERE key = 'watermark'").pluck().get() as
      number | undefined;
    return v ?? 0;
  }

  async setWatermark(seq: number): Promise<void> {
    this.stmt(
      "INSERT INTO search_meta(key, value) VALUES ('watermark', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    ).run(seq);
  }

  /** Bytes used by the index tables (benchmark and stats). */
  sizeBytes(): number {
    try {
      const rows = this.db
        .prepare("SELECT sum(pgsize) AS bytes FROM dbstat WHERE name LIKE 'search\\_%' ESCAPE '\\'")
        .get() as { bytes: number | null };
      return rows.bytes ?? 0;
    } catch {
      return 0;
    }
  }

  async close(): Promise<void> {
    await this.preparer.close();
    this.statements.clear();
    if (this.mode.ownsDatabase && this.db.open) this.db.close();
  }
}
