/**
 * The EdgeIndex behaviour suite against the MongoDB adapter: records are written through the
 * store, which logs them in its change log, and `catchUp` brings the edge index up to date
 * before each assertion, as the catch-up loop does in the service.
 *
 * Against a real server only when MONGO_URL is set (none runs in the default test environment;
 * each test gets a fresh database, dropped after). Always, against the strict stand-in
 * (test/support/mongo-standin.ts): a replica set in process, with MongoDB's query semantics from
 * mingo, transactions, sessions and write concerns as the server and driver enforce them. It
 * checks what the adapter's commands mean together (which the golden tests cannot); index use
 * and performance are only checked against a real server.
 */
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { openEdgeIndex } from '../../src/provenance/index.ts';
import { MongoEdgeIndex } from '../../src/provenance/mongo/edge-index.ts';
import { MongoDocumentStore } from '../../src/store/mongo/document-store.ts';
import { openMongoStore, storeOnClient } from '../../src/store/mongo/index.ts';
import { StandInServer } from '../support/mongo-standin.ts';
import { catchUp, checkCollection } from '../../search/maintenance.ts';
import { edgeIndexBehaviour, type EdgeIndexUnderTest, biosample1, study, BSM1, STUDY } from './behaviour.ts';

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

const standInConfig = loadConfig({ MONGO_URL: 'mongodb://db1,db2,db3/?replicaSet=rs0', LOG_LEVEL: 'silent' });

async function standInStore(server = new StandInServer()): Promise<MongoDocumentStore> {
  return storeOnClient(
    server.client() as unknown as MongoClient,
    standInConfig,
    pino({ level: 'silent' }),
    'stand-in',
    {
      pruneEveryMs: 0,
    },
  );
}

/** The edge index as the service opens it on a replica set: versioned writes in transactions. */
const versionedIndex = (store: MongoDocumentStore) =>
  new MongoEdgeIndex(store.database, { client: store.transactionClient, policy: store.limits.policy });

const sizeOf = (store: MongoDocumentStore, collection: string) =>
  (store.database.client as unknown as { server: StandInServer }).server.peek('nmdc', collection).length;

describe('MongoDB edge index on the stand-in', () => {
  edgeIndexBehaviour('MongoDB stand-in, written through the store', async () => {
    const store = await standInStore();
    const index = versionedIndex(store);
    await index.init();
    return throughTheStore(store, index, async () => {});
  });

  edgeIndexBehaviour(
    'MongoDB stand-in, written directly without versions (a standalone server)',
    async () => {
      const store = await standInStore();
      const index = new MongoEdgeIndex(store.database);
      await index.init();
      return {
        index,
        upsert: (collection, docs) => index.index(collection, docs),
        remove: (collection, ids) => index.remove(collection, ids),
        dispose: async () => {},
      };
    },
  );

  it('leaves no node and no edge behind a record written, rewritten and deleted', async () => {
    const store = await standInStore();
    const index = versionedIndex(store);
    const t = throughTheStore(store, index, async () => {});
    await t.upsert('biosample_set', [biosample1]);
    await t.upsert('study_set', [study]);
    expect(sizeOf(store, '_graph_edges')).toBe(1);
    await t.upsert('biosample_set', [{ ...biosample1, associated_studies: ['nmdc:sty-11-other'] }]);
    expect(sizeOf(store, '_graph_edges')).toBe(1);
    await t.remove('biosample_set', [BSM1]);
    await t.remove('study_set', [STUDY]);
    expect(sizeOf(store, '_graph_nodes')).toBe(0);
    expect(sizeOf(store, '_graph_edges')).toBe(0);
  });

  it('builds the edges of the records already stored on open, and then agrees with check-index', async () => {
    const store = await standInStore();
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

describe('MongoDB edge index: several processes catching up at once (stand-in)', () => {
  it('keeps the newest version when a slower catch-up writes a record it read before a newer one was indexed', async () => {
    const server = new StandInServer();
    const store = await standInStore(server);
    // Two service processes, each with its own client and catch-up.
    const storeB = await standInStore(server);
    const slow = versionedIndex(store);
    const fast = versionedIndex(storeB);
    await slow.init();
    await store.upsertMany('study_set', [study, { id: 'nmdc:sty-11-other', type: 'nmdc:Study' }]);
    await catchUp(store, fast);
    await store.upsertMany('biosample_set', [biosample1]);
    // The slow process reads the change and the record, then stalls before writing its edges.
    let release!: () => void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    let reading!: () => void;
    const read = new Promise<void>((resolve) => (reading = resolve));
    const write = slow.index.bind(slow);
    slow.index = async (collection, docs) => {
      reading();
      await stalled;
      return write(collection, docs);
    };
    const slowCatchUp = catchUp(store, slow);
    await read;
    // Meanwhile the record changes, and the other process indexes the new version.
    await storeB.upsertMany('biosample_set', [{ ...biosample1, associated_studies: ['nmdc:sty-11-other'] }]);
    await catchUp(storeB, fast);
    expect((await fast.step([BSM1], 'upstream')).map((s) => s.to)).toEqual(['nmdc:sty-11-other']);
    release();
    await slowCatchUp;
    // The stale version did not come back, and the watermark did not move back either.
    expect((await fast.step([BSM1], 'upstream')).map((s) => s.to)).toEqual(['nmdc:sty-11-other']);
    expect(await fast.watermark()).toBe(await store.latestSeq());
    const report = await checkCollection(store, fast, 'biosample_set');
    expect(report.counts).toEqual({ missing: 0, stale: 0, extra: 0 });
    await store.close();
    await storeB.close();
  });

  it('lets two catch-ups write the same records at once and ends with every edge once', async () => {
    const server = new StandInServer();
    const store = await standInStore(server);
    const storeB = await standInStore(server);
    const a = versionedIndex(store);
    const b = versionedIndex(storeB);
    await a.init();
    await store.upsertMany('study_set', [study]);
    const samples = Array.from({ length: 40 }, (_, i) => ({
      ...biosample1,
      id: `nmdc:bsm-11-c${String(i).padStart(5, '0')}`,
    }));
    await store.upsertMany('biosample_set', samples);
    await Promise.all([catchUp(store, a), catchUp(storeB, b)]);
    expect(sizeOf(store, '_graph_edges')).toBe(40);
    expect((await a.step([STUDY], 'downstream')).map((s) => s.to).sort()).toEqual(samples.map((s) => s.id));
    for (const collection of ['study_set', 'biosample_set']) {
      expect((await checkCollection(store, a, collection)).counts).toEqual({
        missing: 0,
        stale: 0,
        extra: 0,
      });
    }
    await store.close();
    await storeB.close();
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
    const index = versionedIndex(store);
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
