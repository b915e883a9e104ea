/**
 * A stand-in for the MongoDB driver's `Db` for golden tests: records every call (arguments
 * copied as they were at the call) and answers from per-operation queues (`'<collection>.<op>'`),
 * else with a neutral default.
 */
import type { Db } from 'mongodb';

export interface Call {
  collection: string;
  op: string;
  args: unknown[];
}

export function fakeMongoDb(answers: Record<string, unknown[]> = {}) {
  const calls: Call[] = [];
  // An Error among the answers is thrown, as the driver throws (e.g. a duplicate key).
  const next = (key: string, fallback: unknown) => {
    const answer = answers[key]?.length ? answers[key]!.shift() : fallback;
    if (answer instanceof Error) throw answer;
    return answer;
  };
  const collection = (name: string) => {
    const record =
      (op: string, fallback: unknown) =>
      async (...args: unknown[]) => {
        calls.push({ collection: name, op, args: structuredClone(args) });
        return next(`${name}.${op}`, fallback);
      };
    const cursor =
      (op: string) =>
      (...args: unknown[]) => {
        calls.push({ collection: name, op, args: structuredClone(args) });
        const rows = async () => next(`${name}.${op}`, []) as unknown[];
        return {
          toArray: rows,
          async *[Symbol.asyncIterator]() {
            yield* await rows();
          },
          close: async () => undefined,
        };
      };
    return {
      createIndexes: record('createIndexes', []),
      createIndex: record('createIndex', 'seq_1'),
      listIndexes: cursor('listIndexes'),
      dropIndex: record('dropIndex', {}),
      find: cursor('find'),
      aggregate: cursor('aggregate'),
      findOne: record('findOne', null),
      countDocuments: record('countDocuments', 0),
      estimatedDocumentCount: record('estimatedDocumentCount', 0),
      bulkWrite: record('bulkWrite', { upsertedCount: 0, matchedCount: 0 }),
      insertMany: record('insertMany', {}),
      insertOne: record('insertOne', {}),
      deleteMany: record('deleteMany', { deletedCount: 0 }),
      deleteOne: record('deleteOne', { deletedCount: 0 }),
      updateOne: record('updateOne', {}),
      replaceOne: record('replaceOne', {}),
      findOneAndUpdate: record('findOneAndUpdate', null),
    };
  };
  const db = {
    collection,
    listCollections: (...args: unknown[]) => {
      calls.push({ collection: '', op: 'listCollections', args });
      return { toArray: async () => next('listCollections', []) };
    },
  } as unknown as Db;
  const take = () => calls.splice(0);
  return { db, calls, take };
}
