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

export interface WriteResult {
  inserted: number;
  updated: number;
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
}

export interface DocumentStore {
  readonly engine: 'sqlite' | 'mongo';
  readonly databaseName: string;
  /** Names of collections that hold at least one record. */
  nonEmptyCollections(): Promise<string[]>;
  find(collection: string, filter: Filter, options?: FindOptions): Promise<Doc[]>;
  count(collection: string, filter: Filter, candidateIds?: Iterable<string>): Promise<number>;
  getById(collection: string, id: string, projection?: Projection): Promise<Doc | null>;
  /** Upsert records by `id`, all or nothing. */
  upsertMany(collection: string, docs: Doc[]): Promise<WriteResult>;
  /** Upserts by id into several collections in one transaction: all or nothing, indexes kept in it included. */
  upsertAtomically(writes: Array<{ collection: string; docs: Doc[] }>): Promise<WriteResult>;
  /** Inserts `doc` unless a record with its id exists; true when inserted. Atomic across processes. */
  insertIfAbsent(collection: string, doc: Doc): Promise<boolean>;
  /** Delete matching records; returns the deleted ids. */
  deleteMany(collection: string, filter: Filter, limit?: number): Promise<string[]>;
  collectionStats(): Promise<CollectionStats[]>;
  /**
   * Ids of records written since `sinceSeq` with the sequence to ask from next time (index freshness).
   * `gap: true` when changes after `sinceSeq` were already pruned from the log: the reader cannot
   * catch up change by change and must start over (rebuild, forget what it cached).
   */
  changesSince(sinceSeq: number): Promise<ChangePage>;
  /** The newest change's sequence number (0 when there is none): "everything up to now". */
  latestSeq(): Promise<number>;
  /** Iterate every record of a collection in id order, in batches (reindex, check-index). */
  scan(collection: string, batchSize?: number): AsyncIterable<Doc[]>;
  /**
   * Optional: like `scan`, each record as its stored JSON text (parsed by whoever needs it), which
   * must be exactly `JSON.stringify` of the record: the search index fingerprints the text.
   */
  scanTexts?(collection: string, batchSize?: number): AsyncIterable<string[]>;
  readonly state: StateStore;
  close(): Promise<void>;
}
