/**
 * The embedded DocumentStore: one SQLite file holding records, a narrowing side table of
 * indexed attribute values, a change log and short-lived state. SQLite narrows; the compiled
 * MongoDB filter (src/store/filter.ts) decides. This class composes the parts: records and
 * their writes (records.ts), the attribute index (attribute-index.ts, attribute-plans.ts), the
 * page strategies (page-strategies.ts), the change log and the statistics.
 */
import Database from 'better-sqlite3';
import type { Database as Db } from 'better-sqlite3';
import { compileProjection } from '../projection.ts';
import type {
  ChangePage,
  CheckedChange,
  CheckedChangeResult,
  CollectionStats,
  Doc,
  DocumentStore,
  Filter,
  FindOptions,
  AtomicWrite,
  AttributeIndexEstimates,
  HeldAtomicWrite,
  Projection,
  ReadModifyWriteDecision,
  RecordKey,
  WriteResult,
} from '../port.ts';
import {
  ATTRIBUTE_INDEX_SCHEMA,
  AttributeKeys,
  ensureAttributeIndex,
  INDEXED_PATHS,
  planIndex,
  type Condition,
  type IndexValue,
} from './attribute-index.ts';
import { candidateIdSql, ConditionEstimates, ESTIMATE_CAP } from './attribute-plans.ts';
import { sampleTexts, type SampleOptions } from './sampling.ts';
import { ReadThreads } from './read-threads.ts';
import { CHANGE_LOG_SCHEMA, ChangeLog } from './change-log.ts';
import { isPause, matchesInIdOrder } from './id-order-scans.ts';
import { countMatches, findPage, findPageWith } from './page-strategies.ts';
import type { PageStrategy } from './page-queries.ts';
import {
  bodyOf,
  checkedTexts,
  openDatabase,
  RECORDS_SCHEMA,
  RecordWrites,
  scanTexts,
  type HeldWrite,
  type WriteHook,
} from './records.ts';
import { createStateSchema, moveStateOut, SqliteStateStore, stateFileBeside } from './state-store.ts';
import { StatementCache } from './statement-cache.ts';
import { countRegexOnValues, VALUE_COUNT_LIMITS, type ValueCountLimits } from './value-regex-count.ts';
import { collectionStats, nonEmptyCollections, recordCount, STATISTICS_SCHEMA } from './statistics.ts';
import { WalkCheckpoints } from './walk-checkpoints.ts';
import { keepWalkPrefixes, type WalkPrefixOptions } from './walk-prefixes.ts';
import { CHUNK, parseBody, type SqliteStoreCounters, type StoreContext } from './store-context.ts';
import { WriteGate } from './write-gate.ts';
import { withoutWaiting, writeWhenFree, WRITE_WAIT_MS } from './busy.ts';
import {
  HoldAbandoned,
  WriteThread,
  WriteThreadUnavailable,
  type StagedWrite,
  type ThreadHeldWrite,
  type WriteThreadOptions,
} from './write-thread.ts';
import { cleanDocs } from '../clean-docs.ts';
import { jsonArrayInTurns, mapInTurns } from '../../turns.ts';

/** Page cache of the state's connection, KiB: state is small. */
const STATE_CACHE_KIB = 8 * 1024;
/** Page size of a new state file: SQLite's own, for small rows written one at a time. */
const STATE_PAGE_BYTES = 4096;
/** SQLite's default for `wal_autocheckpoint`, which this store's connection keeps. */
const AUTOCHECKPOINT_PAGES = 1000;

/** A condition as explain shows it, e.g. `ecosystem_type = "Soil"`. */
function describeCondition(c: Condition): string {
  if (c.op === 'in') return `${c.path} in ${JSON.stringify(c.values)}`;
  const op = { eq: '=', gt: '>', gte: '>=', lt: '<', lte: '<=' }[c.op];
  return `${c.path} ${op} ${JSON.stringify(c.value)}`;
}

