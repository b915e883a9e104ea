/**
 * The MongoDB DocumentStore: records keep their own `id` (unique index) and never expose
 * `_id`; the narrowing attributes get the same indexes as the embedded store's side table;
 * the change log (`change-log.ts`) feeds search-index freshness.
 *
 * Every user-driven read carries `maxTimeMS`; writes run in transactions with bounded retries
 * (`transactions.ts`), their operations one after another, committed with a majority write
 * concern; transient engine errors leave as `StoreUnavailable` (`engine-errors.ts`). What is sent
 * to read records is in `record-queries.ts`, the writes in a session in `record-writes.ts`.
 */
import type { ClientSession, Db, Document, MongoClient } from 'mongodb';
import { compileProjection } from '../projection.ts';
import { cleanDocs } from '../clean-docs.ts';
import type {
  ChangePage,
  CollectionStats,
  Doc,
  DocumentStore,
  Filter,
  FindOptions,
  Projection,
  ReadModifyWriteDecision,
  RecordKey,
  WriteResult,
} from '../port.ts';
import { MongoStateStore, STATE_COLLECTION } from './state-store.ts';
import { CHANGES_COLLECTION, CHANGES_PAGE, COUNTERS_COLLECTION, MongoChangeLog } from './change-log.ts';
import { engine } from './engine-errors.ts';
import {
  checkedInService,
  mongoProjection,
  recordIndexSpecs,
  replacedIndexSpecs,
  serverQuery,
} from './record-queries.ts';
import { NeedsIndexes, readDecideWrite, writeInSession, type SessionWriter } from './record-writes.ts';
import { DEFAULT_TRANSACTION_POLICY, runTransaction, type TransactionPolicy } from './transactions.ts';

export { CHANGES_COLLECTION, COUNTERS_COLLECTION, mongoProjection, recordIndexSpecs };
const DUPLICATE_KEY = 11000;
const INDEX_NOT_FOUND = 27;

export interface MongoStoreOptions {
  databaseName: string;
  /** Whether the deployment runs multi-document transactions (replica set or sharded cluster). */
  transactions: boolean;
  /** Time limit of every user-driven operation, in milliseconds (`maxTimeMS`). Default 30 s. */
  maxTimeMS?: number;
  /** Retries of transactions that meet a transient error. */
  transactionPolicy?: Partial<TransactionPolicy>;
  /** Change-log sequence numbers kept for readers. Default 1 000 000. */
  changesRetained?: number;
  /** Change-log entries one `changesSince` answers at most. Default 100 000. */
  changesPage?: number;
  /** How often old change-log entries are pruned; 0: never (tests prune by hand). Default one minute. */
  pruneEveryMs?: number;
}

export class MongoDocumentStore implements DocumentStore {
  readonly engine = 'mongo' as const;
  readonly databaseName: string;
  readonly state: MongoStateStore;
  readonly changeLog: MongoChangeLog;
  private readonly indexed = new Set<string>();
  private readonly maxTimeMS: number;
  private readonly policy: TransactionPolicy;
  private readonly pruneTimer: NodeJS.Timeout | undefined;
  private readonly writer: SessionWriter;

  constructor(
    private readonly db: Db,
    private readonly client: MongoClient | undefined,
    private readonly options: MongoStoreOptions,
  ) {
    this.databaseName = options.databaseName;
    this.maxTimeMS = options.maxTimeMS ?? 30_000;
    this.policy = {
      ...DEFAULT_TRANSACTION_POLICY,
      timeLimitMs: this.maxTimeMS,
      ...options.transactionPolicy,
    };
    this.state = new MongoStateStore(db, this.maxTimeMS);
    this.changeLog = new MongoChangeLog(db, client, {
      retained: options.changesRetained ?? 1_000_000,
      page: options.changesPage ?? CHANGES_PAGE,
      maxTimeMS: this.maxTimeMS,
      policy: this.policy,
      transactions: options.transactions && client !== undefined,
    });
    this.writer = { db, changeLog: this.changeLog, maxTimeMS: this.maxTimeMS, indexed: this.indexed };
    const pruneEveryMs = options.pruneEveryMs ?? 60_000;
    if (pruneEveryMs > 0) {
      this.pruneTimer = setInterval(() => void this.changeLog.prune().catch(() => undefined), pruneEveryMs);
      this.pruneTimer.unref();
    }
  }

