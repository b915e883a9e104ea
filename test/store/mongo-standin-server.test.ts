/**
 * The MongoDB stand-in itself (test/support/mongo-standin.ts): the rules it enforces are the
 * server's and the driver's, so the adapters' tests on it mean something.
 */
import { MongoServerError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { ERRORS, StandInServer, StandInViolation } from '../support/mongo-standin.ts';

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the operation to fail');
}

function open(topology: 'replicaSet' | 'standalone' | 'sharded' = 'replicaSet') {
  const server = new StandInServer(topology);
  const client = server.client();
  return { server, client, db: client.db('nmdc') };
}

describe('MongoDB stand-in', () => {
  it('reads a snapshot in a transaction, and fails the later of two writers of one document with a transient write conflict', async () => {
    const { client, db } = open();
    const c = db.collection('jobs');
    await c.insertOne({ _id: 'j1', n: 0 });
    const a = client.startSession();
    const b = client.startSession();
    a.startTransaction();
    b.startTransaction();
    expect(await c.findOne({ _id: 'j1' }, { session: a })).toEqual({ _id: 'j1', n: 0 });
    await c.updateOne({ _id: 'j1' }, { $set: { n: 1 } }, { session: b });
    // Outside both transactions nothing has changed yet.
    expect(await c.findOne({ _id: 'j1' })).toEqual({ _id: 'j1', n: 0 });
    const conflict = await failure(c.updateOne({ _id: 'j1' }, { $set: { n: 2 } }, { session: a }));
    expect(conflict).toBeInstanceOf(MongoServerError);
    expect((conflict as MongoServerError).code).toBe(112);
    expect((conflict as MongoServerError).hasErrorLabel('TransientTransactionError')).toBe(true);
    await b.commitTransaction();
    expect(await c.findOne({ _id: 'j1' })).toEqual({ _id: 'j1', n: 1 });
    // The server aborted a; its commit says so.
    const commit = await failure(a.commitTransaction());
    expect((commit as MongoServerError).codeName).toBe('NoSuchTransaction');
    // A transaction that began after b's commit may write.
    const c2 = client.startSession();
    c2.startTransaction();
    await c.updateOne({ _id: 'j1' }, { $inc: { n: 1 } }, { session: c2 });
    await c2.commitTransaction();
    expect(await c.findOne({ _id: 'j1' })).toEqual({ _id: 'j1', n: 2 });
  });

  it('refuses a second operation of one transaction while the first is in flight, and aborts the transaction', async () => {
    const { client, db } = open();
    await db.collection('a').insertOne({ _id: 1 });
    const s = client.startSession();
    s.startTransaction();
    const results = await Promise.allSettled([
      db.collection('a').findOne({ _id: 1 }, { session: s }),
      db.collection('a').findOne({ _id: 1 }, { session: s }),
    ]);
    expect(results[1]!.status).toBe('rejected');
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(StandInViolation);
    const commit = await failure(s.commitTransaction());
    expect((commit as MongoServerError).codeName).toBe('NoSuchTransaction');
    // One after another is fine.
    s.startTransaction();
    await db.collection('a').findOne({ _id: 1 }, { session: s });
    await db.collection('a').insertOne({ _id: 2 }, { session: s });
    await s.commitTransaction();
    expect(await db.collection('a').countDocuments({})).toBe(2);
  });

  it('refuses transactions on a standalone server, and concerns on operations inside a transaction', async () => {
    const standalone = open('standalone');
    expect(await standalone.db.admin().command({ hello: 1 })).not.toHaveProperty('setName');
    const s = standalone.client.startSession();
    s.startTransaction();
    const refused = await failure(standalone.db.collection('a').insertOne({ _id: 1 }, { session: s }));
    expect((refused as MongoServerError).code).toBe(20);
    const rs = open();
    expect(await rs.db.admin().command({ hello: 1 })).toMatchObject({ setName: 'rs0' });
    const t = rs.client.startSession();
    t.startTransaction();
    const withConcern = await failure(
      rs.db.collection('a').insertOne({ _id: 1 }, { session: t, writeConcern: { w: 'majority' } }),
    );
    expect((withConcern as MongoServerError).codeName).toBe('InvalidOptions');
  });

  it('keeps unreplicated writes from majority reads, and rolls them back at a failover, failing the writer', async () => {
    const { server, db } = open();
    const c = db.collection('changes');
    await c.insertOne({ _id: 1 });
    server.holdReplication();
    const write = c.insertOne({ _id: 2 });
    write.catch(() => {});
    await new Promise((r) => setTimeout(r, 5));
    expect(await c.countDocuments({})).toBe(2);
    expect(await c.countDocuments({}, { readConcern: { level: 'majority' } })).toBe(1);
    server.failover();
    const lost = await failure(write);
    expect((lost as MongoServerError).codeName).toBe('InterruptedDueToReplStateChange');
    expect(await c.countDocuments({})).toBe(1);
    // After the failover replication flows again.
    await c.insertOne({ _id: 3 });
    expect(await c.countDocuments({}, { readConcern: { level: 'majority' } })).toBe(2);
  });

  it('answers a majority write with a timeout when wtimeoutMS passes without replication', async () => {
    const { server, db } = open();
    server.holdReplication();
    const err = await failure(
      db.collection('a').insertOne({ _id: 1 }, { writeConcern: { w: 'majority', wtimeoutMS: 20 } }),
    );
    expect((err as MongoServerError).code).toBe(64);
    server.replicate();
    expect(await db.collection('a').countDocuments({}, { readConcern: { level: 'majority' } })).toBe(1);
  });

  it('injects errors with their labels, and cuts a slow operation short at its maxTimeMS', async () => {
    const { server, db } = open();
    server.failNext({ ops: ['insertOne'], error: ERRORS.NotWritablePrimary });
    const err = await failure(db.collection('a').insertOne({ _id: 1 }));
    expect((err as MongoServerError).code).toBe(10107);
    expect((err as MongoServerError).hasErrorLabel('RetryableWriteError')).toBe(true);
    await db.collection('a').insertOne({ _id: 1 });
    server.failNext({ ops: ['find'], delayMs: 200 });
    const slow = await failure(db.collection('a').find({}, { maxTimeMS: 10 }).toArray());
    expect((slow as MongoServerError).codeName).toBe('MaxTimeMSExpired');
    expect(server.log.at(-1)).toMatchObject({ op: 'find', collection: 'a', maxTimeMS: 10 });
  });

  it('enforces unique indexes: E11000 outside transactions, a write conflict between concurrent transactions', async () => {
    const { client, db } = open();
    const c = db.collection('pids');
    await c.createIndexes([{ key: { id: 1 }, name: 'id_1', unique: true }]);
    await c.insertOne({ id: 'x' });
    expect(((await failure(c.insertOne({ id: 'x' }))) as MongoServerError).code).toBe(11000);
    const a = client.startSession();
    const b = client.startSession();
    a.startTransaction();
    b.startTransaction();
    await c.insertOne({ id: 'y' }, { session: a });
    const second = await failure(c.insertOne({ id: 'y' }, { session: b }));
    expect((second as MongoServerError).code).toBe(112);
    await a.commitTransaction();
    expect(await c.countDocuments({ id: 'y' })).toBe(1);
  });

  it('keeps index names and keys apart, at most 64 indexes, and drops only an index that exists', async () => {
    const { db } = open();
    const c = db.collection('biosample_set');
    const code = async (p: Promise<unknown>) => ((await failure(p)) as MongoServerError).code;
    expect(await c.createIndexes([{ key: { name: 1 }, name: 'name_1' }])).toEqual(['name_1']);
    // Creating the same index again is no error; a name with other keys, or keys with another name, is.
    expect(await c.createIndexes([{ key: { name: 1 }, name: 'name_1' }])).toEqual(['name_1']);
    expect(await code(c.createIndexes([{ key: { name: 1, id: 1 }, name: 'name_1' }]))).toBe(86);
    expect(await code(c.createIndexes([{ key: { name: 1 }, name: 'by_name' }]))).toBe(85);
    expect(await code(c.dropIndex('absent'))).toBe(27);
    expect(await code(c.dropIndex('_id_'))).toBe(72);
    await c.dropIndex('name_1');
    expect((await c.listIndexes().toArray()).map((i) => i.name)).toEqual(['_id_']);
    await c.createIndexes(Array.from({ length: 63 }, (_, i) => ({ key: { [`f${i}`]: 1 }, name: `f${i}_1` })));
    expect(await code(c.createIndexes([{ key: { g: 1 }, name: 'g_1' }]))).toBe(67);
    expect(await c.listIndexes().toArray()).toHaveLength(64);
  });

  it('says which index gives a find its sort, and refuses a sort in memory over its limit unless it may spill', async () => {
    const { server, db } = open();
    const c = db.collection('biosample_set');
    await c.createIndexes([{ key: { name: -1, id: 1 }, name: 'name_-1_id_1' }]);
    await c.insertMany(
      Array.from({ length: 50 }, (_, i) => ({ id: `b${i}`, name: `n${i % 5}`, pad: 'x'.repeat(100) })),
    );
    server.allowDiskUseByDefault = false;
    server.sortMemoryBytes = 2000;
    const sortIndexOf = async (sort: Array<[string, 1 | -1]>, limit = 0) => {
      await c.find({}, { sort, limit }).toArray();
      return server.log.at(-1)!.sortIndex;
    };
    expect(
      await sortIndexOf([
        ['name', -1],
        ['id', 1],
      ]),
    ).toBe('name_-1_id_1');
    expect(
      await sortIndexOf([
        ['name', 1],
        ['id', -1],
      ]),
    ).toBe('name_-1_id_1');
    expect(await sortIndexOf([['name', -1]])).toBe('name_-1_id_1');
    expect(await sortIndexOf([['_id', -1]])).toBe('_id_');
    // Not the index's order: in memory, within the limit for the first 10, over it for all.
    expect(
      await sortIndexOf(
        [
          ['name', 1],
          ['id', 1],
        ],
        10,
      ),
    ).toBeNull();
    expect(
      await code(
        c
          .find(
            {},
            {
              sort: [
                ['name', 1],
                ['id', 1],
              ],
            },
          )
          .toArray(),
      ),
    ).toBe(292);
    expect(
      await c
        .find(
          {},
          {
            sort: [
              ['name', 1],
              ['id', 1],
            ],
            allowDiskUse: true,
          },
        )
        .toArray(),
    ).toHaveLength(50);
    server.allowDiskUseByDefault = true;
    expect(await c.find({}, { sort: { pad: 1 } }).toArray()).toHaveLength(50);
    async function code(p: Promise<unknown>) {
      return ((await failure(p)) as MongoServerError).code;
    }
  });

  it('refuses a distinct whose reply is over the reply limit, and answers $collStats per shard', async () => {
    const { server, db } = open('sharded');
    const c = db.collection('fs.chunks');
    await c.insertMany(Array.from({ length: 200 }, (_, i) => ({ files_id: `file-${i}`, n: 0 })));
    server.maxReplyBytes = 1000;
    const err = await failure(c.distinct('files_id'));
    expect((err as MongoServerError).code).toBe(17217);
    const stats = await c.aggregate([{ $collStats: { storageStats: {} } }]).toArray();
    expect(stats).toHaveLength(2);
    expect(stats.reduce((n, s) => n + (s.storageStats as { count: number }).count, 0)).toBe(200);
  });

  it("runs the driver's withTransaction: retries a transient error, gives up on any other", async () => {
    const { server, client, db } = open();
    server.failNext({ ops: ['insertOne'], inTransaction: true, error: ERRORS.WriteConflict });
    const s = client.startSession();
    let attempts = 0;
    await s.withTransaction(async () => {
      attempts++;
      await db.collection('a').insertOne({ _id: attempts }, { session: s });
    });
    expect(attempts).toBe(2);
    expect(await db.collection('a').find({}).toArray()).toEqual([{ _id: 2 }]);
  });
});
