/**
 * The MongoDB DocumentStore: records keep their own `id` (unique index) and never expose
 * `_id`; the narrowing attributes get the same indexes as the embedded store's side table;
 * a `_changes` collection with a counter feeds search-index freshness.
 */
import type { AnyBulkWriteOperation, ClientSession, Db, Document, MongoClient } from 'mongodb';
import { assertRegexesSupported } from '../filter.ts';
import { cleanDocs } from '../clean-docs.ts';
import { keysByCollection } from '../record-keys.ts';
import { INDEXED_PATHS } from '../sqlite/attribute-index.ts';
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

export const CHANGES_COLLECTION = '_changes';
export const COUNTERS_COLLECTION = '_counters';
const CHANGES_PAGE = 100_000;
const DUPLICATE_KEY = 11000;

interface ChangeRecord {
  seq: number;
  collection: string;
  id: string;
  deleted: boolean;
}

export interface MongoStoreOptions {
  databaseName: string;
  /** Whether the deployment runs multi-document transactions (replica set or sharded cluster). */
  transactions: boolean;
}

/** Index specifications every record collection gets: unique `id`, plus each narrowing attribute. */
export function recordIndexSpecs(): Array<{ key: Record<string, 1>; name: string; unique?: boolean }> {
  return [
    { key: { id: 1 }, name: 'id_1', unique: true },
    ...[...INDEXED_PATHS].map((p) => ({ key: { [p]: 1 as const }, name: `${p}_1` })),
  ];
}

/** Mongo projection for a list of paths: `_id` out, `id` in, no path colliding with a shorter one. */
export function mongoProjection(projection: Projection): Document {
  if (!projection || projection.length === 0) return { _id: 0 };
  const paths = [...new Set(['id', ...projection.filter((p) => p !== '_id')])].sort();
  const kept = paths.filter((p) => !paths.some((q) => q !== p && p.startsWith(`${q}.`)));
  return { _id: 0, ...Object.fromEntries(kept.map((p) => [p, 1])) };
}