  /** The database the records are in, for indexes kept beside them (the provenance edge index). */
  get database(): Db {
    return this.db;
  }

  /** The client, for transactions of indexes kept beside the records; undefined without transactions. */
  get transactionClient(): MongoClient | undefined {
    return this.options.transactions ? this.client : undefined;
  }

  /** Limits of transactions and operations, for indexes kept beside the records. */
  get limits(): { maxTimeMS: number; policy: TransactionPolicy } {
    return { maxTimeMS: this.maxTimeMS, policy: this.policy };
  }

  /** Indexes for the given record collections and the internal collections. */
  async init(recordCollections: readonly string[]): Promise<void> {
    await engine(async () => {
      await this.state.createIndexes();
      await this.changeLog.init();
      for (const c of recordCollections) {
        await this.ensureIndexes(c);
        await this.dropReplacedIndexes(c);
      }
    });
  }

  /**
   * Drops the single-field indexes earlier versions made on the narrowing attributes, once their
   * compound replacements exist (they serve the same queries, and sorted pages besides). Only an
   * index with the old name and exactly the old key goes; one another process dropped first is
   * no error.
   */
  private async dropReplacedIndexes(collection: string): Promise<void> {
    const c = this.db.collection(collection);
    const present = await c.listIndexes({ maxTimeMS: this.maxTimeMS }).toArray();
    const same = (a: Document, b: Document) => JSON.stringify(a) === JSON.stringify(b);
    for (const old of replacedIndexSpecs()) {
      if (!present.some((i) => i.name === old.name && same(i.key as Document, old.key))) continue;
      try {
        await c.dropIndex(old.name, { maxTimeMS: this.maxTimeMS });
      } catch (err) {
        if ((err as { code?: number }).code !== INDEX_NOT_FOUND) throw err;
      }
    }
  }

  private async ensureIndexes(collection: string): Promise<void> {
    if (this.indexed.has(collection)) return;
    await this.db.collection(collection).createIndexes(recordIndexSpecs());
    this.indexed.add(collection);
  }

  async nonEmptyCollections(): Promise<string[]> {
    return engine(async () => {
      const names = (await this.db.listCollections({}, { nameOnly: true }).toArray())
        .map((c) => c.name)
        .filter((n) => !n.startsWith('_') && !n.startsWith('system.') && !n.startsWith('fs.'));
      const nonEmpty: string[] = [];
      for (const name of names) {
        const count = await this.db.collection(name).estimatedDocumentCount({ maxTimeMS: this.maxTimeMS });
        if (count > 0) nonEmpty.push(name);
      }
      return nonEmpty.sort();
    });
  }

  async find(collection: string, filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    const sort: Array<[string, 1 | -1]> = options.sort && options.sort.length > 0 ? [...options.sort] : [];
    if (!sort.some(([f]) => f === 'id')) sort.push(['id', 1]);
    // A sort by another path than id may be done in memory (no index for the path, or the
    // server's plan narrows by the filter first): it may spill to disk rather than fail at the
    // server's 100 MB limit, whatever allowDiskUseByDefault says.
    const allowDiskUse = sort.some(([f]) => f !== 'id');
    const { q, exact } = serverQuery(filter, options.candidateIds, options.afterId);
    if (!exact) {
      const project = compileProjection(options.projection);
      return engine(async () => {
        const out: Doc[] = [];
        let skip = options.skip ?? 0;
        for await (const doc of checkedInService(this.db, this.maxTimeMS, collection, q, filter, {
          sort,
          allowDiskUse,
        })) {
          if (skip > 0) {
            skip--;
            continue;
          }
          out.push(project(doc));
          if (options.limit && options.limit > 0 && out.length >= options.limit) break;
        }
        return out;
      });
    }
    const findOptions: Document = { projection: mongoProjection(options.projection), sort };
    if (allowDiskUse) findOptions.allowDiskUse = true;
    if (options.skip) findOptions.skip = options.skip;
    if (options.limit && options.limit > 0) findOptions.limit = options.limit;
    findOptions.maxTimeMS = this.maxTimeMS;
    return engine(
      async () => (await this.db.collection(collection).find(q, findOptions).toArray()) as unknown as Doc[],
    );
  }

