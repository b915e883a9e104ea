/**
 * The MongoDB edge index: collections beside the records in the same database, caught up from
 * the store's change log (`keepCaughtUp`), so it is not `synchronous`.
 *
 * `_graph_nodes` holds one document per record (`_id` = the record's id; `collection`, `type`,
 * `fingerprint`); a node whose `collection` is absent or null is not a record, and every read
 * treats it so. `_graph_edges` holds one document per (up, down, slot, holder) with that tuple
 * as its `_id`, so writing an edge twice is a no-op and batches can run unordered. The edge's
 * ends are ids, not interned keys: unlike the embedded adapter, nothing has to intern an id
 * that is only referenced, so a node exists exactly while its record does and an edge exactly
 * while the record holding it does. Nothing is left behind that no record and no edge mentions,
 * and there is no orphan collection to run (the embedded adapter's `collect`). A reference to
 * an id that is no record is an edge like any other: walks pass along it as soon as a node with
 * that id appears, and a deleted record's node goes while the edges others hold to it stay.
 *
 * Walks (`walk.ts`) ask `step` for one breadth-first level at a time, rather than running
 * `$graphLookup`: the walker batches each frontier by `STEP_BATCH`, yields to the event loop
 * between batches, caps the (record, origin) pairs it records and needs, for every record met,
 * the start ids it was reached from. `$graphLookup` computes the whole closure in one
 * server-side stage bounded by 100 MB of memory; it can neither be paged nor stopped at a cap,
 * and it reports origins per start id only by unwinding one closure per start. A step is two
 * indexed queries (`edge-reads.ts`): the edges from the frontier (covered by an edge index) and
 * the far ends that are records.
 *
 * Writes are not one transaction with the records (the index catches up), and their order keeps
 * what concurrent walks see sensible: a record's new edges are written before its stale ones
 * are deleted (an edge it keeps never disappears), and its node last (a record becomes reachable
 * with its edges in place); a deleted record's node goes first.
 *
 * Several service processes catch up at once, each reading a record some time after the change
 * log named it; a slow one could otherwise write an older version over a newer one, and nothing
 * would revisit it. On a replica set (given a client) the writes are versioned by the change log:
 * each batch runs in a transaction that reads, in one snapshot, the records' change-log entries,
 * their nodes and the records themselves, writes the edges of the records as that snapshot holds
 * them (or removes them when the snapshot holds no record), and stamps each node with its entry's
 * sequence number (`seq`). A node already stamped with the entry's number is current and is left
 * alone. Two processes writing one record's edges write its node in both transactions, so one of
 * them meets a write conflict and runs again on a newer snapshot: the last to commit wrote the
 * newest version any of them read, and a record written after that gets a new sequence number,
 * which brings another catch-up. Without transactions (a standalone server, or no client) each
 * write is the given version, idempotent, as before.
 */
import type { AnyBulkWriteOperation, ClientSession, Collection, Db, Filter, MongoClient } from 'mongodb';
import type { Doc } from '../../store/port.ts';
import { CHANGES_COLLECTION, changeKey } from '../../store/mongo/change-log.ts';
import { engine } from '../../store/mongo/engine-errors.ts';
import {
  DEFAULT_TRANSACTION_POLICY,
  runTransaction,
  type TransactionPolicy,
} from '../../store/mongo/transactions.ts';
import { fingerprintOf } from '../../../search/indexed-values.ts';
import { edgesOf, inGraph, typeOf, type Edge } from '../edges.ts';
import type { Direction, EdgeIndex, NodeInfo, Referrer, Step } from '../port.ts';
import { nodesOf, referrersOf, stepOf, type GraphReader } from './edge-reads.ts';
import {
  EDGES_COLLECTION,
  edgeId,
  META_COLLECTION,
  NODES_COLLECTION,
  type EdgeDoc,
  type MetaDoc,
  type NodeDoc,
} from './graph-docs.ts';

export { EDGES_COLLECTION, edgeId, META_COLLECTION, NODES_COLLECTION };

/** Records per round of bulk writes (and ids per lookup of which of them are nodes). */
const WRITE_BATCH = 1000;
/** Records per versioned transaction: smaller, so that colliding catch-ups redo less. */
const VERSIONED_BATCH = 250;
const FINGERPRINT_PAGE = 2000;

/** The edges `id` holds at its `holder` end, except those in `keep`. */
function heldBy(id: string, holder: Edge['holder'], keep: string[]): Filter<EdgeDoc> {
  const filter: Filter<EdgeDoc> = holder === 'up' ? { up: id, holder } : { down: id, holder };
  if (keep.length > 0) filter._id = { $nin: keep };
  return filter;
}

export interface MongoEdgeIndexOptions {
  /** A client of a replica set or sharded cluster: writes are then versioned (see the top of the file). */
  client?: MongoClient;
  policy?: TransactionPolicy;
  /** Time limit of the walks' reads (`maxTimeMS`). */
  maxTimeMS?: number;
}

