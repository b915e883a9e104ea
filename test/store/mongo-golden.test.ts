/**
 * Golden tests of the MongoDB adapter: it is handed a fake `Db` that records every call, and
 * the exact filters, projections, sorts, index specifications and pipelines are checked.
 * (The behaviour suite runs against a real server in mongo.test.ts when MONGO_URL is set.)
 */
import { pino } from 'pino';
import { fakeMongoDb } from '../support/fake-mongo.ts';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { UnsupportedQuery } from '../../src/errors.ts';
import { openStore } from '../../src/store/index.ts';
import { MongoDocumentStore } from '../../src/store/mongo/index.ts';

function fakeDb(answers: Record<string, unknown[]> = {}) {
  const { db, calls, take } = fakeMongoDb(answers);
  const store = new MongoDocumentStore(db, undefined, {
    databaseName: 'nmdc',
    transactions: false,
    pruneEveryMs: 0,
  });
  return { store, calls, take };
}

/** Every user-driven operation's time limit (the default). */
const T = { maxTimeMS: 30_000 };
const MAJORITY = { readConcern: { level: 'majority' } };
/** A record's change-log entry, waiting to be sealed. */
const entry = (collection: string, id: string, deleted = false) => ({
  replaceOne: {
    filter: { _id: `${collection}\u0000${id}` },
    replacement: { collection, id, deleted, seq: null, t: expect.any(Number) },
    upsert: true,
  },
});

const LIVE = { $or: [{ expiresAt: null }, { expiresAt: { $gt: expect.any(Date) } }] };

