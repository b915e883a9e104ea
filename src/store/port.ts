/**
 * The source of truth for metadata records, accounts and short-lived state (page tokens,
 * cursors, OIDC artifacts). Two adapters: MongoDB (`mongo/`) and embedded SQLite (`sqlite/`).
 * Filters use MongoDB query syntax restricted to the operators `src/query/guard.ts` accepts;
 * both adapters must give the same answers (the behaviour suite in `test/store` checks it).
 */

/** A metadata record: an open object with a string `id`. Never carries `_id`. */
export type Doc = { id: string } & Record<string, unknown>;

/** A MongoDB-style filter document, already checked by the guard. */
export type Filter = Record<string, unknown>;

/** Sort keys in priority order; 1 ascending, -1 descending. `id` is appended as a tie-breaker by callers. */
export type Sort = Array<[field: string, direction: 1 | -1]>;

/** Projection as a list of dotted field paths to include (`id` is always included by the store). */
export type Projection = string[] | undefined;

export interface FindOptions {
  sort?: Sort;
  projection?: Projection;
  skip?: number;
  limit?: number;
  /** Restrict to these ids (from the search index); the full filter is still applied. */
  candidateIds?: Iterable<string>;
  /** Keyset paging on `id` order: only records with id greater than this (only when sort is empty). */
  afterId?: string;
  /**
   * Keyset paging in sort order: the sort keys (one per `sort` entry, the `id` tie-breaker last, as
   * `sortKeyOf` gives them) of the record just before the page, which `skip` still positions. A
   * store that can seek in sort order starts after these keys; the others skip `skip` records.
   */
  after?: unknown[];
  /**
   * The access path the query planner chose (src/query/planner). Adapters that cannot follow it
   * answer the same records their own way; the answer never depends on it.
   */
  access?: AccessDirective;
  /** Filled in by adapters that count their work (the planner's `executionStats`). */
  stats?: ExecutionStats;
  /**
   * For a caller that answers the records whole and reads nothing of them but `id`: without a
   * projection, an adapter that keeps records as their JSON text may hand out any of a page's
   * records as `RecordText` (src/json-text.ts), read and not parsed. The others, and records it
   * parsed anyway (to test the filter, to sort), come parsed as ever.
   */
  asText?: boolean;
}

/**
 * How the embedded store reads a find's records:
 * - `id-walk`: every record in id order, stopping when the page is full;
 * - `candidate-ids`: the ids in `FindOptions.candidateIds` (from the search index);
 * - `attribute-index`: the attribute index narrows by the filter's equality and range conditions;
 * - `sorted-index-walk`: the sort key's attribute index in key order, stopping when the page is full;
 * - `sort-keys`: sort keys read with SQL JSON functions, only the page parsed (exact filters);
 * - `sort-in-memory`: every match parsed and sorted.
 */
export type AccessPathKind =
  'id-walk' | 'candidate-ids' | 'attribute-index' | 'sorted-index-walk' | 'sort-keys' | 'sort-in-memory';

/**
 * A test of the stored JSON text every match passes, as SQL on the column `x.body`: records that
 * fail it are skipped unparsed (src/query/planner/body-prefilter.ts). `pass`: the share of records
 * the planner estimates pass it, when it has an estimate.
 */
export interface BodyTestSql {
  sql: string;
  params: string[];
  pass?: number;
}

export interface AccessDirective {
  path: AccessPathKind;
  bodyTest?: BodyTestSql;
}

export interface ExecutionStats {
  /** Records read (bodies tested or parsed). */
  docsExamined: number;
  /** Index entries read (attribute index rows, candidate ids). */
  keysExamined: number;
  /** Record bodies parsed from JSON. */
  docsParsed: number;
  /** The access path that actually served the read. */
  path?: AccessPathKind;
}

/** What the attribute index knows of a filter (see `DocumentStore.conditionEstimates`). */
export interface AttributeIndexEstimates {
  /**
   * One per condition: a short description, its entry count (capped at `cap`, unless `counted`:
   * the count of ids an `id` condition names, exact at any size), and whether its entries come in
   * id order (equality), so a walk along them can stop early.
   */
  conditions: Array<{ condition: string; entries: number; ordered: boolean; counted?: boolean }>;
  /** True when the conditions alone decide the filter (no record needs the full check). */
  exact: boolean;
  cap: number;
  /** Whether the sort key's path has an attribute index (for sorted walks). */
  sortIndexed?: boolean;
}

