/**
 * Golden tests of the MongoDB edge index: it is handed a fake `Db` that records every call and
 * answers from per-operation queues, and the exact bulk writes, filters, projections, sorts and
 * index specifications are checked. (The behaviour suite runs against a real server in
 * mongo-edge-index.test.ts when MONGO_URL is set.)
 */
import type { Db } from 'mongodb';
import { pino } from 'pino';
import { fakeMongoDb, type Call } from '../support/fake-mongo.ts';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { fingerprintOf } from '../../search/indexed-values.ts';
import { openEdgeIndex } from '../../src/provenance/index.ts';
import { MongoEdgeIndex, edgeId } from '../../src/provenance/mongo/edge-index.ts';
import { MongoDocumentStore } from '../../src/store/mongo/document-store.ts';
import type { Doc } from '../../src/store/port.ts';

function fakeDb(answers: Record<string, unknown[]> = {}) {
  return fakeMongoDb(answers);
}

const STUDY = 'nmdc:sty-11-000001';
const BSM = 'nmdc:bsm-11-000001';
const DGNS = 'nmdc:dgns-11-000001';
const DOBJ = 'nmdc:dobj-11-000001';

const biosample: Doc = { id: BSM, type: 'nmdc:Biosample', associated_studies: [STUDY], name: 'core' };
const dataGeneration: Doc = {
  id: DGNS,
  type: 'nmdc:NucleotideSequencing',
  associated_studies: [STUDY],
  has_input: [BSM],
  has_output: [DOBJ],
};

const E = {
  studyBsm: `${STUDY}\u0000${BSM}\u0000associated_studies\u0000down`,
  studyDgns: `${STUDY}\u0000${DGNS}\u0000associated_studies\u0000down`,
  bsmDgns: `${BSM}\u0000${DGNS}\u0000has_input\u0000down`,
  dgnsDobj: `${DGNS}\u0000${DOBJ}\u0000has_output\u0000up`,
};

const upsertEdge = (_id: string, up: string, down: string, slot: string, holder: 'up' | 'down') => ({
  updateOne: { filter: { _id }, update: { $setOnInsert: { up, down, slot, holder } }, upsert: true },
});

const UNORDERED = { ordered: false };
const STEP_PROJECTION = { projection: { _id: 0, up: 1, down: 1, slot: 1 } };
const NODE_PROJECTION = { projection: { _id: 1, type: 1, collection: 1 } };