describe('MongoDB adapter golden calls', () => {
  it('creates the unique id index and two compound indexes per narrowing attribute for each record collection, and the internal indexes', async () => {
    const { store, take } = fakeDb();
    await store.init(['biosample_set']);
    const calls = take();
    expect(calls.map((c) => [c.collection, c.op])).toEqual([
      ['_state', 'createIndexes'],
      ['_changes', 'createIndex'],
      ['biosample_set', 'createIndexes'],
      ['biosample_set', 'listIndexes'],
    ]);
    expect(calls[0]!.args[0]).toEqual([
      { key: { kind: 1, key: 1 }, name: 'kind_key', unique: true },
      { key: { expiresAt: 1 }, name: 'expiresAt_ttl', expireAfterSeconds: 0 },
      {
        key: { kind: 1, 'value.grantId': 1 },
        name: 'kind_value_grantId',
        partialFilterExpression: { 'value.grantId': { $exists: true } },
      },
      {
        key: { kind: 1, 'value.uid': 1 },
        name: 'kind_value_uid',
        partialFilterExpression: { 'value.uid': { $exists: true } },
      },
      {
        key: { kind: 1, 'value.userCode': 1 },
        name: 'kind_value_userCode',
        partialFilterExpression: { 'value.userCode': { $exists: true } },
      },
    ]);
    expect(calls[1]!.args).toEqual([{ seq: 1, t: 1 }, { name: 'seq_t' }]);
    const specs = calls[2]!.args[0] as Array<{ key: Record<string, number>; name: string; unique?: boolean }>;
    expect(specs[0]).toEqual({ key: { id: 1 }, name: 'id_1', unique: true });
    for (const path of [
      'name',
      'ecosystem_category',
      'lat_lon.latitude',
      'depth.has_numeric_value',
      'part_of',
    ]) {
      // Key order matters: the path first, then id (Object.entries keeps insertion order).
      const mine = specs
        .filter((s) => Object.keys(s.key)[0] === path)
        .map((s) => [Object.entries(s.key), s.name]);
      expect(mine).toEqual([
        [
          [
            [path, 1],
            ['id', 1],
          ],
          `${path}_1_id_1`,
        ],
        [
          [
            [path, -1],
            ['id', 1],
          ],
          `${path}_-1_id_1`,
        ],
      ]);
    }
    // No single-field index on a narrowing attribute (the compound ones serve it as their prefix),
    // distinct names, and within MongoDB's 64 indexes per collection with the implicit _id index.
    expect(specs.slice(1).every((s) => Object.keys(s.key).length === 2 && !s.unique)).toBe(true);
    expect(new Set(specs.map((s) => s.name)).size).toBe(specs.length);
    expect(specs).toHaveLength(37);
    expect(specs.length + 1).toBeLessThanOrEqual(64);
    expect(calls[3]!.args).toEqual([T]);
  });

  it('drops the single-field indexes earlier versions made once their replacements exist, and nothing else', async () => {
    const { store, take } = fakeDb({
      'biosample_set.listIndexes': [
        [
          { key: { _id: 1 }, name: '_id_' },
          { key: { id: 1 }, name: 'id_1', unique: true },
          { key: { name: 1 }, name: 'name_1' },
          { key: { ecosystem_category: 1 }, name: 'ecosystem_category_1' },
          // An operator's index that happens to share an old name but not its key stays.
          { key: { part_of: 1, type: 1 }, name: 'part_of_1' },
          { key: { samples: 1 }, name: 'samples_1' },
          { key: { name: 1, id: 1 }, name: 'name_1_id_1' },
        ],
      ],
      'biosample_set.dropIndex': [{}, Object.assign(new Error('index not found'), { code: 27 })],
    });
    await store.init(['biosample_set']);
    const calls = take().filter((c) => c.collection === 'biosample_set');
    expect(calls.map((c) => c.op)).toEqual(['createIndexes', 'listIndexes', 'dropIndex', 'dropIndex']);
    expect(calls.slice(2).map((c) => c.args)).toEqual([
      ['name_1', T],
      ['ecosystem_category_1', T],
    ]);
    // Any other failure to drop is not hidden.
    const failing = fakeDb({
      'biosample_set.listIndexes': [[{ key: { name: 1 }, name: 'name_1' }]],
      'biosample_set.dropIndex': [Object.assign(new Error('not authorized'), { code: 13 })],
    });
    await expect(failing.store.init(['biosample_set'])).rejects.toMatchObject({ code: 13 });
  });

  it('finds with the filter as given, _id projected out, id as the final sort key, skip and limit', async () => {
    const { store, take } = fakeDb({ 'biosample_set.find': [[{ id: 'nmdc:bsm-11-a', name: 'x' }]] });
    const docs = await store.find(
      'biosample_set',
      { ecosystem_category: 'Plants', 'lat_lon.latitude': { $gt: 45 } },
      { sort: [['name', -1]], projection: ['name', 'lat_lon', 'lat_lon.latitude'], skip: 20, limit: 10 },
    );
    expect(docs).toEqual([{ id: 'nmdc:bsm-11-a', name: 'x' }]);
    expect(take()).toEqual([
      {
        collection: 'biosample_set',
        op: 'find',
        args: [
          { ecosystem_category: 'Plants', 'lat_lon.latitude': { $gt: 45 } },
          {
            projection: { _id: 0, id: 1, lat_lon: 1, name: 1 },
            sort: [
              ['name', -1],
              ['id', 1],
            ],
            allowDiskUse: true,
            skip: 20,
            limit: 10,
            ...T,
          },
        ],
      },
    ]);
  });

  it('sorts a page by a narrowing attribute in the key order of one of its indexes, forwards or backwards', async () => {
    const { store, take } = fakeDb();
    await store.init(['biosample_set']);
    const specs = take().find((c) => c.op === 'createIndexes' && c.collection === 'biosample_set')!
      .args[0] as Array<{ key: Record<string, number>; name: string }>;
    /** The index a sort walks: one whose keys are the sort's, in the same or the reverse direction. */
    const walked = (sort: Array<[string, number]>) =>
      specs.find((s) => {
        const key = Object.entries(s.key);
        if (key.length !== sort.length || key.some(([k], i) => k !== sort[i]![0])) return false;
        const sign = key[0]![1] * sort[0]![1];
        return key.every(([, d], i) => d * sign === sort[i]![1]);
      })?.name;
    const sent: Array<Array<[string, number]>> = [];
    for (const [path, direction] of [
      ['name', 1],
      ['name', -1],
      ['ecosystem_category', -1],
      ['lat_lon.latitude', 1],
      ['depth.has_numeric_value', -1],
    ] as const) {
      for (const filter of [{}, { ecosystem_category: 'Plants' }]) {
        await store.find('biosample_set', filter, { sort: [[path, direction]], skip: 10_000, limit: 25 });
        const [call] = take();
        expect(call!.args[0]).toEqual(filter);
        const sort = (call!.args[1] as { sort: Array<[string, number]> }).sort;
        // id ascending breaks ties in both directions, as the original's cursor paging orders them.
        expect(sort).toEqual([
          [path, direction],
          ['id', 1],
        ]);
        // Should the server's plan narrow by the filter and sort in memory, it may spill to disk.
        expect(call!.args[1]).toMatchObject({ skip: 10_000, limit: 25, allowDiskUse: true });
        sent.push(sort);
      }
    }
    expect(sent.map(walked)).toEqual([
      'name_1_id_1',
      'name_1_id_1',
      'name_-1_id_1',
      'name_-1_id_1',
      'ecosystem_category_-1_id_1',
      'ecosystem_category_-1_id_1',
      'lat_lon.latitude_1_id_1',
      'lat_lon.latitude_1_id_1',
      'depth.has_numeric_value_-1_id_1',
      'depth.has_numeric_value_-1_id_1',
    ]);
    // A sort by id alone walks the unique id index.
    await store.find('biosample_set', {}, { sort: [['id', -1]], limit: 25 });
    const byId = take()[0]!.args[1] as { sort: Array<[string, number]> };
    expect(walked(byId.sort)).toBe('id_1');
    expect(byId).not.toHaveProperty('allowDiskUse');
  });

  it('restricts to candidate ids and pages after an id with $and, sorted by id', async () => {
    const { store, take } = fakeDb();
    await store.find(
      'study_set',
      { name: { $regex: 'soil', $options: 'i' } },
      { candidateIds: ['b', 'a', 'b'], afterId: 'a', limit: 25 },
    );
    await store.find('study_set', {}, { afterId: 'nmdc:sty-11-z' });
    await store.count('study_set', { name: { $regex: 'soil' } }, ['a']);
    expect(take().map((c) => c.args)).toEqual([
      [
        {
          $and: [
            { id: { $in: ['b', 'a'] } },
            { id: { $gt: 'a' } },
            { name: { $regex: 'soil', $options: 'i' } },
          ],
        },
        { projection: { _id: 0 }, sort: [['id', 1]], limit: 25, ...T },
      ],
      [{ id: { $gt: 'nmdc:sty-11-z' } }, { projection: { _id: 0 }, sort: [['id', 1]], ...T }],
      [{ $and: [{ id: { $in: ['a'] } }, { name: { $regex: 'soil' } }] }, T],
    ]);
  });

  it('leaves a pattern PCRE could backtrack on out of the server filter, and checks the records in the service', async () => {
    const { store, take } = fakeDb({
      'study_set.find': [
        [
          { id: 'a', name: 'aaaa', ecosystem_category: 'Plants' },
          { id: 'b', name: 'aaa!', ecosystem_category: 'Plants' },
          { id: 'c', name: 'a', ecosystem_category: 'Plants' },
        ],
      ],
    });
    const docs = await store.find(
      'study_set',
      { name: { $regex: '(a+)+$' }, ecosystem_category: 'Plants' },
      { projection: ['name'], skip: 1, limit: 5 },
    );
    expect(docs).toEqual([{ id: 'c', name: 'a' }]);
    expect(take()).toEqual([
      {
        collection: 'study_set',
        op: 'find',
        args: [
          { ecosystem_category: 'Plants' },
          { projection: { _id: 0 }, sort: [['id', 1]], ...T, batchSize: 1000, session: undefined },
        ],
      },
    ]);
  });

  it("draws the planner's sample with $sample, without _id, as JSON text", async () => {
    const { store, take } = fakeDb({
      'biosample_set.aggregate': [[{ id: 'nmdc:bsm-11-a', name: 'core' }]],
    });
    expect(await store.sampleTexts('biosample_set', 2000)).toEqual(['{"id":"nmdc:bsm-11-a","name":"core"}']);
    expect(take()).toEqual([
      {
        collection: 'biosample_set',
        op: 'aggregate',
        args: [[{ $sample: { size: 2000 } }, { $project: { _id: 0 } }], T],
      },
    ]);
  });

  it('gets one record by id without _id', async () => {
    const { store, take } = fakeDb({ 'study_set.findOne': [{ id: 'nmdc:sty-11-a' }] });
    expect(await store.getById('study_set', 'nmdc:sty-11-a', ['name'])).toEqual({ id: 'nmdc:sty-11-a' });
    expect(take()).toEqual([
      {
        collection: 'study_set',
        op: 'findOne',
        args: [{ id: 'nmdc:sty-11-a' }, { projection: { _id: 0, id: 1, name: 1 }, ...T }],
      },
    ]);
  });

  it('rejects a regex the linear-time engine cannot run before sending anything', async () => {
    const { store, calls } = fakeDb();
    const err = await store.find('study_set', { name: { $regex: '(?=x)' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedQuery);
    expect(calls).toEqual([]);
  });

  it('upserts with unordered replaceOne bulk writes, indexes a new collection once, and marks each record changed', async () => {
    const { store, take } = fakeDb({
      'users.bulkWrite': [
        { upsertedCount: 1, matchedCount: 1 },
        { upsertedCount: 0, matchedCount: 1 },
      ],
    });
    expect(
      await store.upsertMany('users', [{ id: 'alice', _id: 'x', n: 1 } as never, { id: 'bob' }]),
    ).toEqual({ inserted: 1, updated: 1 });
    await store.upsertMany('users', [{ id: 'alice' }]);
    const calls = take();
    expect(calls.map((c) => `${c.collection}.${c.op}`)).toEqual([
      'users.createIndexes',
      'users.bulkWrite',
      '_changes.bulkWrite',
      'users.bulkWrite',
      '_changes.bulkWrite',
    ]);
    expect(calls[1]!.args).toEqual([
      [
        { replaceOne: { filter: { id: 'alice' }, replacement: { id: 'alice', n: 1 }, upsert: true } },
        { replaceOne: { filter: { id: 'bob' }, replacement: { id: 'bob' }, upsert: true } },
      ],
      { ordered: false, session: undefined },
    ]);
    // No counter: each record's own change-log entry, numbered later by a sealer.
    expect(calls[2]!.args).toEqual([
      [entry('users', 'alice'), entry('users', 'bob')],
      { ordered: true, session: undefined },
    ]);
    const [a, b] = (calls[2]!.args[0] as Array<{ replaceOne: { replacement: { t: number } } }>).map(
      (e) => e.replaceOne.replacement.t,
    );
    expect(b).toBeGreaterThan(a!);
  });
  it('refuses a record without an id before writing anything', async () => {
    const { store, calls } = fakeDb();
    await expect(store.upsertMany('study_set', [{ id: 'a' }, { name: 'x' } as never])).rejects.toThrow(
      /no string id/,
    );
    expect(calls).toEqual([]);
  });

  it('deletes by finding the ids in id order first, then removing exactly those', async () => {
    const { store, take } = fakeDb({ 'study_set.find': [[{ id: 'a' }, { id: 'b' }]] });
    expect(await store.deleteMany('study_set', { ecosystem_category: 'Plants' }, 2)).toEqual(['a', 'b']);
    const calls = take();
    expect(calls[0]!.args).toEqual([
      { ecosystem_category: 'Plants' },
      { projection: { _id: 0, id: 1 }, sort: { id: 1 }, session: undefined, limit: 2, ...T },
    ]);
    expect(calls[1]).toEqual({
      collection: 'study_set',
      op: 'deleteMany',
      args: [{ id: { $in: ['a', 'b'] } }, { session: undefined }],
    });
    expect(calls[2]!.args[0]).toEqual([entry('study_set', 'a', true), entry('study_set', 'b', true)]);
  });
  it('reads collection stats from $collStats storage stats of the non-empty record collections', async () => {
    const { store, take } = fakeDb({
      listCollections: [
        [{ name: 'study_set' }, { name: '_state' }, { name: 'biosample_set' }, { name: 'system.views' }],
      ],
      'study_set.estimatedDocumentCount': [3],
      'biosample_set.estimatedDocumentCount': [0],
      'study_set.aggregate': [
        [
          {
            storageStats: {
              count: 3,
              size: 300,
              avgObjSize: 100,
              storageSize: 4096,
              totalIndexSize: 8192,
              totalSize: 12288,
            },
          },
        ],
      ],
    });
    expect(await store.collectionStats()).toEqual([
      {
        collection: 'study_set',
        count: 3,
        size: 300,
        avgObjSize: 100,
        storageSize: 4096,
        totalIndexSize: 8192,
        totalSize: 12288,
      },
    ]);
    const calls = take();
    expect(calls[0]!.args).toEqual([{}, { nameOnly: true }]);
    expect(calls.find((c) => c.op === 'estimatedDocumentCount')!.args).toEqual([T]);
    expect(calls.find((c) => c.op === 'aggregate')!.args).toEqual([
      [{ $collStats: { storageStats: {} } }],
      T,
    ]);
  });

  it('sums the per-shard documents $collStats answers on a sharded cluster', async () => {
    const shard = (count: number, size: number) => ({
      shard: `s${count}`,
      storageStats: {
        count,
        size,
        avgObjSize: size / count,
        storageSize: 4096,
        totalIndexSize: 1024,
        totalSize: 5120,
      },
    });
    const { store } = fakeDb({
      listCollections: [[{ name: 'study_set' }]],
      'study_set.estimatedDocumentCount': [5],
      'study_set.aggregate': [[shard(2, 200), shard(3, 600)]],
    });
    expect(await store.collectionStats()).toEqual([
      {
        collection: 'study_set',
        count: 5,
        size: 800,
        avgObjSize: 160,
        storageSize: 8192,
        totalIndexSize: 2048,
        totalSize: 10240,
      },
    ]);
  });

  it('inserts if absent with insertOne, letting the unique id index refuse a duplicate', async () => {
    const duplicate = Object.assign(new Error('E11000 duplicate key error'), { code: 11000 });
    const { store, take } = fakeDb({ 'pids.insertOne': [{}, duplicate] });
    expect(await store.insertIfAbsent('pids', { id: 'nmdc:bsm-11-x1', _id: 'drop' } as never)).toBe(true);
    expect(await store.insertIfAbsent('pids', { id: 'nmdc:bsm-11-x1' })).toBe(false);
    const calls = take();
    expect(calls.map((c) => `${c.collection}.${c.op}`)).toEqual([
      'pids.createIndexes',
      'pids.insertOne',
      '_changes.bulkWrite',
      'pids.insertOne',
    ]);
    expect(calls[1]!.args).toEqual([{ id: 'nmdc:bsm-11-x1' }, { session: undefined }]);
    expect(calls[2]!.args[0]).toEqual([entry('pids', 'nmdc:bsm-11-x1')]);
  });
  it('upserts several collections in one unit: a bulk write and change-log entries per collection', async () => {
    const { store, take } = fakeDb({
      'study_set.bulkWrite': [{ upsertedCount: 1, matchedCount: 0 }],
      'biosample_set.bulkWrite': [{ upsertedCount: 1, matchedCount: 1 }],
    });
    expect(
      await store.upsertAtomically([
        { collection: 'study_set', docs: [{ id: 's1' }] },
        { collection: 'biosample_set', docs: [{ id: 'b1' }, { id: 'b2' }] },
        { collection: 'data_object_set', docs: [] },
      ]),
    ).toEqual({ inserted: 2, updated: 1 });
    const calls = take();
    expect(calls.map((c) => `${c.collection}.${c.op}`)).toEqual([
      'study_set.createIndexes',
      'biosample_set.createIndexes',
      'study_set.bulkWrite',
      '_changes.bulkWrite',
      'biosample_set.bulkWrite',
      '_changes.bulkWrite',
    ]);
    expect(calls[5]!.args[0]).toEqual([entry('biosample_set', 'b1'), entry('biosample_set', 'b2')]);
  });
  it('reads the records a read-modify-write names, one collection at a time, then writes what the decision says in the same unit', async () => {
    const { store, take } = fakeDb({
      'jobs.find': [[{ id: 'j1', claims: [] }]],
      'jobs.bulkWrite': [{ upsertedCount: 0, matchedCount: 1 }],
      'operations.bulkWrite': [{ upsertedCount: 1, matchedCount: 0 }],
    });
    const value = await store.readModifyWrite(
      [
        { collection: 'jobs', id: 'j1' },
        { collection: 'operations', id: 'o0' },
      ],
      ([job]) => ({
        writes: [
          { collection: 'jobs', docs: [{ ...job!, claims: [{ op_id: 'o1', site_id: 's' }] }] },
          { collection: 'operations', docs: [{ id: 'o1', done: false }] },
        ],
        value: 'o1',
      }),
    );
    expect(value).toBe('o1');
    const calls = take();
    expect(calls.map((c) => `${c.collection}.${c.op}`)).toEqual([
      'jobs.createIndexes',
      'operations.createIndexes',
      'jobs.find',
      'operations.find',
      'jobs.bulkWrite',
      '_changes.bulkWrite',
      'operations.bulkWrite',
      '_changes.bulkWrite',
    ]);
    expect(calls[2]!.args).toEqual([
      { id: { $in: ['j1'] } },
      { projection: { _id: 0 }, ...T, session: undefined },
    ]);
    expect(calls[4]!.args[0]).toEqual([
      {
        replaceOne: {
          filter: { id: 'j1' },
          replacement: { id: 'j1', claims: [{ op_id: 'o1', site_id: 's' }] },
          upsert: true,
        },
      },
    ]);
  });

  it('deletes the present records a read-modify-write names, logged as deletions, before its writes', async () => {
    const { store, take } = fakeDb({
      'study_set.find': [[{ id: 's1', name: 'old id' }], [{ id: 's1' }]],
      'study_set.bulkWrite': [{ upsertedCount: 1, matchedCount: 0 }],
    });
    await store.readModifyWrite([{ collection: 'study_set', id: 's1' }], ([s]) => ({
      writes: [{ collection: 'study_set', docs: [{ ...s!, id: 's2' }] }],
      deletes: [
        { collection: 'study_set', id: 's1' },
        { collection: 'study_set', id: 's-absent' },
      ],
      value: null,
    }));
    const calls = take();
    expect(calls.map((c) => `${c.collection}.${c.op}`)).toEqual([
      'study_set.createIndexes',
      'study_set.find',
      'study_set.find',
      'study_set.deleteMany',
      '_changes.bulkWrite',
      'study_set.bulkWrite',
      '_changes.bulkWrite',
    ]);
    expect(calls[2]!.args).toEqual([
      { id: { $in: ['s1', 's-absent'] } },
      { projection: { _id: 0, id: 1 }, ...T, session: undefined },
    ]);
    expect(calls[3]!.args).toEqual([{ id: { $in: ['s1'] } }, { session: undefined }]);
    expect(calls[4]!.args[0]).toEqual([entry('study_set', 's1', true)]);
    expect(calls[6]!.args[0]).toEqual([entry('study_set', 's2')]);
  });

  it('reads changes after a sequence number in order, with a majority read concern, then the pruned mark', async () => {
    const { store, take } = fakeDb({
      '_changes.find': [
        [
          { seq: 5, collection: 'study_set', id: 'a', deleted: false },
          { seq: 6, collection: 'study_set', id: 'a', deleted: true },
        ],
      ],
    });
    expect(await store.changesSince(4)).toEqual({
      changes: [{ collection: 'study_set', id: 'a', deleted: true }],
      seq: 6,
    });
    expect(take().map((c) => [c.collection, c.op, c.args])).toEqual([
      // Nothing waits to be sealed (the fake answers null).
      ['_changes', 'findOne', [{ seq: null }, { projection: { _id: 1 }, ...MAJORITY, ...T }]],
      [
        '_changes',
        'find',
        [
          { seq: { $gt: 4 } },
          {
            projection: { _id: 0, collection: 1, id: 1, deleted: 1, seq: 1 },
            sort: { seq: 1 },
            limit: 100001,
            ...MAJORITY,
            ...T,
          },
        ],
      ],
      ['_counters', 'findOne', [{ _id: 'changes-pruned' }, { ...MAJORITY, ...T }]],
    ]);
  });

  it('seals the entries waiting: the next sequence numbers from the counter, in their order, then the counter', async () => {
    const { store, take } = fakeDb({
      '_changes.findOne': [{ _id: 'study_set\u0000b' }],
      '_counters.findOne': [{ _id: 'changes', seq: 41 }],
      '_changes.find': [[{ _id: 'study_set\u0000b' }, { _id: 'study_set\u0000a' }], []],
    });
    await store.changesSince(41);
    const calls = take();
    expect(calls.slice(1, 5).map((c) => [c.collection, c.op, c.args])).toEqual([
      ['_counters', 'findOne', [{ _id: 'changes' }, { session: undefined }]],
      [
        '_changes',
        'find',
        [{ seq: null }, { projection: { _id: 1 }, sort: { seq: 1, t: 1 }, limit: 5000, session: undefined }],
      ],
      [
        '_changes',
        'bulkWrite',
        [
          [
            { updateOne: { filter: { _id: 'study_set\u0000b', seq: null }, update: { $set: { seq: 42 } } } },
            { updateOne: { filter: { _id: 'study_set\u0000a', seq: null }, update: { $set: { seq: 43 } } } },
          ],
          { ordered: true, session: undefined },
        ],
      ],
      [
        '_counters',
        'updateOne',
        [{ _id: 'changes' }, { $set: { seq: 43 } }, { upsert: true, session: undefined }],
      ],
    ]);
  });
  it('says more when the change page stops at its limit (one row past the page is read to tell)', async () => {
    const rows = Array.from({ length: 100_001 }, (_, i) => ({
      seq: i + 1,
      collection: 'study_set',
      id: `s${i + 1}`,
      deleted: false,
    }));
    const { store } = fakeDb({ '_changes.find': [rows, rows.slice(0, 100_000)] });
    const full = await store.changesSince(0);
    expect(full.more).toBe(true);
    expect(full.seq).toBe(100_000);
    expect(full.changes).toHaveLength(100_000);
    expect(full.changes.at(-1)!.id).toBe('s100000');
    const exact = await store.changesSince(0);
    expect(exact.more).toBeUndefined();
    expect(exact.seq).toBe(100_000);
  });

  it('reads the newest change sequence from the counter with a majority read concern, 0 when none', async () => {
    const { store, take } = fakeDb({ '_counters.findOne': [{ _id: 'changes', seq: 42 }, null] });
    expect(await store.latestSeq()).toBe(42);
    expect(await store.latestSeq()).toBe(0);
    const reads = take().filter((c) => c.collection === '_counters');
    expect(reads.map((c) => c.args)).toEqual([
      [{ _id: 'changes' }, { ...MAJORITY, ...T }],
      [{ _id: 'changes' }, { ...MAJORITY, ...T }],
    ]);
  });
  it('scans in id order by keyset', async () => {
    const { store, take } = fakeDb({ 'study_set.find': [[{ id: 'a' }, { id: 'b' }], [{ id: 'c' }]] });
    const batches: string[][] = [];
    for await (const batch of store.scan('study_set', 2)) batches.push(batch.map((d) => d.id));
    expect(batches).toEqual([['a', 'b'], ['c']]);
    expect(take().map((c) => c.args)).toEqual([
      [{}, { projection: { _id: 0 }, sort: { id: 1 }, limit: 2, ...T }],
      [{ id: { $gt: 'b' } }, { projection: { _id: 0 }, sort: { id: 1 }, limit: 2, ...T }],
    ]);
  });

  it('keeps state by kind and key with an expiry checked on read', async () => {
    const { store, take } = fakeDb({
      '_state.findOne': [{ value: { n: 1 } }],
      '_state.find': [[{ key: 'k', value: { grantId: 'g' } }]],
    });
    await store.state.put('Session', 'k', { grantId: 'g' }, 60);
    expect(await store.state.get('Session', 'k')).toEqual({ n: 1 });
    expect(await store.state.findBy('Session', 'grantId', 'g')).toEqual([
      { key: 'k', value: { grantId: 'g' } },
    ]);
    await store.state.deleteBy('Session', 'grantId', 'g');
    const calls = take();
    expect(calls[0]!.args).toEqual([
      { kind: 'Session', key: 'k' },
      { kind: 'Session', key: 'k', value: { grantId: 'g' }, expiresAt: expect.any(Date) },
      { upsert: true, ...T },
    ]);
    const expiresAt = (calls[0]!.args[1] as { expiresAt: Date }).expiresAt.getTime();
    expect(expiresAt - Date.now()).toBeGreaterThan(55_000);
    expect(calls[1]!.args).toEqual([
      { kind: 'Session', key: 'k', ...LIVE },
      { projection: { _id: 0, value: 1 }, ...T },
    ]);
    expect(calls[2]!.args).toEqual([
      { kind: 'Session', 'value.grantId': 'g', ...LIVE },
      { projection: { _id: 0, key: 1, value: 1 }, sort: { key: 1 }, ...T },
    ]);
    expect(calls[3]!.args).toEqual([{ kind: 'Session', 'value.grantId': 'g' }, T]);
  });

  it('increments a counter in one atomic upsert, after removing it if it has expired', async () => {
    const { store, take } = fakeDb({ '_state.findOneAndUpdate': [{ value: 4 }] });
    expect(await store.state.increment('login-failures', 'user:alice', 900)).toBe(4);
    const calls = take();
    expect(calls.map((c) => [c.collection, c.op])).toEqual([
      ['_state', 'deleteOne'],
      ['_state', 'findOneAndUpdate'],
    ]);
    expect(calls[0]!.args).toEqual([
      { kind: 'login-failures', key: 'user:alice', expiresAt: { $lte: expect.any(Date) } },
      T,
    ]);
    expect(calls[1]!.args).toEqual([
      { kind: 'login-failures', key: 'user:alice' },
      { $inc: { value: 1 }, $setOnInsert: { expiresAt: expect.any(Date) } },
      { upsert: true, returnDocument: 'after', projection: { _id: 0, value: 1 }, ...T },
    ]);
    const update = calls[1]!.args[1] as { $setOnInsert: { expiresAt: Date } };
    const expiresIn = update.$setOnInsert.expiresAt.getTime() - Date.now();
    expect(expiresIn).toBeGreaterThan(890_000);
    expect(expiresIn).toBeLessThanOrEqual(900_000);
  });
});

describe('openStore with MONGO_URL', () => {
  it('fails with a message naming MONGO_URL when the server cannot be reached', async () => {
    const config = loadConfig({ MONGO_URL: 'mongodb://127.0.0.1:9/nmdc', LOG_LEVEL: 'silent' });
    const started = Date.now();
    await expect(openStore(config, pino({ level: 'silent' }))).rejects.toThrow(
      /^cannot reach MongoDB at MONGO_URL \(mongodb:\/\/127\.0\.0\.1:9\)/,
    );
    expect(Date.now() - started).toBeLessThan(8000);
  });
});
