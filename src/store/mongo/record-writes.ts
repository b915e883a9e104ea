/**
 * The writes of the MongoDB DocumentStore in the caller's session (a transaction when the
 * deployment has them): records replaced by id, and a read-modify-write's read, decision and
 * writes, each change recorded in the change log.
 */
import type { AnyBulkWriteOperation, ClientSession, Db } from 'mongodb';
import { cleanDocs } from '../clean-docs.ts';
import type { Doc, ReadModifyWriteDecision, RecordKey, WriteResult } from '../port.ts';
import { keysByCollection } from '../record-keys.ts';
import type { MongoChangeLog } from './change-log.ts';

/** What the writes use of the store. */
export interface SessionWriter {
  db: Db;
  changeLog: MongoChangeLog;
  maxTimeMS: number;
  /** The collections whose indexes are made. */
  indexed: ReadonlySet<string>;
}

/** A read-modify-write that would write collections whose indexes are not made yet. */
export class NeedsIndexes extends Error {
  constructor(readonly collections: string[]) {
    super(`indexes needed first: ${collections.join(', ')}`);
  }
}

/**
 * The read, the decision and the writes of one read-modify-write, in the caller's session;
 * `NeedsIndexes` when it would write a collection whose indexes are not made yet.
 */
export async function readDecideWrite<T>(
  store: SessionWriter,
  keys: RecordKey[],
  decide: (current: Array<Doc | null>) => ReadModifyWriteDecision<T>,
  session: ClientSession | undefined,
): Promise<T> {
  const found = new Map<string, Doc>();
  for (const collection of new Set(keys.map((k) => k.collection))) {
    const ids = [...new Set(keys.filter((k) => k.collection === collection).map((k) => k.id))];
    const docs = (await store.db
      .collection(collection)
      .find({ id: { $in: ids } }, { projection: { _id: 0 }, maxTimeMS: store.maxTimeMS, session })
      .toArray()) as unknown as Doc[];
    for (const doc of docs) found.set(`${collection}\u0000${doc.id}`, doc);
  }
  const current = keys.map(({ collection, id }) => found.get(`${collection}\u0000${id}`) ?? null);
  const { writes, deletes = [], value } = decide(current);
  // Deletes first (the records absent are skipped), then the writes, one after another.
  for (const [collection, ids] of keysByCollection(deletes)) {
    const present = (
      await store.db
        .collection(collection)
        .find({ id: { $in: ids } }, { projection: { _id: 0, id: 1 }, maxTimeMS: store.maxTimeMS, session })
        .toArray()
    ).map((d) => (d as unknown as { id: string }).id);
    if (present.length === 0) continue;
    await store.db.collection(collection).deleteMany({ id: { $in: present } }, { session });
    await store.changeLog.record(collection, present, true, session);
  }
  const cleaned = writes
    .map((w) => ({ collection: w.collection, docs: cleanDocs(w.docs) }))
    .filter((w) => w.docs.length > 0);
  const unindexed = cleaned.map((w) => w.collection).filter((c) => !store.indexed.has(c));
  if (unindexed.length > 0) throw new NeedsIndexes(unindexed);
  await writeInSession(store, cleaned, session);
  return value;
}

/** Replaces (or inserts) each record by id, recording the changes, in the caller's session. */
export async function writeInSession(
  store: SessionWriter,
  writes: Array<{ collection: string; docs: Doc[] }>,
  session: ClientSession | undefined,
): Promise<WriteResult> {
  const total = { inserted: 0, updated: 0 };
  for (const { collection, docs } of writes) {
    const ops: AnyBulkWriteOperation[] = docs.map((doc) => ({
      replaceOne: { filter: { id: doc.id }, replacement: doc, upsert: true },
    }));
    const result = await store.db.collection(collection).bulkWrite(ops, { ordered: false, session });
    await store.changeLog.record(
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
