/**
 * The EdgeIndex behaviour suite against the MongoDB adapter: records are written through the
 * store, which logs them in its change log, and `catchUp` brings the edge index up to date
 * before each assertion, as the catch-up loop does in the service.
 *
 * Against a real server only when MONGO_URL is set (none runs in the default test environment;
 * each test gets a fresh database, dropped after). Always, against `MemoryDb` below: an
 * in-process interpreter of the few driver calls the store and the edge index make, with
 * MongoDB's query semantics from mingo. It checks what the adapter's commands mean together
 * (which the golden tests cannot); it is not a server, so index use, limits and concurrency are
 * only checked against a real one.
 */
import { randomUUID } from 'node:crypto';
import { MongoClient, type Db } from 'mongodb';
import { Query, find as mingoFind } from 'mingo';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { openEdgeIndex } from '../../src/provenance/index.ts';
import { MongoEdgeIndex } from '../../src/provenance/mongo/edge-index.ts';
import { MongoDocumentStore } from '../../src/store/mongo/document-store.ts';
import { openMongoStore } from '../../src/store/mongo/index.ts';
import { catchUp, checkCollection } from '../../search/maintenance.ts';
import { edgeIndexBehaviour, type EdgeIndexUnderTest, biosample1, study, BSM1, STUDY } from './behaviour.ts';

type Row = Record<string, unknown>;
type Sort = Record<string, 1 | -1> | Array<[string, 1 | -1]>;
interface FindOptions {
  projection?: Record<string, 0 | 1>;
  sort?: Sort;
  skip?: number;
  limit?: number;
}

const matches = (filter: Row) => {
  const q = new Query(filter, {});
  return (doc: Row) => q.test(doc);
};

/** `$set`, `$setOnInsert` (when inserting) and `$inc` on a copy of `doc`. */
function applyUpdate(doc: Row, update: Row, inserting: boolean): Row {
  const out = { ...doc };
  const ops = update as Record<string, Row | undefined>;
  Object.assign(out, ops.$set ?? {});
  if (inserting) Object.assign(out, ops.$setOnInsert ?? {});
  for (const [k, v] of Object.entries(ops.$inc ?? {})) out[k] = ((out[k] as number) ?? 0) + (v as number);
  return out;
}

/** The equality fields of a filter: what an upsert's new document starts with. */
const equalities = (filter: Row): Row =>
  Object.fromEntries(
    Object.entries(filter).filter(
      ([k, v]) => !k.startsWith('$') && (v === null || typeof v !== 'object' || Array.isArray(v)),
    ),
  );

/** The rows a filter can match: by an `_id` or `id` it names exactly (or by `$in`), else all. */
function narrowing(filter: Row): { key: '_id' | 'id'; values: unknown[] } | undefined {
  for (const key of ['_id', 'id'] as const) {
    const v = filter[key];
    if (typeof v === 'string') return { key, values: [v] };
    if (v && typeof v === 'object' && Array.isArray((v as Row).$in))
      return { key, values: (v as Row).$in as unknown[] };
  }
  return undefined;
}

class MemoryCollection {
  /** Rows by `_id`, in insertion order; `byId` finds them by the records' own `id`. */
  private rows = new Map<unknown, Row>();
  private byId = new Map<unknown, Set<unknown>>();
  private nextId = 0;

  private index(row: Row, add: boolean): void {
    if (row.id === undefined) return;
    let set = this.byId.get(row.id);
    if (!set) this.byId.set(row.id, (set = new Set()));
    if (add) set.add(row._id);
    else set.delete(row._id);
  }

  private candidates(filter: Row): Row[] {
    const n = narrowing(filter);
    if (!n) return [...this.rows.values()];
    const keys = n.key === '_id' ? n.values : n.values.flatMap((v) => [...(this.byId.get(v) ?? [])]);
    return [...new Set(keys)].flatMap((k) => (this.rows.has(k) ? [this.rows.get(k)!] : []));
  }

  private matching(filter: Row): Row[] {
    const test = matches(filter);
    return this.candidates(filter).filter(test);
  }

  private insert(doc: Row): void {
    const row = structuredClone(doc);
    if (row._id === undefined) row._id = `oid${String(++this.nextId).padStart(12, '0')}`;
    if (this.rows.has(row._id)) throw new Error(`E11000 duplicate key ${String(row._id)}`);
    this.rows.set(row._id, row);
    this.index(row, true);
  }