describe('MongoDB edge index golden calls', () => {
  it('creates the node index by collection and id and the edge indexes from each end by holder', async () => {
    const { db, take } = fakeDb();
    await new MongoEdgeIndex(db).init();
    expect(take()).toEqual([
      {
        collection: '_graph_nodes',
        op: 'createIndexes',
        args: [[{ key: { collection: 1, _id: 1 }, name: 'collection_id' }]],
      },
      {
        collection: '_graph_edges',
        op: 'createIndexes',
        args: [
          [
            { key: { up: 1, holder: 1, down: 1, slot: 1 }, name: 'up_holder_down_slot' },
            { key: { down: 1, holder: 1, up: 1, slot: 1 }, name: 'down_holder_up_slot' },
          ],
        ],
      },
    ]);
  });

  it('names an edge by its four parts, so writing it again is a no-op', () => {
    expect(edgeId({ up: STUDY, down: BSM, slot: 'associated_studies', holder: 'down' })).toBe(E.studyBsm);
  });

  it('indexes a biosample: its edges upserted, the other edges it held deleted, then its node', async () => {
    const { db, take } = fakeDb();
    const index = new MongoEdgeIndex(db);
    await index.index('biosample_set', [biosample]);
    expect(take()).toEqual([
      {
        collection: '_graph_edges',
        op: 'bulkWrite',
        args: [[upsertEdge(E.studyBsm, STUDY, BSM, 'associated_studies', 'down')], UNORDERED],
      },
      {
        collection: '_graph_edges',
        op: 'bulkWrite',
        args: [
          [
            { deleteMany: { filter: { up: BSM, holder: 'up' } } },
            { deleteMany: { filter: { down: BSM, holder: 'down', _id: { $nin: [E.studyBsm] } } } },
          ],
          UNORDERED,
        ],
      },
      {
        collection: '_graph_nodes',
        op: 'bulkWrite',
        args: [
          [
            {
              replaceOne: {
                filter: { _id: BSM },
                replacement: {
                  collection: 'biosample_set',
                  type: 'nmdc:Biosample',
                  fingerprint: fingerprintOf(biosample),
                },
                upsert: true,
              },
            },
          ],
          UNORDERED,
        ],
      },
    ]);
  });

  it('indexes a data generation: edges held at both ends, one batch for several records', async () => {
    const { db, take } = fakeDb();
    const index = new MongoEdgeIndex(db);
    const bare: Doc = { id: 'nmdc:dgns-11-000002', type: 'nmdc:NucleotideSequencing' };
    await index.index('data_generation_set', [dataGeneration, bare]);
    const calls = take();
    expect(calls.map((c) => `${c.collection}.${c.op}`)).toEqual([
      '_graph_edges.bulkWrite',
      '_graph_edges.bulkWrite',
      '_graph_nodes.bulkWrite',
    ]);
    expect(calls[0]!.args).toEqual([
      [
        upsertEdge(E.studyDgns, STUDY, DGNS, 'associated_studies', 'down'),
        upsertEdge(E.bsmDgns, BSM, DGNS, 'has_input', 'down'),
        upsertEdge(E.dgnsDobj, DGNS, DOBJ, 'has_output', 'up'),
      ],
      UNORDERED,
    ]);
    expect(calls[1]!.args).toEqual([
      [
        { deleteMany: { filter: { up: DGNS, holder: 'up', _id: { $nin: [E.dgnsDobj] } } } },
        { deleteMany: { filter: { down: DGNS, holder: 'down', _id: { $nin: [E.studyDgns, E.bsmDgns] } } } },
        // A record that references nothing (any more) drops every edge it held.
        { deleteMany: { filter: { up: 'nmdc:dgns-11-000002', holder: 'up' } } },
        { deleteMany: { filter: { down: 'nmdc:dgns-11-000002', holder: 'down' } } },
      ],
      UNORDERED,
    ]);
    expect(calls[2]!.args).toEqual([
      [
        {
          replaceOne: {
            filter: { _id: DGNS },
            replacement: {
              collection: 'data_generation_set',
              type: 'nmdc:NucleotideSequencing',
              fingerprint: fingerprintOf(dataGeneration),
            },
            upsert: true,
          },
        },
        {
          replaceOne: {
            filter: { _id: 'nmdc:dgns-11-000002' },
            replacement: {
              collection: 'data_generation_set',
              type: 'nmdc:NucleotideSequencing',
              fingerprint: fingerprintOf(bare),
            },
            upsert: true,
          },
        },
      ],
      UNORDERED,
    ]);
  });

  it('writes large inputs in rounds of 1000 records, a record given twice once (its last version)', async () => {
    const { db, take } = fakeDb();
    const index = new MongoEdgeIndex(db);
    const many: Doc[] = Array.from({ length: 2500 }, (_, i) => ({
      id: `nmdc:bsm-11-${String(i).padStart(6, '0')}`,
      type: 'nmdc:Biosample',
    }));
    const again = { ...many[0]!, name: 'again' };
    await index.index('biosample_set', [...many, again]);
    const calls = take();
    // No edges: no edge upserts, only the deletes of held edges and the node upserts.
    expect(calls.map((c) => [`${c.collection}.${c.op}`, (c.args[0] as unknown[]).length])).toEqual([
      ['_graph_edges.bulkWrite', 2000],
      ['_graph_nodes.bulkWrite', 1000],
      ['_graph_edges.bulkWrite', 2000],
      ['_graph_nodes.bulkWrite', 1000],
      ['_graph_edges.bulkWrite', 1000],
      ['_graph_nodes.bulkWrite', 500],
    ]);
    const lastNodes = calls[5]!.args[0] as Array<{
      replaceOne: { filter: { _id: string }; replacement: { fingerprint: string } };
    }>;
    expect(lastNodes.at(-1)!.replaceOne.filter._id).toBe(many[0]!.id);
    expect(lastNodes.at(-1)!.replaceOne.replacement.fingerprint).toBe(fingerprintOf(again));
  });

  it('sends nothing for a collection outside the graph or an empty write', async () => {
    const { db, calls } = fakeDb();
    const index = new MongoEdgeIndex(db);
    expect(index.covers('functional_annotation_agg')).toBe(false);
    expect(index.covers('biosample_set')).toBe(true);
    await index.index('functional_annotation_agg', [{ id: 'x', was_generated_by: 'y' }]);
    await index.index('biosample_set', []);
    await index.remove('functional_annotation_agg', ['x']);
    await index.remove('biosample_set', []);
    expect(calls).toEqual([]);
  });

  it('removes the records of the collection among the ids: node, then the edges it held', async () => {
    const { db, take } = fakeDb({ '_graph_nodes.find': [[{ _id: BSM }], []] });
    const index = new MongoEdgeIndex(db);
    await index.remove('biosample_set', [BSM, 'nmdc:bsm-11-gone', BSM]);
    await index.remove('biosample_set', ['nmdc:bsm-11-gone']);
    expect(take()).toEqual([
      {
        collection: '_graph_nodes',
        op: 'find',
        args: [
          { _id: { $in: [BSM, 'nmdc:bsm-11-gone'] }, collection: 'biosample_set' },
          { projection: { _id: 1 } },
        ],
      },
      {
        collection: '_graph_nodes',
        op: 'deleteMany',
        args: [{ _id: { $in: [BSM] }, collection: 'biosample_set' }],
      },
      {
        collection: '_graph_edges',
        op: 'bulkWrite',
        args: [
          [
            { deleteMany: { filter: { up: { $in: [BSM] }, holder: 'up' } } },
            { deleteMany: { filter: { down: { $in: [BSM] }, holder: 'down' } } },
          ],
          UNORDERED,
        ],
      },
      // Nothing of the collection among the ids: nothing deleted.
      {
        collection: '_graph_nodes',
        op: 'find',
        args: [
          { _id: { $in: ['nmdc:bsm-11-gone'] }, collection: 'biosample_set' },
          { projection: { _id: 1 } },
        ],
      },
    ]);
  });

  it("clears a collection page by page in id order, each page's nodes and held edges", async () => {
    const first = Array.from({ length: 1000 }, (_, i) => ({
      _id: `nmdc:dobj-11-${String(i).padStart(4, '0')}`,
    }));
    const { db, take } = fakeDb({ '_graph_nodes.find': [first, [{ _id: 'nmdc:dobj-11-1000' }]] });
    await new MongoEdgeIndex(db).clear('data_object_set');
    const calls = take();
    expect(calls.map((c) => `${c.collection}.${c.op}`)).toEqual([
      '_graph_nodes.find',
      '_graph_nodes.deleteMany',
      '_graph_edges.bulkWrite',
      '_graph_nodes.find',
      '_graph_nodes.deleteMany',
      '_graph_edges.bulkWrite',
    ]);
    const page = { projection: { _id: 1 }, sort: { _id: 1 }, limit: 1000 };
    expect(calls[0]!.args).toEqual([{ collection: 'data_object_set' }, page]);
    expect(calls[1]!.args).toEqual([
      { _id: { $in: first.map((n) => n._id) }, collection: 'data_object_set' },
    ]);
    expect(calls[3]!.args).toEqual([
      { collection: 'data_object_set', _id: { $gt: 'nmdc:dobj-11-0999' } },
      page,
    ]);
    expect(calls[5]!.args).toEqual([
      [
        { deleteMany: { filter: { up: { $in: ['nmdc:dobj-11-1000'] }, holder: 'up' } } },
        { deleteMany: { filter: { down: { $in: ['nmdc:dobj-11-1000'] }, holder: 'down' } } },
      ],
      UNORDERED,
    ]);
  });

  it('steps downstream: the edges from the ids (covered projection), then which far ends are records', async () => {
    const { db, take } = fakeDb({
      '_graph_edges.find': [
        [
          { up: DGNS, down: DOBJ, slot: 'has_output' },
          { up: DGNS, down: DOBJ, slot: 'has_output' },
          { up: DGNS, down: DOBJ, slot: 'was_generated_by' },
          { up: DGNS, down: 'nmdc:wfmgan-11-gone', slot: 'was_informed_by' },
          { up: BSM, down: DGNS, slot: 'has_input' },
        ],
      ],
      '_graph_nodes.find': [
        [
          { _id: DOBJ, type: 'nmdc:DataObject', collection: 'data_object_set' },
          { _id: DGNS, collection: 'data_generation_set' },
        ],
      ],
    });
    const index = new MongoEdgeIndex(db);
    expect(await index.step([DGNS, BSM, DGNS], 'downstream')).toEqual([
      { from: DGNS, to: DOBJ, slot: 'has_output', type: 'nmdc:DataObject', collection: 'data_object_set' },
      {
        from: DGNS,
        to: DOBJ,
        slot: 'was_generated_by',
        type: 'nmdc:DataObject',
        collection: 'data_object_set',
      },
      { from: BSM, to: DGNS, slot: 'has_input', type: '', collection: 'data_generation_set' },
    ]);
    expect(take()).toEqual([
      { collection: '_graph_edges', op: 'find', args: [{ up: { $in: [DGNS, BSM] } }, STEP_PROJECTION] },
      {
        collection: '_graph_nodes',
        op: 'find',
        args: [
          { _id: { $in: [DOBJ, 'nmdc:wfmgan-11-gone', DGNS] }, collection: { $ne: null } },
          NODE_PROJECTION,
        ],
      },
    ]);
  });

  it('steps upstream along the edges to the ids; no node lookup without edges, no query without ids', async () => {
    const { db, take } = fakeDb({
      '_graph_edges.find': [[{ up: STUDY, down: BSM, slot: 'associated_studies' }], []],
      '_graph_nodes.find': [[{ _id: STUDY, type: 'nmdc:Study', collection: 'study_set' }]],
    });
    const index = new MongoEdgeIndex(db);
    expect(await index.step([BSM], 'upstream')).toEqual([
      { from: BSM, to: STUDY, slot: 'associated_studies', type: 'nmdc:Study', collection: 'study_set' },
    ]);
    expect(await index.step([STUDY], 'upstream')).toEqual([]);
    expect(await index.step([], 'upstream')).toEqual([]);
    expect(take()).toEqual([
      { collection: '_graph_edges', op: 'find', args: [{ down: { $in: [BSM] } }, STEP_PROJECTION] },
      {
        collection: '_graph_nodes',
        op: 'find',
        args: [{ _id: { $in: [STUDY] }, collection: { $ne: null } }, NODE_PROJECTION],
      },
      { collection: '_graph_edges', op: 'find', args: [{ down: { $in: [STUDY] } }, STEP_PROJECTION] },
    ]);
  });

  it('finds referrers in one edge query over both edge indexes (holder by end), then their nodes', async () => {
    const { db, take } = fakeDb({
      '_graph_edges.find': [
        [
          { up: STUDY, down: BSM, slot: 'associated_studies', holder: 'down' },
          { up: DGNS, down: DOBJ, slot: 'has_output', holder: 'up' },
        ],
      ],
      '_graph_nodes.find': [
        [
          { _id: BSM, type: 'nmdc:Biosample', collection: 'biosample_set' },
          { _id: DGNS, type: 'nmdc:NucleotideSequencing', collection: 'data_generation_set' },
        ],
      ],
    });
    const index = new MongoEdgeIndex(db);
    expect(await index.referrers([STUDY, DOBJ, STUDY], 50, ['nmdc:bsm-11-000009'])).toEqual([
      {
        id: BSM,
        collection: 'biosample_set',
        type: 'nmdc:Biosample',
        slot: 'associated_studies',
        target: STUDY,
      },
      {
        id: DGNS,
        collection: 'data_generation_set',
        type: 'nmdc:NucleotideSequencing',
        slot: 'has_output',
        target: DOBJ,
      },
    ]);
    expect(await index.referrers([], 50)).toEqual([]);
    expect(take()).toEqual([
      {
        collection: '_graph_edges',
        op: 'find',
        args: [
          {
            $or: [
              { up: { $in: [STUDY, DOBJ] }, holder: 'down', down: { $nin: ['nmdc:bsm-11-000009'] } },
              { down: { $in: [STUDY, DOBJ] }, holder: 'up', up: { $nin: ['nmdc:bsm-11-000009'] } },
            ],
          },
          { projection: { _id: 0, up: 1, down: 1, slot: 1, holder: 1 }, limit: 50 },
        ],
      },
      {
        collection: '_graph_nodes',
        op: 'find',
        args: [{ _id: { $in: [BSM, DGNS] }, collection: { $ne: null } }, NODE_PROJECTION],
      },
    ]);
  });

  it('tells which ids are records with one lookup', async () => {
    const { db, take } = fakeDb({
      '_graph_nodes.find': [
        [
          { _id: STUDY, type: 'nmdc:Study', collection: 'study_set' },
          { _id: 'nmdc:sty-11-000002', type: null, collection: 'study_set' },
        ],
      ],
    });
    const index = new MongoEdgeIndex(db);
    expect(await index.nodes([STUDY, 'nmdc:sty-11-000002', STUDY, 'nmdc:sty-11-gone'])).toEqual([
      { id: STUDY, type: 'nmdc:Study', collection: 'study_set' },
      { id: 'nmdc:sty-11-000002', type: '', collection: 'study_set' },
    ]);
    expect(await index.nodes([])).toEqual([]);
    expect(take()).toEqual([
      {
        collection: '_graph_nodes',
        op: 'find',
        args: [
          { _id: { $in: [STUDY, 'nmdc:sty-11-000002', 'nmdc:sty-11-gone'] }, collection: { $ne: null } },
          NODE_PROJECTION,
        ],
      },
    ]);
  });

  it('pages fingerprints by id after id, 2000 at a time', async () => {
    const first = Array.from({ length: 2000 }, (_, i) => ({
      _id: `nmdc:bsm-11-${String(i).padStart(6, '0')}`,
      fingerprint: `f${i}`,
    }));
    const { db, take } = fakeDb({
      '_graph_nodes.find': [first, [{ _id: 'nmdc:bsm-11-002000', fingerprint: 'g' }]],
    });
    const pages: Array<Array<{ id: string; fingerprint: string }>> = [];
    for await (const page of new MongoEdgeIndex(db).fingerprints('biosample_set')) pages.push(page);
    expect(pages.map((p) => p.length)).toEqual([2000, 1]);
    expect(pages[0]![0]).toEqual({ id: 'nmdc:bsm-11-000000', fingerprint: 'f0' });
    expect(pages[1]).toEqual([{ id: 'nmdc:bsm-11-002000', fingerprint: 'g' }]);
    const options = { projection: { _id: 1, fingerprint: 1 }, sort: { _id: 1 }, limit: 2000 };
    expect(take()).toEqual([
      { collection: '_graph_nodes', op: 'find', args: [{ collection: 'biosample_set' }, options] },
      {
        collection: '_graph_nodes',
        op: 'find',
        args: [{ collection: 'biosample_set', _id: { $gt: 'nmdc:bsm-11-001999' } }, options],
      },
    ]);
  });

  it('keeps the watermark and the built flag in _graph_meta', async () => {
    const { db, take } = fakeDb({
      '_graph_meta.findOne': [null, { _id: 'watermark', value: 7 }, { _id: 'built', value: 1 }],
    });
    const index = new MongoEdgeIndex(db);
    expect(index.synchronous).toBe(false);
    expect(index.engine).toBe('mongo');
    expect(await index.watermark()).toBe(0);
    expect(await index.watermark()).toBe(7);
    await index.setWatermark(9);
    expect(await index.isBuilt()).toBe(true);
    await index.markBuilt();
    expect(take()).toEqual([
      { collection: '_graph_meta', op: 'findOne', args: [{ _id: 'watermark' }] },
      { collection: '_graph_meta', op: 'findOne', args: [{ _id: 'watermark' }] },
      {
        collection: '_graph_meta',
        op: 'updateOne',
        args: [{ _id: 'watermark' }, { $set: { value: 9 } }, { upsert: true }],
      },
      { collection: '_graph_meta', op: 'findOne', args: [{ _id: 'built' }] },
      {
        collection: '_graph_meta',
        op: 'updateOne',
        args: [{ _id: 'built' }, { $set: { value: 1 } }, { upsert: true }],
      },
    ]);
  });
});

