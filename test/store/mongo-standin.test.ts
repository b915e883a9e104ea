/**
 * The MongoDB store on the strict stand-in (test/support/mongo-standin.ts): the DocumentStore
 * behaviour suite, then what only a replica set's rules show: transactions whose operations run
 * one after another, bounded retries, failover and the change log, time limits, transient
 * errors, standalone servers, sharded statistics.
 */
import type { MongoClient } from 'mongodb';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { StoreUnavailable } from '../../src/errors.ts';
import { storeOnClient } from '../../src/store/mongo/index.ts';
import type { MongoDocumentStore, MongoStoreOptions } from '../../src/store/mongo/document-store.ts';
import type { Change } from '../../src/store/port.ts';
import { ERRORS, StandInServer } from '../support/mongo-standin.ts';
import { describeDocumentStore } from './behaviour.ts';

const URL = 'mongodb://db1,db2,db3/?replicaSet=rs0';
const silent = pino({ level: 'silent' });
const C = 'biosample_set';

async function open(
  server: StandInServer,
  env: Record<string, string> = {},
  options: Partial<MongoStoreOptions> = {},
): Promise<MongoDocumentStore> {
  const config = loadConfig({ MONGO_URL: URL, LOG_LEVEL: 'silent', ...env });
  return storeOnClient(server.client() as unknown as MongoClient, config, silent, 'the stand-in', {
    pruneEveryMs: 0,
    ...options,
  });
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the operation to fail');
}

describeDocumentStore('MongoDB stand-in (replica set)', async () => {
  const store = await open(new StandInServer('replicaSet'));
  return { store, dispose: () => store.close() };
});

