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
 *
 * The parts: `schema.ts` (tables and upgrades), `map-writer.ts` (writing batches and erasing
 * records), `candidates.ts` (answering predicates), `bulk-build.ts` (FTS5 merge settings during a
 * build from empty) and `pruning.ts` (removing entries and what no record uses); this class ties
 * them to the write hook and runs rebuilds.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { Doc } from '../../src/store/port.ts';
import type { JoinedTexts } from '../../src/store/sqlite/joined-texts.ts';
import type { PreparedRecords } from '../../src/store/sqlite/prepared-records.ts';
import type { WriteHook, WrittenRecords } from '../../src/store/sqlite/records.ts';
import { StatementCache } from '../../src/store/sqlite/statement-cache.ts';
import type { Candidates, IndexablePredicate, PreparedAhead, SearchIndex } from '../port.ts';
import { isCollectionName } from '../../src/schema/nmdc.ts';
import { bulkBuildPending, restoreAfterBulkBuild, turnDownMerging } from './bulk-build.ts';
import { rememberFingerprints } from '../indexed-values.ts';
import { FtsCandidates } from './candidates.ts';
import { MapWriter } from './map-writer.ts';
import type { PreparedBatch } from './prepared-batch.ts';
import { WorkerPreparer } from './preparer.ts';
import { dropEntries, isMostOfMap, pruneGroups, pruneStrings } from './pruning.ts';
import { BY_STRING_INDEX, createSchema, OWNERS_OF_COLLECTION } from './schema.ts';
import { STRINGS_GENERATION } from './strings-generation.ts';

export { ftsMatchOf } from './candidates.ts';

/** The write hook of the embedded store (see src/store/sqlite). */
export interface HookableStore {
  readonly db: Database;
  addWriteHook(hook: WriteHook): void;
}

/**
 * Page cache of each connection during a rebuild (SQLite fills it only as pages are read): the
 * records and map tables, and the strings' index, are read at random.
 */
const REBUILD_CACHE_KIB = 256 * 1024;
/**
 * Records a build from empty writes per transaction. Each commit writes every page it dirtied,
 * and string inserts dirty the strings' unique index at random: 2,000 records a commit cost five
 * times what one large transaction does. Not larger: another writer waits for a commit (5 s at most).
 */
const BULK_COMMIT_RECORDS = 25_000;

export class FtsSearchIndex implements SearchIndex {
  readonly engine = 'sqlite-fts5' as const;
  readonly synchronous: boolean;
  private readonly statements: StatementCache;
  private readonly writer: MapWriter;
  private readonly finder: FtsCandidates;
  private readonly preparer: WorkerPreparer;
  /** The last batch given to `indexTexts`, settled or not. */
  private turns: Promise<void> = Promise.resolve();

  /**
   * @param db the database to keep the index in.
   * @param mode `hooked`: the store calls `write()`/`erase()` inside its own write transaction;
   *   `ownsDatabase`: close the database with the index; `offThreadStrings`: a MATCH planned to
   *   find more strings runs on a worker thread (candidates.ts, OFF_THREAD_STRINGS).
   */
  constructor(
    readonly db: Database,
    private readonly mode: { hooked: boolean; ownsDatabase: boolean; offThreadStrings?: number },
  ) {
    this.statements = new StatementCache(db);
    this.writer = new MapWriter(db, this.statements);
    this.preparer = new WorkerPreparer(db.memory ? undefined : db.name, REBUILD_CACHE_KIB);
    this.finder = new FtsCandidates(
      this.statements,
      this.preparer.queries ? (sql, params) => this.preparer.query(sql, params) : undefined,
      mode.offThreadStrings,
    );
    db.transaction(() => {
      createSchema(db);
      // A build from empty that died leaves its settings turned down (createSchema made the
      // by-string index again); its collections are rebuilt by whoever started it.
      this.restoreAfterBulkBuild();
    }).immediate();
    this.synchronous = mode.hooked;
  }