export class MongoEdgeIndex implements EdgeIndex {
  readonly engine = 'mongo' as const;
  readonly synchronous = false;
  private readonly nodeColl: Collection<NodeDoc>;
  private readonly edgeColl: Collection<EdgeDoc>;
  private readonly metaColl: Collection<MetaDoc>;
  private readonly reader: GraphReader;

  constructor(
    private readonly db: Db,
    private readonly options: MongoEdgeIndexOptions = {},
  ) {
    this.nodeColl = db.collection<NodeDoc>(NODES_COLLECTION);
    this.edgeColl = db.collection<EdgeDoc>(EDGES_COLLECTION);
    this.metaColl = db.collection<MetaDoc>(META_COLLECTION);
    this.reader = {
      nodeColl: this.nodeColl,
      edgeColl: this.edgeColl,
      maxTimeMS: options.maxTimeMS ?? 30_000,
    };
  }

  /**
   * Creates the indexes. Each edge index leads with one end and `holder`, so the edges a record
   * holds are one index range (a study referenced by 10^5 biosamples holds none of them), and
   * ends with the other end and the slot, so a step's query is covered.
   */
  async init(): Promise<void> {
    await this.nodeColl.createIndexes([{ key: { collection: 1, _id: 1 }, name: 'collection_id' }]);
    await this.edgeColl.createIndexes([
      { key: { up: 1, holder: 1, down: 1, slot: 1 }, name: 'up_holder_down_slot' },
      { key: { down: 1, holder: 1, up: 1, slot: 1 }, name: 'down_holder_up_slot' },
    ]);
  }

  covers(collection: string): boolean {
    return inGraph(collection);
  }

  /** True once the edges were built for every record the store held when the collections appeared. */
  async isBuilt(): Promise<boolean> {
    return (await this.meta('built')) === 1;
  }

  async markBuilt(): Promise<void> {
    await this.setMeta('built', 1);
  }

  private async meta(key: string): Promise<number | undefined> {
    const found = await this.metaColl.findOne({ _id: key });
    return found?.value;
  }

  private async setMeta(key: string, value: number, only: '$set' | '$max' = '$set'): Promise<void> {
    await this.metaColl.updateOne({ _id: key }, { [only]: { value } }, { upsert: true });
  }

  async index(collection: string, docs: Doc[]): Promise<void> {
    if (!inGraph(collection) || docs.length === 0) return;
    if (this.options.client) {
      await this.versioned(
        collection,
        docs.map((d) => d.id),
      );
      return;
    }
    // A record given twice: its last version counts, as if written in turn.
    const latest = new Map<string, Doc>();
    for (const doc of docs) {
      latest.delete(doc.id);
      latest.set(doc.id, doc);
    }
    const unique = [...latest.values()];
    for (let i = 0; i < unique.length; i += WRITE_BATCH)
      await this.write(collection, unique.slice(i, i + WRITE_BATCH));
  }

  private async write(
    collection: string,
    docs: Doc[],
    session?: ClientSession,
    seqOf?: (id: string) => number | null,
  ): Promise<void> {
    const upserts: Array<AnyBulkWriteOperation<EdgeDoc>> = [];
    const stale: Array<AnyBulkWriteOperation<EdgeDoc>> = [];
    const nodes: Array<AnyBulkWriteOperation<NodeDoc>> = [];
    for (const doc of docs) {
      const held: Record<Edge['holder'], string[]> = { up: [], down: [] };
      for (const edge of edgesOf(doc)) {
        const _id = edgeId(edge);
        held[edge.holder].push(_id);
        upserts.push({
          updateOne: {
            filter: { _id },
            update: { $setOnInsert: { up: edge.up, down: edge.down, slot: edge.slot, holder: edge.holder } },
            upsert: true,
          },
        });
      }
      stale.push(
        { deleteMany: { filter: heldBy(doc.id, 'up', held.up) } },
        { deleteMany: { filter: heldBy(doc.id, 'down', held.down) } },
      );
      const replacement: Omit<NodeDoc, '_id'> = {
        collection,
        type: typeOf(doc),
        fingerprint: fingerprintOf(doc),
      };
      if (seqOf) replacement.seq = seqOf(doc.id);
      nodes.push({ replaceOne: { filter: { _id: doc.id }, replacement, upsert: true } });
    }
    const options = session ? { ordered: false, session } : { ordered: false };
    if (upserts.length > 0) await this.edgeColl.bulkWrite(upserts, options);
    await this.edgeColl.bulkWrite(stale, options);
    await this.nodeColl.bulkWrite(nodes, options);
  }