export interface SqliteStoreOptions {
  /** Path of the database file. */
  file: string;
  databaseName?: string;
  /**
   * The file of the short-lived state (sessions, tokens, page tokens and cursors, login counters,
   * signing keys). Default: beside `file`, `nmdc-state.sqlite` for `nmdc.sqlite`; in memory with a
   * store in memory. State an older version kept in `file` is moved there on open.
   */
  stateFile?: string;
  /** How often expired state and old change-log rows are swept (0: never). Default one minute. */
  sweepIntervalMs?: number;
  /**
   * Told of a periodic sweep that failed (e.g. another process was writing: the sweep does not
   * wait for the lock); the next interval tries again. Default: nothing.
   */
  onSweepError?: (err: unknown) => void;
  /** Change-log rows kept for `changesSince`. Default 200 000. */
  changesRetained?: number;
  /** Change-log rows one `changesSince` answers at most (`more` says others follow). Default 100 000. */
  changesPage?: number;
  /**
   * How long a write waits for another connection's write lock (another server process's write,
   * or this store's writing thread's) before it is refused with 503; it waits without holding the
   * event loop (busy.ts). Default one minute.
   */
  writeWaitMs?: number;
  /**
   * How sorted walks under a filter's conditions read and keep their rows: index entries per
   * slice (4000), rows kept per walk (25 000), ms of slices per turn on the event loop (10).
   */
  walkPrefixes?: WalkPrefixOptions;
  /** How the planner's samples are drawn: index entries per slice, each slice a turn (scaled to 5 ms). */
  sampling?: SampleOptions;
  /**
   * Threads that read a scan's larger statements off the event loop (read-threads.ts); default
   * on for a store in a file, 0 for none.
   */
  readThreads?: number;
}

/**
 * Writes as the writing thread is given them: records handed over ahead come as their texts; the
 * others are cleaned and serialised here, as a write on the store's connection would.
 */
async function threadTexts(writes: AtomicWrite[]): Promise<Array<{ collection: string; texts: string[] }>> {
  const out: Array<{ collection: string; texts: string[] }> = [];
  for (const w of writes)
    out.push({
      collection: w.collection,
      // In turns: 17,000 records of a changesheet serialised at once held the event loop 80 ms.
      texts:
        checkedTexts(w) ??
        (await mapInTurns(cleanDocs(w.docs), SERIALISED_PER_TURN, (d) => JSON.stringify(d))),
    });
  return out;
}

/** Records serialised per turn of the event loop for the writing thread (about a millisecond). */
const SERIALISED_PER_TURN = 300;
/** Record keys serialised per turn. */
const KEYS_PER_TURN = 5000;

export class SqliteDocumentStore implements DocumentStore {
  readonly engine = 'sqlite' as const;
  readonly databaseName: string;
  readonly db: Db;
  readonly state: SqliteStateStore;
  /** The connection to the state's own file (see `stateFile`). */
  private readonly stateDb: Db;
  readonly counters: SqliteStoreCounters = {
    bodiesParsed: 0,
    sortedIndexWalks: 0,
    walkPositionsReused: 0,
    writesOnThread: 0,
    recordsParsedOnThread: 0,
    holdsFinished: 0,
    holdsAborted: 0,
    readsOffLoop: 0,
  };
  private readonly statements: StatementCache;
  private readonly context: StoreContext;
  private readonly changeLog: ChangeLog;
  private readonly records: RecordWrites;
  private readonly sweepTimer: NodeJS.Timeout | undefined;
  /** Writes on this connection wait here while the writing thread writes (write-gate.ts). */
  private readonly gate = new WriteGate();
  private writeThread: WriteThread | undefined;
  private readonly writeWaitMs: number;
  private readonly sampling: SampleOptions | undefined;
  private sweeping = false;
  private closed = false;