  private upsertWith(filter: Row, make: (found: Row | undefined) => Row): 'matched' | 'upserted' {
    const found = this.matching(filter)[0];
    if (found) {
      this.index(found, false);
      const row = { ...structuredClone(make(found)), _id: found._id };
      this.rows.set(found._id, row);
      this.index(row, true);
      return 'matched';
    }
    this.insert(make(undefined));
    return 'upserted';
  }

  private remove(filter: Row, many: boolean): number {
    const victims = this.matching(filter).slice(0, many ? undefined : 1);
    for (const row of victims) {
      this.rows.delete(row._id);
      this.index(row, false);
    }
    return victims.length;
  }

  private query(filter: Row, options: FindOptions = {}): Row[] {
    let cursor = mingoFind(structuredClone(this.matching(filter)), {}, options.projection ?? {});
    if (options.sort) {
      const sort = Array.isArray(options.sort) ? Object.fromEntries(options.sort) : options.sort;
      cursor = cursor.sort(sort);
    }
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    return cursor.all() as Row[];
  }

  async createIndexes(): Promise<string[]> {
    return [];
  }
  async createIndex(): Promise<string> {
    return '';
  }
  find(filter: Row, options?: FindOptions) {
    return { toArray: async () => this.query(filter, options) };
  }
  async findOne(filter: Row, options?: FindOptions): Promise<Row | null> {
    return this.query(filter, { ...options, limit: 1 })[0] ?? null;
  }
  async estimatedDocumentCount(): Promise<number> {
    return this.rows.size;
  }
  async insertMany(docs: Row[]): Promise<void> {
    if (docs.length === 0) throw new Error('Invalid BulkOperation, Batch cannot be empty');
    for (const d of docs) this.insert(d);
  }
  async deleteMany(filter: Row): Promise<{ deletedCount: number }> {
    return { deletedCount: this.remove(filter, true) };
  }
  async updateOne(filter: Row, update: Row, options: { upsert?: boolean } = {}): Promise<void> {
    this.updateOneSync(filter, update, options.upsert ?? false);
  }
  private updateOneSync(filter: Row, update: Row, upsert: boolean): 'matched' | 'upserted' | 'none' {
    if (!upsert && this.matching(filter).length === 0) return 'none';
    return this.upsertWith(filter, (found) =>
      found ? applyUpdate(found, update, false) : applyUpdate(equalities(filter), update, true),
    );
  }
  async replaceOne(filter: Row, replacement: Row, options: { upsert?: boolean } = {}): Promise<void> {
    this.replaceOneSync(filter, replacement, options.upsert ?? false);
  }
  private replaceOneSync(filter: Row, replacement: Row, upsert: boolean): 'matched' | 'upserted' | 'none' {
    if (!upsert && this.matching(filter).length === 0) return 'none';
    return this.upsertWith(filter, () => ({ ...equalities(filter), ...replacement }));
  }
  async findOneAndUpdate(
    filter: Row,
    update: Row,
    options: { upsert?: boolean; returnDocument?: string },
  ): Promise<Row | null> {
    if (options.returnDocument !== 'after') throw new Error('MemoryDb: only returnDocument "after"');
    this.updateOneSync(filter, update, options.upsert ?? false);
    return this.findOne(filter);
  }
  async bulkWrite(ops: Row[]): Promise<{ upsertedCount: number; matchedCount: number }> {
    // As the driver does.
    if (ops.length === 0) throw new Error('Invalid BulkOperation, Batch cannot be empty');
    let upsertedCount = 0;
    let matchedCount = 0;
    const count = (r: string) => {
      if (r === 'upserted') upsertedCount++;
      if (r === 'matched') matchedCount++;
    };
    for (const op of ops as Array<Record<string, Row & { filter: Row; upsert?: boolean }>>) {
      const [kind, a] = Object.entries(op)[0]!;
      if (kind === 'updateOne') count(this.updateOneSync(a.filter, a.update as Row, a.upsert ?? false));
      else if (kind === 'replaceOne')
        count(this.replaceOneSync(a.filter, a.replacement as Row, a.upsert ?? false));
      else if (kind === 'deleteMany') this.remove(a.filter, true);
      else if (kind === 'deleteOne') this.remove(a.filter, false);
      else throw new Error(`MemoryDb: bulk ${kind} not interpreted`);
    }
    return { upsertedCount, matchedCount };
  }
  get size(): number {
    return this.rows.size;
  }
}