  /** Opens the index inside an embedded store's file and keeps it in step through the write hook. */
  static attachTo(store: HookableStore, options: { offThreadStrings?: number } = {}): FtsSearchIndex {
    const index = new FtsSearchIndex(store.db, { hooked: true, ownsDatabase: false, ...options });
    store.addWriteHook({
      onUpsert: (collection, written) => {
        if (index.covers(collection)) index.writeHooked(collection, written);
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

  /**
   * Indexes records; with `skipUnchanged`, records whose fingerprint is already stored are left
   * alone (see `MapWriter.write`).
   */
  write(collection: string, docs: Doc[], skipUnchanged: boolean, texts?: string[]): number {
    if (!skipUnchanged && texts) {
      const written = this.writeAhead(collection, texts);
      if (written !== undefined) return written;
    }
    return this.writer.write(collection, docs, skipUnchanged, texts);
  }

  /** The write hook's records: the batch prepared ahead for their texts, else prepared from the records. */
  private writeHooked(collection: string, written: WrittenRecords): void {
    if (this.writeAhead(collection, written.texts) === undefined)
      this.writer.write(collection, written.docs(), false, written.texts);
  }

  /** Writes the batch prepared ahead for exactly these texts; undefined when there is none. */
  private writeAhead(collection: string, texts: string[]): number | undefined {
    const ahead = this.takeAhead(collection, texts);
    if (!ahead) return undefined;
    this.preparedAhead++;
    // Each id once, so position by position those of the texts (see `prepareBatch`).
    if (ahead.ids.length === texts.length) rememberFingerprints(texts, ahead.fingerprints);
    return this.writer.apply(collection, ahead, false);
  }

  /**
   * `preparedAhead`: batches the write hook took from `prepareAhead` rather than preparing them
   * itself; `readsOffThread`: MATCH statements run on a worker thread.
   */
  get counters(): { preparedAhead: number; readsOffThread: number } {
    return { preparedAhead: this.preparedAhead, readsOffThread: this.finder.readsOffThread };
  }

  private preparedAhead = 0;

  /** Batches prepared ahead of writes (`prepareAhead`), by collection. */
  private readonly ahead = new Map<string, Set<{ texts: string[]; batch?: PreparedBatch }>>();

  /** Starts the threads that prepare batches now, not with the first batch (see `WorkerPreparer.warm`). */
  warmPreparers(): Promise<void> {
    return this.preparer.warm();
  }

  /**
   * Prepares the batch of records a write is about to hand the write hook, on a worker thread
   * (parsing, fingerprints, pairs and groups, and the keys of strings already indexed), so the
   * write transaction is spared that work. The batch is derived from the texts alone, as a
   * rebuild derives it from the stored records. With `records`, the worker prepares the store's
   * own part of the records from the same parse (see prepared-records.ts); `records()` gives it
   * once `ready`.
   */
  prepareAhead(
    collection: string,
    texts: string[],
    joined?: JoinedTexts,
    records?: { graph: boolean },
  ): PreparedAhead & { records(): PreparedRecords | undefined } {
    let prepared: PreparedRecords | undefined;
    const entry: { texts: string[]; batch?: PreparedBatch } = { texts };
    let entries = this.ahead.get(collection);
    if (!entries) this.ahead.set(collection, (entries = new Set()));
    entries.add(entry);
    const release = () => {
      entries.delete(entry);
      if (entries.size === 0 && this.ahead.get(collection) === entries) this.ahead.delete(collection);
    };
    const ready = this.preparer.prepareWith(texts, joined, records).then(
      (done) => {
        entry.batch = done.batch;
        prepared = done.records;
      },
      // The hook prepares the batch itself (and the store its records).
      () => release(),
    );
    return { ready, release, records: () => prepared };
  }

  /** The ready batch prepared ahead for exactly these texts, taken (none: undefined). */
  private takeAhead(collection: string, texts: string[]): PreparedBatch | undefined {
    const entries = this.ahead.get(collection);
    if (!entries) return undefined;
    for (const entry of entries) {
      const batch = entry.batch;
      if (!batch || entry.texts.length !== texts.length) continue;
      // The same strings when the store wrote the texts it was given: compared by reference.
      if (!entry.texts.every((t, i) => t === texts[i])) continue;
      entries.delete(entry);
      return batch;
    }
    return undefined;
  }

  /** Writes a prepared batch (see `MapWriter.apply`). */
  apply(collection: string, batch: PreparedBatch, skipUnchanged: boolean): number {
    return this.writer.apply(collection, batch, skipUnchanged);
  }

  /** Removes records: their own map rows and their records row (a group they were in stays until pruned). */
  erase(collection: string, ids: string[]): void {
    this.writer.erase(collection, ids);
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
    const renewing = this.writer.renewing?.collection === collection;
    this.db.transaction(() => this.write(collection, docs, !renewing))();
  }

  async remove(collection: string, ids: string[]): Promise<void> {
    this.db.transaction(() => this.erase(collection, ids))();
  }

  async candidates(collection: string, predicate: IndexablePredicate, limit: number): Promise<Candidates> {
    await this.finder.prepare(predicate);
    return this.finder.candidates(collection, predicate, limit);
  }

  async clear(collection: string): Promise<void> {
    this.db.transaction(() => {
      dropEntries(this.db, this.statements, collection);
      if (this.stmt('SELECT 1 FROM search_values LIMIT 1').get() === undefined) {
        // Nothing left: emptying the FTS tables wholesale is much faster than row by row.
        this.db.exec("INSERT INTO search_trigram(search_trigram) VALUES ('delete-all')");
        this.db.exec('DELETE FROM search_strings');
        this.stmt(STRINGS_GENERATION.raise).run();
      }
    })();
  }

  /** The page cache setting a rebuild replaced. */
  private cacheBefore: number | null = null;
  /** What `endRebuild` must prune: every string, or only those the cleared rows held. */
  private pruneScope: 'all' | 'cleared' = 'all';
  /**
   * A build from empty: batches are written in transactions of BULK_COMMIT_RECORDS records (`open`
   * while one is), with the merge settings turned down.
   */
  private bulkBuild: { collection: string; records: number; open: boolean } | null = null;

  /**
   * Puts back the merge settings a build from empty turned down (caller's transaction; see
   * `bulk-build.ts`).
   */
  restoreAfterBulkBuild(): void {
    restoreAfterBulkBuild(this.db);
  }

  /** True while a build from empty has turned settings down or dropped the by-string index. */
  bulkBuildPending(): boolean {
    return bulkBuildPending(this.db);
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
        this.writer.renewing = {
          collection,
          groups: new Set(),
          bulkable: isMostOfMap(this.statements, collection),
          bulk: false,
        };
        return;
      }
      // Built from empty in large transactions, with merging turned down until the end.
      this.bulkBuild = { collection, records: 0, open: false };
      turnDownMerging(this.db);
      if (isMostOfMap(this.statements, collection)) {
        this.db.exec('DROP INDEX IF EXISTS search_values_by_string');
      } else {
        this.pruneScope = 'cleared';
        this.stmt(
          'INSERT OR IGNORE INTO temp.search_cleared(rowid) SELECT DISTINCT string FROM search_values ' +
            `WHERE record IN (${OWNERS_OF_COLLECTION})`,
        ).run(collection, collection);
      }
      dropEntries(this.db, this.statements, collection);
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
    const renewing = this.writer.renewing?.collection === collection;
    this.writer.renewing = null;
    const bulk = this.bulkBuild?.collection === collection ? this.bulkBuild : null;
    this.bulkBuild = null;
    // A failed build's last rows are kept as committed ones are: the rebuild is redone anyway.
    if (bulk?.open && this.db.inTransaction) this.db.exec('COMMIT');
    this.db.exec(BY_STRING_INDEX);
    this.db.transaction(() => {
      this.restoreAfterBulkBuild();
      if (renewing && completed) {
        this.writer.eraseKeys(
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
    return pruneGroups(this.db, this.statements);
  }

  /** Removes strings no record holds any more (with `onlyCleared`, among those a rebuild cleared). */
  pruneStrings(onlyCleared = false): number {
    return pruneStrings(this.db, this.statements, onlyCleared);
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
        .prepare(
          // By table: the implicit indexes of UNIQUE columns (sqlite_autoindex_search_...) are the index's too.
          'SELECT sum(pgsize) AS bytes FROM dbstat WHERE name IN ' +
            "(SELECT name FROM sqlite_schema WHERE tbl_name LIKE 'search\\_%' ESCAPE '\\')",
        )
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