  /**
   * Counts matches. The whole collection (an empty filter) is counted from the collection's
   * metadata (`estimatedDocumentCount`), not by scanning it.
   */
  async count(collection: string, filter: Filter, candidateIds?: Iterable<string>): Promise<number> {
    const { q, exact } = serverQuery(filter, candidateIds);
    const c = this.db.collection(collection);
    if (!exact) {
      return engine(async () => {
        let n = 0;
        for await (const _ of checkedInService(this.db, this.maxTimeMS, collection, q, filter, {})) n++;
        return n;
      });
    }
    return engine(() =>
      Object.keys(q).length === 0
        ? c.estimatedDocumentCount({ maxTimeMS: this.maxTimeMS })
        : c.countDocuments(q, { maxTimeMS: this.maxTimeMS }),
    );
  }

  /** A random sample by MongoDB's `$sample` stage, as JSON text (the planner's estimates). */
  async sampleTexts(collection: string, size: number): Promise<string[]> {
    const docs = await engine(() =>
      this.db
        .collection(collection)
        .aggregate([{ $sample: { size } }, { $project: { _id: 0 } }], { maxTimeMS: this.maxTimeMS })
        .toArray(),
    );
    return docs.map((d) => JSON.stringify(d));
  }

  async getById(collection: string, id: string, projection?: Projection): Promise<Doc | null> {
    const found = await engine(() =>
      this.db
        .collection(collection)
        .findOne({ id }, { projection: mongoProjection(projection), maxTimeMS: this.maxTimeMS }),
    );
    return found as unknown as Doc | null;
  }

  /** Runs `work` in a transaction when the deployment has them, else directly. */
  private async atomically<T>(work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
    if (!this.options.transactions || !this.client) return engine(() => work(undefined));
    return engine(() => runTransaction(this.client!, work, this.policy));
  }

  async upsertMany(collection: string, docs: Doc[]): Promise<WriteResult> {
    return this.upsertAtomically([{ collection, docs }]);
  }

  /** Needs a transaction for all-or-nothing across collections: a replica set or sharded cluster. */
  async upsertAtomically(writes: Array<{ collection: string; docs: Doc[] }>): Promise<WriteResult> {
    const cleaned = writes
      .map((w) => ({ collection: w.collection, docs: cleanDocs(w.docs) }))
      .filter((w) => w.docs.length > 0);
    await engine(async () => {
      for (const { collection } of cleaned) await this.ensureIndexes(collection);
    });
    return this.atomically((session) => writeInSession(this.writer, cleaned, session));
  }

  /**
   * The read and the writes share one session transaction: a concurrent write to a record read
   * here makes one of the two transactions fail with a write conflict, and the transaction runs
   * again (running `decide` again on the records as they now are). The records are read one
   * collection after another (a transaction's operations never run in parallel).
   */
  async readModifyWrite<T>(
    keys: RecordKey[],
    decide: (current: Array<Doc | null>) => ReadModifyWriteDecision<T>,
  ): Promise<T> {
    await engine(async () => {
      for (const collection of new Set(keys.map((k) => k.collection))) await this.ensureIndexes(collection);
    });
    for (;;) {
      try {
        return await this.atomically((session) => readDecideWrite(this.writer, keys, decide, session));
      } catch (err) {
        // Indexes are made outside transactions: make them, then run it all again.
        if (!(err instanceof NeedsIndexes)) throw err;
        await engine(async () => {
          for (const collection of err.collections) await this.ensureIndexes(collection);
        });
      }
    }
  }