  constructor(options: SqliteStoreOptions) {
    this.databaseName = options.databaseName ?? 'nmdc';
    this.db = openDatabase(options.file);
    this.db.exec(RECORDS_SCHEMA + ATTRIBUTE_INDEX_SCHEMA + STATISTICS_SCHEMA + CHANGE_LOG_SCHEMA);
    this.statements = new StatementCache(this.db);
    const keys = new AttributeKeys(this.statements);
    ensureAttributeIndex(this.db, this.statements, keys);
    // Short-lived state has a file of its own: its writes (logins, page tokens) never wait for a
    // long write of records, which holds the records' file.
    this.stateDb = this.db.memory
      ? new Database(':memory:')
      : openDatabase(options.stateFile ?? stateFileBeside(options.file), STATE_CACHE_KIB, STATE_PAGE_BYTES);
    createStateSchema(this.stateDb);
    moveStateOut(this.db, this.stateDb);
    this.writeWaitMs = options.writeWaitMs ?? WRITE_WAIT_MS;
    this.state = new SqliteStateStore(this.stateDb, (f) =>
      writeWhenFree(this.stateDb, f, { waitMs: this.writeWaitMs }),
    );
    this.context = {
      db: this.db,
      statements: this.statements,
      counters: this.counters,
      estimates: new ConditionEstimates(this.statements, keys),
      keys,
      checkpoints: new WalkCheckpoints(this.statements, this.counters),
      readers:
        this.db.memory || options.readThreads === 0
          ? undefined
          : new ReadThreads(this.db.name, options.readThreads),
    };
    keepWalkPrefixes(this.context, options.walkPrefixes);
    this.sampling = options.sampling;
    this.changeLog = new ChangeLog(
      this.db,
      this.statements,
      options.changesRetained ?? 200_000,
      options.changesPage,
    );
    this.records = new RecordWrites(this.context, this.changeLog);
    const sweepLater = () => void this.sweepInTurns().catch(options.onSweepError ?? (() => undefined));
    const every = options.sweepIntervalMs ?? 60_000;
    if (every > 0) {
      sweepLater();
      this.sweepTimer = setInterval(sweepLater, every);
      this.sweepTimer.unref();
    }
  }