export interface CollectionStats {
  collection: string;
  count: number;
  size: number;
  avgObjSize: number;
  storageSize: number;
  totalIndexSize: number;
  totalSize: number;
}

/** One collection's records of an atomic write; `texts`, when given, are their `JSON.stringify`. */
export interface AtomicWrite {
  collection: string;
  docs: Doc[];
  texts?: string[];
}

/** An atomic write held open (see `DocumentStore.holdAtomically`); end it once, either way. */
export interface HeldAtomicWrite {
  finish(more: AtomicWrite[]): Promise<WriteResult>;
  abort(): Promise<void>;
}

export interface WriteResult {
  inserted: number;
  updated: number;
}

/** Names one record: its collection and id. */
export interface RecordKey {
  collection: string;
  id: string;
}

/**
 * A change written only if records are still as they were read (`DocumentStore.writeIfUnchanged`):
 * `readModifyWrite` with its decision made ahead, so a store can write it off the event loop.
 */
export interface CheckedChange {
  /** Records as they must still be, `doc` null for one that must still be absent. */
  expected: Array<RecordKey & { doc: Doc | null }>;
  /** Upserts by id (whole records). */
  writes: Array<{ collection: string; docs: Doc[] }>;
  /** Records deleted before the writes (absent ones are skipped). */
  deletes: RecordKey[];
}

/** What `writeIfUnchanged` did: the position in `expected` of a record that changed (nothing written), or -1. */
export interface CheckedChangeResult {
  changed: number;
  /** Records the deletes found and deleted. */
  deleted: number;
}

/** What `readModifyWrite` writes, decided from the records it read. */
export interface ReadModifyWriteDecision<T> {
  /** Upserts by id (whole records), written in the same transaction as the read. */
  writes: Array<{ collection: string; docs: Doc[] }>;
  /** Records deleted in that transaction, before the writes (absent ones are skipped). */
  deletes?: RecordKey[];
  /** Handed back by `readModifyWrite`. */
  value: T;
}

/** Generic key/value state with expiry, shared by every server process (page tokens, cursors, OIDC). */
export interface StateStore {
  put(kind: string, key: string, value: unknown, ttlSeconds?: number): Promise<void>;
  get<T = unknown>(kind: string, key: string): Promise<T | undefined>;
  delete(kind: string, key: string): Promise<void>;
  /** Values of one kind whose stored `value[field]` equals `equals` (used by the OIDC adapter). */
  findBy<T = unknown>(kind: string, field: string, equals: string): Promise<Array<{ key: string; value: T }>>;
  deleteBy(kind: string, field: string, equals: string): Promise<number>;
  /**
   * Adds one to the counter at (kind, key) and answers the new count, atomically across every
   * process (login rate limits). A counter that is absent or expired starts again at 1 and
   * expires `ttlSeconds` later; a live counter keeps its expiry (a fixed window).
   */
  increment(kind: string, key: string, ttlSeconds: number): Promise<number>;
}

export interface Change {
  collection: string;
  id: string;
  deleted: boolean;
}

/** One page of the change log (see `DocumentStore.changesSince`). */
export interface ChangePage {
  changes: Change[];
  seq: number;
  gap?: boolean;
  /** True when the page stopped at its limit and more changes follow. */
  more?: boolean;
}