  /** The unique index on `id` decides, so concurrent inserts of one id leave exactly one winner. */
  async insertIfAbsent(collection: string, doc: Doc): Promise<boolean> {
    const [clean] = cleanDocs([doc]);
    await engine(() => this.ensureIndexes(collection));
    try {
      await this.atomically(async (session) => {
        await this.db.collection(collection).insertOne({ ...clean! }, { session });
        await this.changeLog.record(collection, [clean!.id], false, session);
      });
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === DUPLICATE_KEY) return false;
      throw err;
    }
  }

  async deleteMany(collection: string, filter: Filter, limit?: number): Promise<string[]> {
    const { q, exact } = serverQuery(filter);
    return this.atomically(async (session) => {
      let ids: string[];
      if (exact) {
        const findOptions: Document = { projection: { _id: 0, id: 1 }, sort: { id: 1 }, session };
        if (limit && limit > 0) findOptions.limit = limit;
        findOptions.maxTimeMS = this.maxTimeMS;
        ids = (await this.db.collection(collection).find(q, findOptions).toArray()).map(
          (d) => (d as unknown as { id: string }).id,
        );
      } else {
        ids = [];
        for await (const doc of checkedInService(this.db, this.maxTimeMS, collection, q, filter, {
          sort: { id: 1 },
          session,
        })) {
          ids.push(doc.id);
          if (limit && limit > 0 && ids.length >= limit) break;
        }
      }
      if (ids.length === 0) return [];
      await this.db.collection(collection).deleteMany({ id: { $in: ids } }, { session });
      await this.changeLog.record(collection, ids, true, session);
      return ids;
    });
  }

  /**
   * Storage figures from `$collStats`, which answers one document per shard on a sharded
   * cluster: the figures are summed over them.
   */
  async collectionStats(): Promise<CollectionStats[]> {
    const stats: CollectionStats[] = [];
    for (const collection of await this.nonEmptyCollections()) {
      const rows = await engine(() =>
        this.db
          .collection(collection)
          .aggregate([{ $collStats: { storageStats: {} } }], { maxTimeMS: this.maxTimeMS })
          .toArray(),
      );
      const sum = (key: string) =>
        rows.reduce((n, row) => n + (((row.storageStats ?? {}) as Record<string, number>)[key] ?? 0), 0);
      const count = sum('count');
      const size = sum('size');
      const storageSize = sum('storageSize');
      const totalIndexSize = sum('totalIndexSize');
      stats.push({
        collection,
        count,
        size,
        avgObjSize: count > 0 ? size / count : 0,
        storageSize,
        totalIndexSize,
        totalSize: rows.every(
          (r) => (r.storageStats as Record<string, number> | undefined)?.totalSize !== undefined,
        )
          ? sum('totalSize')
          : storageSize + totalIndexSize,
      });
    }
    return stats;
  }

  async changesSince(sinceSeq: number, limit?: number): Promise<ChangePage> {
    return engine(() => this.changeLog.changesSince(sinceSeq, limit));
  }

  async latestSeq(): Promise<number> {
    return engine(() => this.changeLog.latestSeq());
  }

  async *scan(collection: string, batchSize = 1000): AsyncIterable<Doc[]> {
    let cursor: string | undefined;
    for (;;) {
      const after = cursor;
      const batch = (await engine(() =>
        this.db
          .collection(collection)
          .find(after === undefined ? {} : { id: { $gt: after } }, {
            projection: { _id: 0 },
            sort: { id: 1 },
            limit: batchSize,
            maxTimeMS: this.maxTimeMS,
          })
          .toArray(),
      )) as unknown as Doc[];
      if (batch.length === 0) return;
      yield batch;
      if (batch.length < batchSize) return;
      cursor = batch[batch.length - 1]!.id;
    }
  }

  async close(): Promise<void> {
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.client?.close();
  }
}

export { STATE_COLLECTION };