describe('openEdgeIndex on a MongoDB store', () => {
  const config = loadConfig({ MONGO_URL: 'mongodb://127.0.0.1:9/nmdc', LOG_LEVEL: 'silent' });
  const logger = pino({ level: 'silent' });
  const storeOn = (db: Db) =>
    new MongoDocumentStore(db, undefined, { databaseName: 'nmdc', transactions: false });
  const until = async (done: () => boolean) => {
    for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  };
  const setsWatermark = (c: Call, value: number) =>
    c.collection === '_graph_meta' &&
    c.op === 'updateOne' &&
    JSON.stringify(c.args) === JSON.stringify([{ _id: 'watermark' }, { $set: { value } }, { upsert: true }]);

  it('opens a MongoEdgeIndex beside the records that catches up with the change log', async () => {
    const { db, calls } = fakeDb({
      '_graph_meta.findOne': [
        { _id: 'built', value: 1 },
        { _id: 'watermark', value: 3 },
      ],
      '_changes.find': [[{ seq: 4, collection: 'biosample_set', id: BSM, deleted: false }]],
      'biosample_set.findOne': [biosample],
    });
    const index = await openEdgeIndex(config, storeOn(db), logger, { catchUpEveryMs: 5 });
    try {
      expect(index).toBeInstanceOf(MongoEdgeIndex);
      expect(calls.slice(0, 3).map((c) => `${c.collection}.${c.op}`)).toEqual([
        '_graph_nodes.createIndexes',
        '_graph_edges.createIndexes',
        '_graph_meta.findOne',
      ]);
      await until(() => calls.some((c) => setsWatermark(c, 4)));
      const seen = calls.slice(3).map((c) => `${c.collection}.${c.op}`);
      expect(seen.slice(0, 7)).toEqual([
        '_graph_meta.findOne',
        '_changes.find',
        'biosample_set.findOne',
        '_graph_edges.bulkWrite',
        '_graph_edges.bulkWrite',
        '_graph_nodes.bulkWrite',
        '_graph_meta.updateOne',
      ]);
      expect(calls[4]!.args[0]).toEqual({ seq: { $gt: 3 } });
      expect(calls.some((c) => setsWatermark(c, 4))).toBe(true);
    } finally {
      await index.close();
    }
    // Closed: the catch-up loop stops.
    const after = calls.length;
    await new Promise((r) => setTimeout(r, 30));
    expect(calls.length).toBe(after);
  });

  it('builds the edges once for the records already stored, then marks the index built', async () => {
    const { db, calls } = fakeDb({
      // Not built yet; the watermark is read after the rebuild of the one collection.
      '_graph_meta.findOne': [null, null],
      '_changes.findOne': [{ seq: 12 }, { seq: 12 }],
      listCollections: [
        [{ name: 'biosample_set' }, { name: '_graph_nodes' }, { name: 'functional_annotation_agg' }],
      ],
      'biosample_set.estimatedDocumentCount': [1],
      'functional_annotation_agg.estimatedDocumentCount': [5],
      'biosample_set.find': [[biosample]],
    });
    const index = await openEdgeIndex(config, storeOn(db), logger, { catchUpEveryMs: 0 });
    await index.close();
    const ops = calls.map((c) => `${c.collection}.${c.op}`);
    expect(ops).toEqual([
      '_graph_nodes.createIndexes',
      '_graph_edges.createIndexes',
      '_graph_meta.findOne', // built?
      '.listCollections',
      'biosample_set.estimatedDocumentCount',
      'functional_annotation_agg.estimatedDocumentCount',
      '_changes.findOne', // the sequence every scan starts after
      '_changes.findOne', // reindexCollection's own
      '_graph_nodes.find', // clear
      'biosample_set.find', // scan
      '_graph_edges.bulkWrite',
      '_graph_edges.bulkWrite',
      '_graph_nodes.bulkWrite',
      '_graph_meta.findOne', // watermark
      '_changes.find', // no other collection's writes wait between the watermark and 12
      '_graph_meta.updateOne', // watermark 12
      '.listCollections', // every collection rebuilt?
      '_graph_meta.findOne', // watermark, before moving it to where the first scan began
      '_graph_meta.updateOne', // watermark 12
      '_graph_meta.updateOne', // built
    ]);
    expect(calls.filter((c) => c.op === 'updateOne').map((c) => c.args.slice(0, 2))).toEqual([
      [{ _id: 'watermark' }, { $set: { value: 12 } }],
      [{ _id: 'watermark' }, { $set: { value: 12 } }],
      [{ _id: 'built' }, { $set: { value: 1 } }],
    ]);
    expect(calls[9]!.args).toEqual([{}, { projection: { _id: 0 }, sort: { id: 1 }, limit: 2000 }]);
    expect(calls[10]!.args[0]).toEqual([upsertEdge(E.studyBsm, STUDY, BSM, 'associated_studies', 'down')]);
  });
});