  /**
   * Brings the edges of these records to what one snapshot holds, in transactions of
   * VERSIONED_BATCH records (see the top of the file).
   */
  private async versioned(collection: string, ids: string[]): Promise<void> {
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += VERSIONED_BATCH) {
      const batch = unique.slice(i, i + VERSIONED_BATCH);
      await engine(() =>
        runTransaction(
          this.options.client!,
          (session) => this.syncInSnapshot(collection, batch, session),
          this.options.policy ?? DEFAULT_TRANSACTION_POLICY,
        ),
      );
    }
  }

  private async syncInSnapshot(collection: string, ids: string[], session: ClientSession): Promise<void> {
    const entries = await this.db
      .collection<{ _id: string; seq: number | null }>(CHANGES_COLLECTION)
      .find(
        { _id: { $in: ids.map((id) => changeKey(collection, id)) } },
        { projection: { _id: 1, seq: 1 }, session },
      )
      .toArray();
    const seqOf = new Map(entries.map((e) => [e._id, e.seq ?? null]));
    const nodes = await this.nodeColl
      .find({ _id: { $in: ids } }, { projection: { _id: 1, collection: 1, seq: 1 }, session })
      .toArray();
    const stamped = new Map(nodes.map((n) => [n._id, n]));
    // A node stamped with its record's current sequence number is current.
    const stale = ids.filter((id) => {
      const seq = seqOf.get(changeKey(collection, id)) ?? null;
      const node = stamped.get(id);
      return seq === null || !node || node.collection !== collection || node.seq !== seq;
    });
    if (stale.length === 0) return;
    const records = (await this.db
      .collection(collection)
      .find({ id: { $in: stale } }, { projection: { _id: 0 }, session })
      .toArray()) as unknown as Doc[];
    const present = new Set(records.map((r) => r.id));
    const gone = stale.filter((id) => !present.has(id) && stamped.get(id)?.collection === collection);
    if (gone.length > 0) await this.drop(collection, gone, session);
    if (records.length > 0)
      await this.write(collection, records, session, (id) => seqOf.get(changeKey(collection, id)) ?? null);
  }

  /** Removes deleted records: their nodes and the edges they hold go, references to them stay. */
  async remove(collection: string, ids: string[]): Promise<void> {
    if (!inGraph(collection) || ids.length === 0) return;
    if (this.options.client) {
      await this.versioned(collection, ids);
      return;
    }
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += WRITE_BATCH) {
      // Only records of this collection: an id that is a record of another one keeps its edges.
      const present = await this.nodeColl
        .find({ _id: { $in: unique.slice(i, i + WRITE_BATCH) }, collection }, { projection: { _id: 1 } })
        .toArray();
      await this.drop(
        collection,
        present.map((n) => n._id),
      );
    }
  }

  private async drop(collection: string, ids: string[], session?: ClientSession): Promise<void> {
    if (ids.length === 0) return;
    const filter = { _id: { $in: ids }, collection };
    if (session) await this.nodeColl.deleteMany(filter, { session });
    else await this.nodeColl.deleteMany(filter);
    await this.edgeColl.bulkWrite(
      [
        { deleteMany: { filter: { up: { $in: ids }, holder: 'up' } } },
        { deleteMany: { filter: { down: { $in: ids }, holder: 'down' } } },
      ],
      session ? { ordered: false, session } : { ordered: false },
    );
  }

  async clear(collection: string): Promise<void> {
    let after: string | undefined;
    for (;;) {
      const page = await this.nodeColl
        .find(after === undefined ? { collection } : { collection, _id: { $gt: after } }, {
          projection: { _id: 1 },
          sort: { _id: 1 },
          limit: WRITE_BATCH,
        })
        .toArray();
      if (page.length === 0) return;
      await this.drop(
        collection,
        page.map((n) => n._id),
      );
      if (page.length < WRITE_BATCH) return;
      after = page[page.length - 1]!._id;
    }
  }

  async *fingerprints(collection: string): AsyncIterable<Array<{ id: string; fingerprint: string }>> {
    let after: string | undefined;
    for (;;) {
      const page = await this.nodeColl
        .find(after === undefined ? { collection } : { collection, _id: { $gt: after } }, {
          projection: { _id: 1, fingerprint: 1 },
          sort: { _id: 1 },
          limit: FINGERPRINT_PAGE,
        })
        .toArray();
      if (page.length === 0) return;
      yield page.map((n) => ({ id: n._id, fingerprint: n.fingerprint ?? '' }));
      if (page.length < FINGERPRINT_PAGE) return;
      after = page[page.length - 1]!._id;
    }
  }

  async nodes(ids: readonly string[]): Promise<NodeInfo[]> {
    return nodesOf(this.reader, ids);
  }

  async step(ids: readonly string[], direction: Direction): Promise<Step[]> {
    return stepOf(this.reader, ids, direction);
  }

  async referrers(
    ids: readonly string[],
    limit: number,
    excluding: readonly string[] = [],
  ): Promise<Referrer[]> {
    return referrersOf(this.reader, ids, limit, excluding);
  }

  async watermark(): Promise<number> {
    return (await this.meta('watermark')) ?? 0;
  }

  /** Never moves back: a slower process finishing an older catch-up leaves a newer mark alone. */
  async setWatermark(seq: number): Promise<void> {
    await this.setMeta('watermark', seq, '$max');
  }

  async close(): Promise<void> {
    // The store owns the client.
  }
}