  /**
   * From now on, large atomic writes (and staged ones, see `prepareAhead`) run on a thread of
   * their own (write-thread.ts), whose module opens this file with the same write hooks as this
   * store has. Not for a store in memory, which no other connection can open.
   */
  offloadAtomicWrites(options: WriteThreadOptions): void {
    if (this.db.memory || this.closed) return;
    this.writeThread = new WriteThread(
      this.db.name,
      options,
      {
        pause: () => this.db.pragma('wal_autocheckpoint = 0'),
        resume: () => this.db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`),
      },
      (records) => (this.counters.recordsParsedOnThread += records),
    );
  }

  /** Starts the writing thread now rather than with the first large write (see `WriteThread.warm`). */
  async warmWriteThread(): Promise<void> {
    await this.writeThread?.warm();
  }

  /**
   * Hands records an `upsertAtomically` will be given as these texts (the same array) to the
   * writing thread ahead of it, so that it prepares them meanwhile; undefined without one.
   */
  prepareAhead(collection: string, texts: string[]): StagedWrite | undefined {
    return this.writeThread?.stage(collection, texts);
  }

  /**
   * Runs a write on this store's connection once neither this store's writing thread nor another
   * connection holds the file's write lock, without holding the event loop meanwhile.
   */
  private write<T>(f: () => T): Promise<T> {
    return writeWhenFree(this.db, f, { waitMs: this.writeWaitMs, before: () => this.gate.passed() });
  }

  /** Registers a hook run inside every write transaction. */
  addWriteHook(hook: WriteHook): void {
    this.records.addHook(hook);
  }

  /** Removes expired state and change-log rows older than the retention window. */
  sweep(): void {
    if (this.closed) return;
    this.state.sweep();
    this.changeLog.sweep();
  }

  /**
   * The periodic sweep: the change log a slice per transaction, with a turn of the event loop
   * between slices, so that pruning the rows of a large write holds neither the file nor the
   * process for long. One runs at a time.
   */
  private async sweepInTurns(): Promise<void> {
    // While the writing thread writes, the sweep would only find the file locked.
    if (this.closed || this.sweeping || this.gate.held) return;
    this.sweeping = true;
    try {
      withoutWaiting(this.stateDb, () => this.state.sweep());
      while (!this.closed && withoutWaiting(this.db, () => this.changeLog.sweepSome()))
        await new Promise((resolve) => setImmediate(resolve));
    } finally {
      this.sweeping = false;
    }
  }

  async nonEmptyCollections(): Promise<string[]> {
    return nonEmptyCollections(this.statements);
  }

  async getById(collection: string, id: string, projection?: Projection): Promise<Doc | null> {
    const body = bodyOf(this.statements, collection, id);
    return body === undefined ? null : compileProjection(projection)(parseBody(this.context, body));
  }

  /** The stored body: every write keeps a record as its `JSON.stringify` (see `upsertAtomically`). */
  async getTextById(collection: string, id: string): Promise<string | null> {
    return bodyOf(this.statements, collection, id) ?? null;
  }

  /**
   * A page of a find: by the access path the planner chose when it gave one and that path can
   * answer this find, else by the store's own choice. `options.stats` learns the path taken.
   */
  async find(collection: string, filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    const { access, stats } = options;
    if (access) {
      const page = await findPageWith(this.context, access.path, collection, filter, options);
      if (page) {
        this.counters.lastStrategy = access.path;
        if (stats) stats.path = access.path;
        return page;
      }
    }
    const page = await findPage(this.context, collection, filter, options);
    if (stats) stats.path = this.counters.lastStrategy;
    return page;
  }

  /**
   * A page of a find read by the strategy given, for a planner that chose it: the page `find`
   * answers, or undefined when that strategy cannot answer this find.
   */
  async findWith(
    strategy: PageStrategy,
    collection: string,
    filter: Filter,
    options: FindOptions = {},
  ): Promise<Doc[] | undefined> {
    return findPageWith(this.context, strategy, collection, filter, options);
  }

  async count(
    collection: string,
    filter: Filter,
    candidateIds?: Iterable<string>,
    options: Pick<FindOptions, 'access' | 'stats'> = {},
  ): Promise<number> {
    return countMatches(this.context, collection, filter, candidateIds, options);
  }

  /**
   * A one-path `$regex` counted on the attribute index's distinct values (value-regex-count.ts);
   * `limits` (distinct values walked, irregular records parsed) default to that file's.
   */
  async countFromIndex(
    collection: string,
    filter: Filter,
    limits: ValueCountLimits = VALUE_COUNT_LIMITS,
  ): Promise<number | undefined> {
    return countRegexOnValues(this.context, collection, filter, { limits });
  }

  /** About `size` records drawn evenly across the collection, as stored text (planner estimates). */
  async sampleTexts(collection: string, size: number): Promise<string[]> {
    return sampleTexts(
      this.context,
      collection,
      recordCount(this.statements, collection),
      size,
      this.sampling,
    );
  }

  /** The attribute index's view of a filter, for the planner's estimates. */
  conditionEstimates(collection: string, filter: Filter, sortPath?: string): AttributeIndexEstimates {
    const plan = planIndex(filter);
    return {
      conditions: plan.conditions.map((c) => ({
        condition: describeCondition(c),
        entries: this.context.estimates.estimate(collection, c),
        ordered: c.path === 'id' || c.op === 'eq',
        // The ids an `id` condition names: at most that many records, however many.
        ...(c.path === 'id' && (c.op === 'eq' || c.op === 'in') ? { counted: true } : {}),
      })),
      exact: plan.exact && candidateIdSql(this.context.estimates, collection, plan).complete,
      cap: ESTIMATE_CAP,
      sortIndexed: sortPath !== undefined && INDEXED_PATHS.has(sortPath),
    };
  }

  async upsertMany(collection: string, docs: Doc[]): Promise<WriteResult> {
    return this.write(() => this.records.upsertMany(collection, docs));
  }

  async upsertAtomically(writes: AtomicWrite[]): Promise<WriteResult> {
    const thread = this.writeThread;
    if (thread?.takes(writes)) {
      // Records the thread was handed ahead come as their texts; the others are cleaned and
      // serialised here, as the write on this connection would.
      const written = await this.onThread(async () => thread.write(await threadTexts(writes)));
      if (written) return written.result;
    }
    return this.write(() => this.records.upsertAtomically(writes));
  }

  /**
   * A write on the writing thread, this process's own writes waiting in the gate meanwhile;
   * undefined when the thread never started (it wrote nothing: the caller writes here instead).
   */
  private async onThread<T>(write: () => Promise<T>): Promise<{ result: T } | undefined> {
    const release = this.gate.hold();
    try {
      const result = await write();
      this.counters.writesOnThread++;
      return { result };
    } catch (err) {
      if (!(err instanceof WriteThreadUnavailable)) throw err;
      return undefined;
    } finally {
      release();
    }
  }

  /**
   * An atomic write held open on the writing thread while the caller decides (see
   * `DocumentStore.holdAtomically`); this process's own writes wait in the gate until it ends.
   * Undefined when the thread does not take this write (or cannot start): the store's connection
   * cannot hold a transaction open while it answers reads.
   */
  async holdAtomically(
    writes: AsyncIterable<AtomicWrite> | Iterable<AtomicWrite>,
    signal?: AbortSignal,
  ): Promise<HeldAtomicWrite | undefined> {
    const thread = this.writeThread;
    if (!thread) return undefined;
    const iterator =
      Symbol.asyncIterator in writes ? writes[Symbol.asyncIterator]() : writes[Symbol.iterator]();
    // The writes that come until the thread takes them (staged, or enough records).
    const head: AtomicWrite[] = [];
    let taken = false;
    for (let next = await iterator.next(); !next.done;) {
      head.push(next.value);
      if ((taken = thread.takes(head))) break;
      next = await iterator.next();
    }
    if (!taken) return undefined;
    const release = this.gate.hold();
    let held: ThreadHeldWrite;
    try {
      // Each write serialised for the thread as it comes (the thread writes the first meanwhile).
      held = await thread.hold(
        (async function* () {
          yield* await threadTexts(head);
          for (let next = await iterator.next(); !next.done; next = await iterator.next())
            yield* await threadTexts([next.value]);
        })(),
        signal,
      );
    } catch (err) {
      release();
      if (err instanceof WriteThreadUnavailable) return undefined;
      if (err instanceof HoldAbandoned) this.counters.holdsAborted++;
      throw err;
    }
    const end = async <T>(ending: () => Promise<T>): Promise<T> => {
      try {
        return await ending();
      } finally {
        release();
      }
    };
    return {
      finish: (more) =>
        end(async () => {
          let texts: Array<{ collection: string; texts: string[] }>;
          try {
            texts = await threadTexts(more);
          } catch (err) {
            await held.abort();
            this.counters.holdsAborted++;
            throw err;
          }
          const result = await held.finish(texts);
          this.counters.writesOnThread++;
          this.counters.holdsFinished++;
          return result;
        }),
      abort: () =>
        end(async () => {
          await held.abort();
          this.counters.holdsAborted++;
        }),
    };
  }

  /**
   * Commits on this connection no longer copy the WAL into the file (SQLite's automatic
   * checkpoint, run inside the commit that passes AUTOCHECKPOINT_PAGES); the owner calls
   * `checkpoint` when it suits it. The writing thread does this: a submission of 10^5 biosamples
   * committed in 0.3-0.4 s instead of 1.3-2.2 s, and its 1.5 s checkpoint runs after the answer.
   */
  deferCheckpoints(): void {
    this.db.pragma('wal_autocheckpoint = 0');
  }

  /**
   * Copies the WAL's pages into the file as far as no reader still needs them (PASSIVE: waits for
   * no reader or writer; another connection checkpointing already makes it a no-op).
   */
  checkpoint(): void {
    this.db.pragma('wal_checkpoint(PASSIVE)');
  }

  /** The thread's side of `holdAtomically`: the transaction begun, once the file's write lock is free. */
  async beginAtomically(): Promise<HeldWrite> {
    return this.write(() => this.records.beginAtomically());
  }

  async readModifyWrite<T>(
    keys: RecordKey[],
    decide: (current: Array<Doc | null>) => ReadModifyWriteDecision<T>,
  ): Promise<T> {
    return this.write(() => this.records.readModifyWrite(keys, decide));
  }

  /**
   * `DocumentStore.writeIfUnchanged`. A change of WRITE_THREAD_MIN_RECORDS records or more goes to
   * the writing thread, serialised here in turns: an update of 30,000 records through
   * `readModifyWrite` held the event loop 7 s.
   */
  async writeIfUnchanged(change: CheckedChange): Promise<CheckedChangeResult> {
    const thread = this.writeThread;
    // The records it touches: those written are mostly those read (an update's).
    const written = change.writes.reduce((n, w) => n + w.docs.length, 0);
    const records = Math.max(change.expected.length, written) + change.deletes.length;
    if (thread?.takesRecords(records)) {
      const keyOf = ({ collection, id }: RecordKey) => ({ collection, id });
      const keys = await jsonArrayInTurns(change.expected, KEYS_PER_TURN, keyOf);
      const deletes = await jsonArrayInTurns(change.deletes, KEYS_PER_TURN, keyOf);
      const expected = await mapInTurns(change.expected, SERIALISED_PER_TURN, ({ doc }) =>
        JSON.stringify(doc),
      );
      const writes: Array<{ collection: string; texts: string[] }> = [];
      for (const { collection, docs } of change.writes)
        writes.push({
          collection,
          texts: await mapInTurns(cleanDocs(docs), SERIALISED_PER_TURN, (d) => JSON.stringify(d)),
        });
      const written = await this.onThread(() => thread.writeIfUnchanged({ keys, expected, writes, deletes }));
      if (written) return written.result;
    }
    return this.write(() => this.records.writeIfUnchanged(change));
  }

  async insertIfAbsent(collection: string, doc: Doc): Promise<boolean> {
    return this.write(() => this.records.insertIfAbsent(collection, doc));
  }

  async deleteMany(collection: string, filter: Filter, limit?: number): Promise<string[]> {
    const max = limit && limit > 0 ? limit : Infinity;
    return this.write(() =>
      this.db
        .transaction((): string[] => {
          const victims: Doc[] = [];
          for (const doc of matchesInIdOrder(this.context, { collection, filter, chunkSize: CHUNK })) {
            if (isPause(doc)) continue; // inside a transaction: no turns, every read here
            victims.push(doc);
            if (victims.length >= max) break;
          }
          return this.records.deleteInTransaction(collection, victims);
        })
        .immediate(),
    );
  }

  async collectionStats(): Promise<CollectionStats[]> {
    return collectionStats(this.db, this.statements);
  }

  async changesSince(sinceSeq: number, limit?: number): Promise<ChangePage> {
    return this.changeLog.changesSince(sinceSeq, limit);
  }

  async latestSeq(): Promise<number> {
    return this.changeLog.latestSeq();
  }

  async *scan(collection: string, batchSize = 1000): AsyncIterable<Doc[]> {
    for await (const texts of this.scanTexts(collection, batchSize))
      yield texts.map((t) => parseBody(this.context, t));
  }

  async *scanTexts(collection: string, batchSize = 1000): AsyncIterable<string[]> {
    yield* scanTexts(this.statements, collection, batchSize);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweepTimer);
    // Writes the thread has under way are waited for; it takes no more from here.
    await this.writeThread?.close();
    await this.context.readers?.close();
    this.statements.clear();
    this.db.close();
    this.stateDb.close();
  }
}

export type { IndexValue, PageStrategy, SqliteStoreCounters, WriteHook };