/** An in-process stand-in for the driver's Db (see the top of the file). */
class MemoryDb {
  readonly collections = new Map<string, MemoryCollection>();
  collection(name: string): MemoryCollection {
    let c = this.collections.get(name);
    if (!c) this.collections.set(name, (c = new MemoryCollection()));
    return c;
  }
  listCollections() {
    return { toArray: async () => [...this.collections.keys()].map((name) => ({ name })) };
  }
}

/** The suite's writes through the store, each followed by a catch-up of the edge index. */
function throughTheStore(
  store: MongoDocumentStore,
  index: MongoEdgeIndex,
  dispose: () => Promise<void>,
): EdgeIndexUnderTest {
  return {
    index,
    upsert: async (collection, docs) => {
      await store.upsertMany(collection, docs);
      await catchUp(store, index);
    },
    remove: async (collection, ids) => {
      await store.deleteMany(collection, { id: { $in: ids } });
      await catchUp(store, index);
    },
    dispose,
  };
}

const memoryStore = () =>
  new MongoDocumentStore(new MemoryDb() as unknown as Db, undefined, {
    databaseName: 'nmdc',
    transactions: false,
  });

describe('MongoDB edge index on an in-process interpreter of its commands', () => {
  edgeIndexBehaviour('MongoDB commands (MemoryDb), written through the store', async () => {
    const store = memoryStore();
    const index = new MongoEdgeIndex(store.database);
    await index.init();
    return throughTheStore(store, index, async () => {});
  });

  edgeIndexBehaviour('MongoDB commands (MemoryDb), written directly', async () => {
    const store = memoryStore();
    const index = new MongoEdgeIndex(store.database);
    await index.init();
    return {
      index,
      upsert: (collection, docs) => index.index(collection, docs),
      remove: (collection, ids) => index.remove(collection, ids),
      dispose: async () => {},
    };
  });

  it('leaves no node and no edge behind a record written, rewritten and deleted', async () => {
    const store = memoryStore();
    const db = store.database as unknown as MemoryDb;
    const index = new MongoEdgeIndex(store.database);
    const t = throughTheStore(store, index, async () => {});
    await t.upsert('biosample_set', [biosample1]);
    await t.upsert('study_set', [study]);
    expect(db.collection('_graph_edges').size).toBe(1);
    await t.upsert('biosample_set', [{ ...biosample1, associated_studies: ['nmdc:sty-11-other'] }]);
    expect(db.collection('_graph_edges').size).toBe(1);
    await t.remove('biosample_set', [BSM1]);
    await t.remove('study_set', [STUDY]);
    expect(db.collection('_graph_nodes').size).toBe(0);
    expect(db.collection('_graph_edges').size).toBe(0);
  });

  it('builds the edges of the records already stored on open, and then agrees with check-index', async () => {
    const store = memoryStore();
    await store.upsertMany('study_set', [study]);
    await store.upsertMany('biosample_set', [biosample1]);
    const config = loadConfig({ MONGO_URL: 'mongodb://127.0.0.1:9/nmdc', LOG_LEVEL: 'silent' });
    const index = await openEdgeIndex(config, store, pino({ level: 'silent' }), { catchUpEveryMs: 0 });
    try {
      expect(index).toBeInstanceOf(MongoEdgeIndex);
      expect(await (index as MongoEdgeIndex).isBuilt()).toBe(true);
      expect(await index.watermark()).toBe(await store.latestSeq());
      expect(await index.step([BSM1], 'upstream')).toEqual([
        { from: BSM1, to: STUDY, slot: 'associated_studies', type: 'nmdc:Study', collection: 'study_set' },
      ]);
      for (const collection of ['study_set', 'biosample_set']) {
        const report = await checkCollection(store, index, collection);
        expect(report.counts).toEqual({ missing: 0, stale: 0, extra: 0 });
        expect(report.checked).toBe(1);
      }
    } finally {
      await index.close();
    }
  });
});

const url = process.env.MONGO_URL;

describe.skipIf(!url)('MongoDB edge index on a server (set MONGO_URL to run)', () => {
  edgeIndexBehaviour('MongoDB', async () => {
    const name = `nmdc_test_${randomUUID().slice(0, 8)}`;
    const store = await openMongoStore(
      loadConfig({ MONGO_URL: url, MONGO_DB: name, LOG_LEVEL: 'silent' }),
      pino({ level: 'silent' }),
    );
    const index = new MongoEdgeIndex(store.database);
    await index.init();
    return throughTheStore(store, index, async () => {
      await index.close();
      await store.close();
      const client = await MongoClient.connect(url!);
      await client.db(name).dropDatabase();
      await client.close();
    });
  });
});