export interface DocumentStore {
  readonly engine: 'sqlite' | 'mongo';
  readonly databaseName: string;
  /** Names of collections that hold at least one record. */
  nonEmptyCollections(): Promise<string[]>;
  find(collection: string, filter: Filter, options?: FindOptions): Promise<Doc[]>;
  count(
    collection: string,
    filter: Filter,
    candidateIds?: Iterable<string>,
    options?: Pick<FindOptions, 'access' | 'stats'>,
  ): Promise<number>;
  getById(collection: string, id: string, projection?: Projection): Promise<Doc | null>;
  /**
   * The record with this id as JSON text, exactly `JSON.stringify` of what `getById` (without a
   * projection) gives, or null when there is none. Optional: a store keeping each record as that
   * text (the embedded one) gives it without parsing it; others leave it out.
   */
  getTextById?(collection: string, id: string): Promise<string | null>;
  /** Upsert records by `id`, all or nothing. */
  upsertMany(collection: string, docs: Doc[]): Promise<WriteResult>;
  /**
   * Upserts by id into several collections in one transaction: all or nothing, indexes kept in it
   * included. A write may bring `texts`, each record's `JSON.stringify` (records without `_id`),
   * when the caller has them: a store that keeps records as JSON text may keep those.
   */
  upsertAtomically(writes: AtomicWrite[]): Promise<WriteResult>;
  /**
   * Optional: starts the work the store can do ahead of an `upsertAtomically` that will be given
   * these records as these texts (the same array), e.g. while they are validated (the embedded
   * store hands them to its writing thread, which prepares its indexes' batches). Undefined when the
   * store does nothing ahead: the indexes may then prepare them. `release` once the write is done
   * or abandoned.
   */
  prepareAhead?(collection: string, texts: string[]): { ready: Promise<void>; release(): void } | undefined;
  /**
   * Optional: an `upsertAtomically` begun now and held open while the caller decides whether to
   * keep it (a submission writes while its payload is validated). `writes` may still be coming
   * (an async iterable): the store writes each as it comes and answers once the last is written.
   * No reader sees its records until `finish` writes the last ones and commits; `abort` rolls it
   * all back. It holds the store's writes meanwhile, so the caller must end it. Undefined when the
   * store cannot hold this write apart from its other work (it may have taken the first of
   * `writes` to decide): the caller then writes with `upsertAtomically`. `signal` gives it up while
   * it is still being written, and a failure of `writes` fails it: either way it rejects, with
   * nothing written.
   */
  holdAtomically?(
    writes: AsyncIterable<AtomicWrite> | Iterable<AtomicWrite>,
    signal?: AbortSignal,
  ): Promise<HeldAtomicWrite | undefined>;
  /** Inserts `doc` unless a record with its id exists; true when inserted. Atomic across processes. */
  insertIfAbsent(collection: string, doc: Doc): Promise<boolean>;
  /**
   * Reads the records at `keys` (null where absent), asks `decide` what to write given them, and
   * writes it in one transaction: no other write to those records comes between the read and the
   * write, across processes (SQLite: an immediate transaction; MongoDB: a session transaction,
   * retried on a write conflict, so it needs a replica set like `upsertAtomically`). `decide` must be
   * synchronous and free of side effects (it may run more than once); throwing from it aborts with
   * nothing written and the error propagates.
   */
  readModifyWrite<T>(
    keys: RecordKey[],
    decide: (current: Array<Doc | null>) => ReadModifyWriteDecision<T>,
  ): Promise<T>;
  /**
   * `change`, in one transaction, if every record of `change.expected` is still as given; else
   * nothing. A store may write a large change off the event loop (the embedded store's writing
   * thread). Without it, callers use `readModifyWrite`.
   */
  writeIfUnchanged?(change: CheckedChange): Promise<CheckedChangeResult>;
  /** Delete matching records; returns the deleted ids. */
  deleteMany(collection: string, filter: Filter, limit?: number): Promise<string[]>;
  collectionStats(): Promise<CollectionStats[]>;
  /**
   * Ids of records written since `sinceSeq` with the sequence to ask from next time (index freshness).
   * `gap: true` when changes after `sinceSeq` were already pruned from the log: the reader cannot
   * catch up change by change and must start over (rebuild, forget what it cached). `limit`: at
   * most that many changes (below the store's own page size), `more` saying others follow.
   */
  changesSince(sinceSeq: number, limit?: number): Promise<ChangePage>;
  /** The newest change's sequence number (0 when there is none): "everything up to now". */
  latestSeq(): Promise<number>;
  /** Iterate every record of a collection in id order, in batches (reindex, check-index). */
  scan(collection: string, batchSize?: number): AsyncIterable<Doc[]>;
  /**
   * Optional: like `scan`, each record as its stored JSON text (parsed by whoever needs it), which
   * must be exactly `JSON.stringify` of the record: the search index fingerprints the text.
   */
  scanTexts?(collection: string, batchSize?: number): AsyncIterable<string[]>;
  /**
   * Optional: about `size` records of a collection drawn evenly across it, as their stored JSON
   * text, for the planner's estimates (every record when the collection is smaller).
   */
  sampleTexts?(collection: string, size: number): Promise<string[]>;
  /**
   * Optional: upper-bounded counts of the attribute index entries of each equality or range
   * condition of the filter (the embedded store's side table), for the planner's estimates.
   */
  conditionEstimates?(collection: string, filter: Filter, sortPath?: string): AttributeIndexEstimates;
  /**
   * Optional: the exact count of a filter read off the store's own indexes, without candidates
   * and without reading most records (the embedded store: a one-path `$regex` on an
   * attribute-indexed path with few distinct values there), or undefined when it cannot.
   */
  countFromIndex?(collection: string, filter: Filter): Promise<number | undefined>;
  readonly state: StateStore;
  close(): Promise<void>;
}