describe('MongoDB store on a replica set (stand-in)', () => {
  it('reads the records of a read-modify-write one operation after another in its transaction', async () => {
    const server = new StandInServer();
    const store = await open(server);
    await store.upsertMany('jobs', [{ id: 'j1', n: 1 }]);
    await store.upsertMany('operations', [{ id: 'o1' }, { id: 'o2' }]);
    const seen = await store.readModifyWrite(
      [
        { collection: 'jobs', id: 'j1' },
        { collection: 'operations', id: 'o2' },
        { collection: 'jobs', id: 'absent' },
        { collection: 'operations', id: 'o1' },
      ],
      (current) => ({
        writes: [{ collection: 'jobs', docs: [{ id: 'j1', n: 2 }] }],
        value: current.map((d) => d?.id ?? null),
      }),
    );
    expect(seen).toEqual(['j1', 'o2', null, 'o1']);
    expect(await store.getById('jobs', 'j1')).toEqual({ id: 'j1', n: 2 });
    // One read per collection, in the transaction.
    const reads = server.log.filter((o) => o.inTransaction && o.op === 'find');
    expect(reads.map((o) => o.collection)).toEqual(['jobs', 'operations']);
    await store.close();
  });

  it('lets concurrent writers of different records commit without colliding on any shared document', async () => {
    const server = new StandInServer();
    const store = await open(server);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.upsertMany(C, [{ id: `nmdc:bsm-11-w${String(i).padStart(2, '0')}` }]),
      ),
    );
    expect(server.conflicts).toBe(0);
    const page = await store.changesSince(0);
    expect(page.changes).toHaveLength(20);
    expect(new Set(page.changes.map((c) => c.id)).size).toBe(20);
    expect(await store.latestSeq()).toBe(20);
    await store.close();
  });

  it('gives up a transaction that keeps meeting write conflicts after bounded retries with pauses, as 503-worthy', async () => {
    const server = new StandInServer();
    const store = await open(
      server,
      {},
      { transactionPolicy: { attempts: 4, baseDelayMs: 20, maxDelayMs: 20 } },
    );
    server.failNext({ ops: ['bulkWrite'], inTransaction: true, error: ERRORS.WriteConflict, times: 1000 });
    const started = Date.now();
    const err = await failure(store.upsertMany(C, [{ id: 'nmdc:bsm-11-x' }]));
    expect(err).toBeInstanceOf(StoreUnavailable);
    expect((err as StoreUnavailable).retryAfterSeconds).toBe(1);
    expect((err as StoreUnavailable).detail).toMatch(/written by other requests/);
    expect(server.log.filter((o) => o.op === 'bulkWrite' && o.collection === C)).toHaveLength(4);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await store.getById(C, 'nmdc:bsm-11-x')).toBeNull();
    await store.close();
  }, 10_000);

  it('runs a transaction again after a transient error, and commits again after an unknown commit result', async () => {
    const server = new StandInServer();
    const store = await open(server);
    server.failNext({ ops: ['bulkWrite'], inTransaction: true, error: ERRORS.NoSuchTransaction });
    expect(await store.upsertMany(C, [{ id: 'nmdc:bsm-11-t1' }])).toEqual({ inserted: 1, updated: 0 });
    server.failNext({
      ops: ['commitTransaction'],
      error: { code: 91, codeName: 'ShutdownInProgress', labels: ['UnknownTransactionCommitResult'] },
    });
    expect(await store.upsertMany(C, [{ id: 'nmdc:bsm-11-t2' }])).toEqual({ inserted: 1, updated: 0 });
    expect((await store.find(C, {})).map((d) => d.id)).toEqual(['nmdc:bsm-11-t1', 'nmdc:bsm-11-t2']);
    expect((await store.changesSince(0)).changes.map((c) => c.id)).toEqual([
      'nmdc:bsm-11-t1',
      'nmdc:bsm-11-t2',
    ]);
    await store.close();
  });

  it('answers elections, step-downs and time limits with StoreUnavailable and a wait', async () => {
    const server = new StandInServer();
    const store = await open(server);
    server.failNext({ ops: ['find'], collection: C, error: ERRORS.NotWritablePrimary });
    const election = await failure(store.find(C, {}));
    expect(election).toBeInstanceOf(StoreUnavailable);
    expect((election as StoreUnavailable).retryAfterSeconds).toBe(5);
    server.failNext({ ops: ['replaceOne'], error: ERRORS.InterruptedDueToReplStateChange });
    expect(await failure(store.state.put('page-token', 't', { n: 1 }))).toBeInstanceOf(StoreUnavailable);
    server.failNext({ ops: ['commitTransaction'], error: ERRORS.PrimarySteppedDown, times: 20 });
    expect(await failure(store.upsertMany(C, [{ id: 'nmdc:bsm-11-y' }]))).toBeInstanceOf(StoreUnavailable);
    // Not transient: passed through as it is.
    server.failNext({ ops: ['find'], collection: C, error: ERRORS.InternalError });
    const internal = await failure(store.find(C, {}));
    expect(internal).not.toBeInstanceOf(StoreUnavailable);
    await store.close();
  });

  it('puts a time limit on every user-driven read, and a slow one ends at it as StoreUnavailable', async () => {
    const server = new StandInServer();
    const store = await open(server, { MONGO_MAX_TIME_MS: '100' });
    await store.upsertMany(C, [{ id: 'nmdc:bsm-11-a', name: 'soil' }]);
    await store.find(C, { name: 'soil' }, { limit: 5 });
    await store.count(C, { name: 'soil' });
    await store.count(C, {});
    await store.getById(C, 'nmdc:bsm-11-a');
    await store.sampleTexts(C, 10);
    await store.changesSince(0);
    await store.deleteMany(C, { name: 'other' });
    await store.state.get('page-token', 'x');
    await store.state.findBy('AccessToken', 'grantId', 'g');
    const reads = server.log.filter((o) =>
      ['find', 'findOne', 'countDocuments', 'estimatedDocumentCount', 'aggregate', 'distinct'].includes(o.op),
    );
    expect(reads.length).toBeGreaterThan(8);
    expect(reads.filter((o) => o.maxTimeMS !== 100 && !o.inTransaction)).toEqual([]);
    server.failNext({ ops: ['find'], collection: C, delayMs: 1000 });
    const started = Date.now();
    const slow = await failure(store.find(C, { name: 'soil' }));
    expect(slow).toBeInstanceOf(StoreUnavailable);
    expect((slow as StoreUnavailable).detail).toMatch(/time limit/);
    expect(Date.now() - started).toBeLessThan(800);
    await store.close();
  });

  it('sends MongoDB only patterns its backtracking engine runs safely, and evaluates the others in the service', async () => {
    const server = new StandInServer();
    const store = await open(server);
    await store.upsertMany(C, [
      { id: 'nmdc:bsm-11-r1', name: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!', tags: ['soil'] },
      { id: 'nmdc:bsm-11-r2', name: 'aaaa', tags: ['water'] },
      { id: 'nmdc:bsm-11-r3', name: 'soil core', tags: ['soil'] },
      { id: 'nmdc:bsm-11-r4', name: 'sediment', tags: ['soil', 'deep'] },
    ]);
    const hostile = '(a+)+$';
    server.regexes.length = 0;
    const found = await store.find(C, { name: { $regex: hostile } }, { projection: ['tags'] });
    expect(found).toEqual([{ id: 'nmdc:bsm-11-r2', tags: ['water'] }]);
    // Combined with conditions MongoDB may evaluate: those still narrow on the server.
    expect(await store.count(C, { $and: [{ tags: 'soil' }, { name: { $not: { $regex: '.*core' } } }] })).toBe(
      2,
    );
    expect(
      (
        await store.find(
          C,
          { $or: [{ name: { $regex: '^(s|so)+il' } }, { tags: 'water' }] },
          { skip: 1, limit: 1 },
        )
      ).map((d) => d.id),
    ).toEqual(['nmdc:bsm-11-r3']);
    expect(await store.deleteMany(C, { name: { $regex: '(\\w+\\s?)+$' } }, 1)).toEqual(['nmdc:bsm-11-r2']);
    expect(server.regexes).toEqual([]);
    // A safe pattern is MongoDB's to evaluate.
    expect((await store.find(C, { name: { $regex: '^soil' } })).map((d) => d.id)).toEqual(['nmdc:bsm-11-r3']);
    expect(server.regexes).toEqual(['^soil']);
    await store.close();
  });

  it('reads pages sorted by a narrowing attribute either way off an index, on a server that cannot sort them in memory by default', async () => {
    const server = new StandInServer();
    // A server that sorts in memory up to 4 KB and never spills to disk.
    server.allowDiskUseByDefault = false;
    server.sortMemoryBytes = 4096;
    const store = await open(server);
    const categories = ['Plants', 'Terrestrial', 'Aquatic'];
    const docs = Array.from({ length: 120 }, (_, i) => ({
      id: `nmdc:bsm-11-${String((i * 37) % 120).padStart(3, '0')}`,
      // Many ties, so the id tie-breaker decides much of the order.
      name: `sample ${String(i % 9)}`,
      ecosystem_category: categories[i % 3]!,
      description: 'x'.repeat(200),
    }));
    await store.upsertMany(C, docs);
    const expected = (filter: (d: (typeof docs)[number]) => boolean, direction: 1 | -1, skip: number) =>
      docs
        .filter(filter)
        .sort((a, b) =>
          a.name === b.name ? (a.id < b.id ? -1 : 1) : a.name < b.name ? -direction : direction,
        )
        .slice(skip, skip + 25)
        .map((d) => d.id);
    for (const direction of [1, -1] as const) {
      for (const [filter, test] of [
        [{}, () => true],
        [{ ecosystem_category: 'Plants' }, (d: (typeof docs)[number]) => d.ecosystem_category === 'Plants'],
      ] as const) {
        for (const skip of [0, 30]) {
          server.log.length = 0;
          const page = await store.find(C, filter, {
            sort: [['name', direction]],
            skip,
            limit: 25,
            projection: ['name'],
          });
          expect(page.map((d) => d.id)).toEqual(expected(test, direction, skip));
          expect(page[0]).toEqual({ id: page[0]!.id, name: docs.find((d) => d.id === page[0]!.id)!.name });
          expect(server.log.map((o) => [o.op, o.sortIndex])).toEqual([
            ['find', direction === 1 ? 'name_1_id_1' : 'name_-1_id_1'],
          ]);
        }
      }
    }
    // A path with no index is sorted in memory, over the limit here: the find lets it spill.
    server.log.length = 0;
    const byDescription = await store.find(C, {}, { sort: [['description', 1]], limit: 100 });
    expect(byDescription.map((d) => d.id)).toEqual(
      docs
        .map((d) => d.id)
        .sort()
        .slice(0, 100),
    );
    expect(server.log.map((o) => [o.op, o.sortIndex])).toEqual([['find', null]]);
    await store.close();
  });

  it('replaces the single-field indexes of an earlier version at start-up, and starting again changes nothing', async () => {
    const server = new StandInServer();
    const records = server
      .client()
      .db(loadConfig({ MONGO_URL: URL }).mongoDb)
      .collection(C);
    await records.createIndexes([
      { key: { id: 1 }, name: 'id_1', unique: true },
      { key: { name: 1 }, name: 'name_1' },
      { key: { ecosystem_category: 1 }, name: 'ecosystem_category_1' },
      { key: { 'lat_lon.latitude': 1 }, name: 'lat_lon.latitude_1' },
      // An operator's own index stays.
      { key: { samples: 1 }, name: 'samples_1' },
    ]);
    const names = async () => (await records.listIndexes().toArray()).map((i) => String(i.name)).sort();
    const first = await open(server);
    await first.close();
    const after = await names();
    expect(after).toHaveLength(1 + 37 + 1);
    expect(after).toEqual(
      expect.arrayContaining(['_id_', 'id_1', 'samples_1', 'name_1_id_1', 'name_-1_id_1']),
    );
    expect(after).not.toEqual(expect.arrayContaining(['name_1']));
    expect(after.filter((n) => n.endsWith('_1') && !n.endsWith('_id_1'))).toEqual(['id_1', 'samples_1']);
    server.log.length = 0;
    const second = await open(server);
    await second.close();
    expect(await names()).toEqual(after);
    expect(server.log.filter((o) => o.op === 'dropIndexes')).toEqual([]);
    // The server refuses a name an index has with other keys: the new names never collide.
    await expect(records.createIndexes([{ key: { name: 1 }, name: 'name_1_id_1' }])).rejects.toMatchObject({
      code: 86,
    });
  });

  it('counts a whole collection from its metadata, and a filtered count by counting', async () => {
    const server = new StandInServer();
    const store = await open(server);
    await store.upsertMany(C, [{ id: 'nmdc:bsm-11-a' }, { id: 'nmdc:bsm-11-b', name: 'x' }]);
    server.log.length = 0;
    expect(await store.count(C, {})).toBe(2);
    expect(await store.count(C, { name: 'x' })).toBe(1);
    expect(server.log.map((o) => o.op)).toEqual(['estimatedDocumentCount', 'countDocuments']);
    await store.close();
  });

  it('sums $collStats over the shards of a sharded cluster', async () => {
    const server = new StandInServer('sharded');
    const store = await open(server);
    await store.upsertMany(
      C,
      Array.from({ length: 10 }, (_, i) => ({ id: `nmdc:bsm-11-s${i}`, name: 'x'.repeat(100) })),
    );
    const [stats] = (await store.collectionStats()).filter((s) => s.collection === C);
    expect(stats!.count).toBe(10);
    expect(stats!.size).toBeGreaterThan(1000);
    expect(stats!.avgObjSize).toBeCloseTo(stats!.size / 10);
    await store.close();
  });

  it('pages the change log with more, prunes it, and tells a reader from before the pruned mark that it has a gap', async () => {
    const server = new StandInServer();
    const store = await open(server, {}, { changesPage: 3, changesRetained: 4 });
    for (let i = 1; i <= 8; i++) await store.upsertMany(C, [{ id: `nmdc:bsm-11-p${i}` }]);
    const first = await store.changesSince(0);
    expect(first.changes.map((c) => c.id)).toEqual(['nmdc:bsm-11-p1', 'nmdc:bsm-11-p2', 'nmdc:bsm-11-p3']);
    expect(first).toMatchObject({ seq: 3, more: true });
    const last = await store.changesSince(6);
    expect(last.changes.map((c) => c.id)).toEqual(['nmdc:bsm-11-p7', 'nmdc:bsm-11-p8']);
    expect(last.more).toBeUndefined();
    expect(await store.changeLog.prune()).toBe(4);
    expect(await store.changesSince(3)).toEqual({ changes: [], seq: 8, gap: true });
    const after = await store.changesSince(4);
    expect(after.changes.map((c) => c.id)).toEqual(['nmdc:bsm-11-p5', 'nmdc:bsm-11-p6', 'nmdc:bsm-11-p7']);
    expect(after.more).toBe(true);
    // A record written again is numbered again, above every reader's position.
    await store.upsertMany(C, [{ id: 'nmdc:bsm-11-p5', name: 'again' }]);
    expect(await store.changesSince(8)).toEqual({
      changes: [{ collection: C, id: 'nmdc:bsm-11-p5', deleted: false }],
      seq: 9,
    });
    await store.close();
  });

  it('never hides a change behind a reader position that a failover rolled back', async () => {
    const server = new StandInServer();
    const writer = await open(server);
    const dying = await open(server);
    const reader = await open(server);
    await writer.upsertMany(C, [{ id: 'nmdc:bsm-11-before' }]);
    const seen: Change[] = [];
    let position = 0;
    const readOn = async () => {
      const page = await reader.changesSince(position);
      seen.push(...page.changes);
      position = page.seq;
    };
    await readOn();
    // A primary takes a write from a process that then dies with it, before a majority has it.
    server.holdReplication();
    const lost = dying.upsertMany(C, [{ id: 'nmdc:bsm-11-rolled-back' }]);
    lost.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 20));
    await readOn();
    await dying.close();
    server.failover();
    expect(await failure(lost)).toBeDefined();
    // The new primary numbers the next change; the reader must still see it.
    await writer.upsertMany(C, [{ id: 'nmdc:bsm-11-after' }]);
    await readOn();
    await readOn();
    expect(seen.map((c) => c.id)).toEqual(['nmdc:bsm-11-before', 'nmdc:bsm-11-after']);
    expect(position).toBe(await reader.latestSeq());
    expect(
      server.log.filter((o) => o.collection === '_changes' && o.op === 'find' && !o.inTransaction),
    ).not.toEqual([]);
    for (const read of server.log.filter(
      (o) => o.collection === '_changes' && !o.inTransaction && o.op === 'find',
    ))
      expect(read.readConcern).toEqual({ level: 'majority' });
    await writer.close();
    await reader.close();
  });
});

describe('MongoDB store on a standalone server (stand-in)', () => {
  it('refuses to start unless MONGO_ALLOW_STANDALONE says so', async () => {
    const err = await failure(open(new StandInServer('standalone')));
    expect((err as Error).message).toMatch(/standalone server.*MONGO_ALLOW_STANDALONE=true/s);
    const store = await open(new StandInServer('standalone'), { MONGO_ALLOW_STANDALONE: 'true' });
    await store.upsertMany(C, [{ id: 'nmdc:bsm-11-a' }]);
    expect(await store.getById(C, 'nmdc:bsm-11-a')).toEqual({ id: 'nmdc:bsm-11-a' });
    expect((await store.changesSince(0)).changes).toEqual([
      { collection: C, id: 'nmdc:bsm-11-a', deleted: false },
    ]);
    await store.close();
  });
});