export class MongoDocumentStore implements DocumentStore {
  readonly engine = 'mongo' as const;
  readonly databaseName: string;
  readonly state: MongoStateStore;
  private readonly indexed = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly client: MongoClient | undefined,
    private readonly options: MongoStoreOptions,
  ) {
    this.databaseName = options.databaseName;
    this.state = new MongoStateStore(db);
  }

  /** The database the records are in, for indexes kept beside them (the provenance edge index). */
  get database(): Db {
    return this.db;
  }

  /** Indexes for the given record collections and the internal collections. */
  async init(recordCollections: readonly string[]): Promise<void> {
    await this.state.createIndexes();
    await this.db.collection<ChangeRecord>(CHANGES_COLLECTION).createIndex({ seq: 1 }, { name: 'seq_1' });
    for (const c of recordCollections) await this.ensureIndexes(c);
  }

  private async ensureIndexes(collection: string): Promise<void> {
    if (this.indexed.has(collection)) return;
    await this.db.collection(collection).createIndexes(recordIndexSpecs());
    this.indexed.add(collection);
  }

  private query(filter: Filter, candidateIds?: Iterable<string>, afterId?: string): Filter {
    assertRegexesSupported(filter);
    const clauses: Filter[] = [];
    if (candidateIds !== undefined) clauses.push({ id: { $in: [...new Set(candidateIds)] } });
    if (afterId !== undefined) clauses.push({ id: { $gt: afterId } });
    if (clauses.length === 0) return filter;
    if (Object.keys(filter).length > 0) clauses.push(filter);
    return clauses.length === 1 ? clauses[0]! : { $and: clauses };
  }

  async nonEmptyCollections(): Promise<string[]> {
    const names = (await this.db.listCollections({}, { nameOnly: true }).toArray())
      .map((c) => c.name)
      .filter((n) => !n.startsWith('_') && !n.startsWith('system.'));
    const nonEmpty: string[] = [];
    for (const name of names) {
      if ((await this.db.collection(name).estimatedDocumentCount()) > 0) nonEmpty.push(name);
    }
    return nonEmpty.sort();
  }

  async find(collection: string, filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
    const sort: Array<[string, 1 | -1]> = options.sort && options.sort.length > 0 ? [...options.sort] : [];
    if (!sort.some(([f]) => f === 'id')) sort.push(['id', 1]);
    const findOptions: Document = { projection: mongoProjection(options.projection), sort };
    if (options.skip) findOptions.skip = options.skip;
    if (options.limit && options.limit > 0) findOptions.limit = options.limit;
    const q = this.query(filter, options.candidateIds, options.afterId);
    return (await this.db.collection(collection).find(q, findOptions).toArray()) as unknown as Doc[];
  }

  async count(collection: string, filter: Filter, candidateIds?: Iterable<string>): Promise<number> {
    return this.db.collection(collection).countDocuments(this.query(filter, candidateIds));
  }

  /** A random sample by MongoDB's `$sample` stage, as JSON text (the planner's estimates). */
  async sampleTexts(collection: string, size: number): Promise<string[]> {
    const docs = await this.db
      .collection(collection)
      .aggregate([{ $sample: { size } }, { $project: { _id: 0 } }])
      .toArray();
    return docs.map((d) => JSON.stringify(d));
  }

  async getById(collection: string, id: string, projection?: Projection): Promise<Doc | null> {
    const found = await this.db
      .collection(collection)
      .findOne({ id }, { projection: mongoProjection(projection) });
    return found as unknown as Doc | null;
  }

  /** Runs `work` in a transaction when the deployment has them, else directly. */
  private async atomically<T>(work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
    if (!this.options.transactions || !this.client) return work(undefined);
    const session = this.client.startSession();
    try {
      let result: T | undefined;
      await session.withTransaction(async () => {
        result = await work(session);
      });
      return result as T;
    } finally {
      await session.endSession();
    }
  }

  private async recordChanges(
    collection: string,
    ids: string[],
    deleted: boolean,
    session: ClientSession | undefined,
  ): Promise<void> {
    if (ids.length === 0) return;
    const counter = await this.db
      .collection<{ _id: string; seq: number }>(COUNTERS_COLLECTION)
      .findOneAndUpdate(
        { _id: 'changes' },
        { $inc: { seq: ids.length } },
        { upsert: true, returnDocument: 'after', session },
      );
    const last = counter?.seq ?? ids.length;
    const first = last - ids.length + 1;
    await this.db.collection<ChangeRecord>(CHANGES_COLLECTION).insertMany(
      ids.map((id, i) => ({ seq: first + i, collection, id, deleted })),
      { ordered: true, session },
    );
  }

  async upsertMany(collection: string, docs: Doc[]): Promise<WriteResult> {
    return this.upsertAtomically([{ collection, docs }]);
  }

  /** Needs a transaction for all-or-nothing across collections: a replica set or sharded cluster. */
  async upsertAtomically(writes: Array<{ collection: string; docs: Doc[] }>): Promise<WriteResult> {
    const cleaned = writes
      .map((w) => ({ collection: w.collection, docs: cleanDocs(w.docs) }))
      .filter((w) => w.docs.length > 0);
    for (const { collection } of cleaned) await this.ensureIndexes(collection);
    return this.atomically((session) => this.writeInSession(cleaned, session));
  }

  /**
   * The read and the writes share one session transaction: a concurrent write to a record read
   * here makes one of the two transactions fail with a write conflict, and `withTransaction`
   * retries it (running `decide` again on the records as they now are).
   */
  async readModifyWrite<T>(
    keys: RecordKey[],
    decide: (current: Array<Doc | null>) => ReadModifyWriteDecision<T>,
  ): Promise<T> {
    for (const collection of new Set(keys.map((k) => k.collection))) await this.ensureIndexes(collection);
    return this.atomically(async (session) => {
      const current = await Promise.all(
        keys.map(
          async ({ collection, id }) =>
            (await this.db
              .collection(collection)
              .findOne({ id }, { projection: { _id: 0 }, session })) as Doc | null,
        ),
      );
      const { writes, deletes = [], value } = decide(current);
      for (const [collection, ids] of keysByCollection(deletes)) {
        const present = (
          await this.db
            .collection(collection)
            .find({ id: { $in: ids } }, { projection: { _id: 0, id: 1 }, session })
            .toArray()
        ).map((d) => (d as unknown as { id: string }).id);
        if (present.length === 0) continue;
        await this.db.collection(collection).deleteMany({ id: { $in: present } }, { session });
        await this.recordChanges(collection, present, true, session);
      }
      const cleaned = writes
        .map((w) => ({ collection: w.collection, docs: cleanDocs(w.docs) }))
        .filter((w) => w.docs.length > 0);
      for (const { collection } of cleaned) await this.ensureIndexes(collection);
      await this.writeInSession(cleaned, session);
      return value;
    });
  }

  /** Replaces (or inserts) each record by id, recording the changes, in the caller's session. */
  private async writeInSession(
    writes: Array<{ collection: string; docs: Doc[] }>,
    session: ClientSession | undefined,
  ): Promise<WriteResult> {
    const total = { inserted: 0, updated: 0 };
    for (const { collection, docs } of writes) {
      const ops: AnyBulkWriteOperation[] = docs.map((doc) => ({
        replaceOne: { filter: { id: doc.id }, replacement: doc, upsert: true },
      }));
      const result = await this.db.collection(collection).bulkWrite(ops, { ordered: false, session });
      await this.recordChanges(
        collection,
        docs.map((d) => d.id),
        false,
        session,
      );
      total.inserted += result.upsertedCount;
      total.updated += result.matchedCount;
    }
    return total;
  }

  /** The unique index on `id` decides, so concurrent inserts of one id leave exactly one winner. */
  async insertIfAbsent(collection: string, doc: Doc): Promise<boolean> {
    const [clean] = cleanDocs([doc]);
    await this.ensureIndexes(collection);
    try {
      await this.atomically(async (session) => {
        await this.db.collection(collection).insertOne({ ...clean! }, { session });
        await this.recordChanges(collection, [clean!.id], false, session);
      });
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === DUPLICATE_KEY) return false;
      throw err;
    }
  }

  async deleteMany(collection: string, filter: Filter, limit?: number): Promise<string[]> {
    return this.atomically(async (session) => {
      const findOptions: Document = { projection: { _id: 0, id: 1 }, sort: { id: 1 }, session };
      if (limit && limit > 0) findOptions.limit = limit;
      const ids = (await this.db.collection(collection).find(this.query(filter), findOptions).toArray()).map(
        (d) => (d as unknown as { id: string }).id,
      );
      if (ids.length === 0) return [];
      await this.db.collection(collection).deleteMany({ id: { $in: ids } }, { session });
      await this.recordChanges(collection, ids, true, session);
      return ids;
    });
  }

  async collectionStats(): Promise<CollectionStats[]> {
    const stats: CollectionStats[] = [];
    for (const collection of await this.nonEmptyCollections()) {
      const [row] = await this.db
        .collection(collection)
        .aggregate([{ $collStats: { storageStats: {} } }])
        .toArray();
      const s = (row?.storageStats ?? {}) as Record<string, number>;
      stats.push({
        collection,
        count: s.count ?? 0,
        size: s.size ?? 0,
        avgObjSize: s.avgObjSize ?? 0,
        storageSize: s.storageSize ?? 0,
        totalIndexSize: s.totalIndexSize ?? 0,
        totalSize: s.totalSize ?? (s.storageSize ?? 0) + (s.totalIndexSize ?? 0),
      });
    }
    return stats;
  }

  async changesSince(sinceSeq: number): Promise<ChangePage> {
    // One row past the page tells whether more follow.
    const rows = await this.db
      .collection<ChangeRecord>(CHANGES_COLLECTION)
      .find({ seq: { $gt: sinceSeq } }, { projection: { _id: 0 }, sort: { seq: 1 }, limit: CHANGES_PAGE + 1 })
      .toArray();
    const more = rows.length > CHANGES_PAGE;
    if (more) rows.length = CHANGES_PAGE;
    const latest = new Map<string, { collection: string; id: string; deleted: boolean }>();
    for (const r of rows) {
      const key = `${r.collection}\u0000${r.id}`;
      latest.delete(key);
      latest.set(key, { collection: r.collection, id: r.id, deleted: r.deleted });
    }
    // The MongoDB change log is never pruned, so no change is ever missing (no gap).
    const page: ChangePage = {
      changes: [...latest.values()],
      seq: rows.length > 0 ? rows[rows.length - 1]!.seq : sinceSeq,
    };
    if (more) page.more = true;
    return page;
  }

  async latestSeq(): Promise<number> {
    const newest = await this.db
      .collection<ChangeRecord>(CHANGES_COLLECTION)
      .findOne({}, { projection: { _id: 0, seq: 1 }, sort: { seq: -1 } });
    return newest?.seq ?? 0;
  }

  async *scan(collection: string, batchSize = 1000): AsyncIterable<Doc[]> {
    let cursor: string | undefined;
    for (;;) {
      const batch = (await this.db
        .collection(collection)
        .find(cursor === undefined ? {} : { id: { $gt: cursor } }, {
          projection: { _id: 0 },
          sort: { id: 1 },
          limit: batchSize,
        })
        .toArray()) as unknown as Doc[];
      if (batch.length === 0) return;
      yield batch;
      if (batch.length < batchSize) return;
      cursor = batch[batch.length - 1]!.id;
    }
  }

  async close(): Promise<void> {
    await this.client?.close();
  }
}

export { STATE_COLLECTION };
