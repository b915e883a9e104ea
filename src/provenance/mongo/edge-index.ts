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
 * indexed queries: the edges from the frontier (covered by an edge index) and the far ends that
 * are records.
 *
 * Writes are not one transaction with the records (the index catches up), and their order keeps
 * what concurrent walks see sensible: a record's new edges are written before its stale ones
 * are deleted (an edge it keeps never disappears), and its node last (a record becomes reachable
 * with its edges in place); a deleted record's node goes first. Several service processes may
 * catch up at once: every write is idempotent and each writes the record's current version.
 */
import type { AnyBulkWriteOperation, Collection, Db, Filter } from 'mongodb';
import type { Doc } from '../../store/port.ts';
import { fingerprintOf } from '../../../search/indexed-values.ts';
import { edgesOf, inGraph, typeOf, type Edge } from '../edges.ts';
import type { Direction, EdgeIndex, NodeInfo, Referrer, Step } from '../port.ts';

export const NODES_COLLECTION = '_graph_nodes';
export const EDGES_COLLECTION = '_graph_edges';
export const META_COLLECTION = '_graph_meta';

interface NodeDoc {
  _id: string;
  /** The record's collection; absent or null: not a record. */
  collection?: string | null;
  type?: string | null;
  fingerprint?: string | null;
}

interface EdgeDoc extends Edge {
  _id: string;
}

interface MetaDoc {
  _id: string;
  value: number;
}

/** Records per round of bulk writes (and ids per lookup of which of them are nodes). */
const WRITE_BATCH = 1000;
const FINGERPRINT_PAGE = 2000;
/** Ids per `$in` lookup of the far ends of a step: a walk step from a study may reach 10^5. */
const LOOKUP_BATCH = 20_000;

/** The deterministic `_id` of an edge, so writing it again is idempotent. */
export function edgeId(edge: Edge): string {
  return `${edge.up}\u0000${edge.down}\u0000${edge.slot}\u0000${edge.holder}`;
}

/** The edges `id` holds at its `holder` end, except those in `keep`. */
function heldBy(id: string, holder: Edge['holder'], keep: string[]): Filter<EdgeDoc> {
  const filter: Filter<EdgeDoc> = holder === 'up' ? { up: id, holder } : { down: id, holder };
  if (keep.length > 0) filter._id = { $nin: keep };
  return filter;
}

export class MongoEdgeIndex implements EdgeIndex {
  readonly engine = 'mongo' as const;
  readonly synchronous = false;
  private readonly nodeColl: Collection<NodeDoc>;
  private readonly edgeColl: Collection<EdgeDoc>;
  private readonly metaColl: Collection<MetaDoc>;

  constructor(db: Db) {
    this.nodeColl = db.collection<NodeDoc>(NODES_COLLECTION);
    this.edgeColl = db.collection<EdgeDoc>(EDGES_COLLECTION);
    this.metaColl = db.collection<MetaDoc>(META_COLLECTION);
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

  private async setMeta(key: string, value: number): Promise<void> {
    await this.metaColl.updateOne({ _id: key }, { $set: { value } }, { upsert: true });
  }

  async index(collection: string, docs: Doc[]): Promise<void> {
    if (!inGraph(collection) || docs.length === 0) return;
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

  private async write(collection: string, docs: Doc[]): Promise<void> {
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
      nodes.push({
        replaceOne: {
          filter: { _id: doc.id },
          replacement: { collection, type: typeOf(doc), fingerprint: fingerprintOf(doc) },
          upsert: true,
        },
      });
    }
    if (upserts.length > 0) await this.edgeColl.bulkWrite(upserts, { ordered: false });
    await this.edgeColl.bulkWrite(stale, { ordered: false });
    await this.nodeColl.bulkWrite(nodes, { ordered: false });
  }

  /** Removes deleted records: their nodes and the edges they hold go, references to them stay. */
  async remove(collection: string, ids: string[]): Promise<void> {
    if (!inGraph(collection) || ids.length === 0) return;
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

  private async drop(collection: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.nodeColl.deleteMany({ _id: { $in: ids }, collection });
    await this.edgeColl.bulkWrite(
      [
        { deleteMany: { filter: { up: { $in: ids }, holder: 'up' } } },
        { deleteMany: { filter: { down: { $in: ids }, holder: 'down' } } },
      ],
      { ordered: false },
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
    const unique = [...new Set(ids)];
    const out: NodeInfo[] = [];
    for (let i = 0; i < unique.length; i += LOOKUP_BATCH) {
      const found = await this.nodeColl
        .find(
          { _id: { $in: unique.slice(i, i + LOOKUP_BATCH) }, collection: { $ne: null } },
          { projection: { _id: 1, type: 1, collection: 1 } },
        )
        .toArray();
      for (const n of found) out.push({ id: n._id, type: n.type ?? '', collection: n.collection! });
    }
    return out;
  }

  async step(ids: readonly string[], direction: Direction): Promise<Step[]> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    const [near, far] = direction === 'downstream' ? (['up', 'down'] as const) : (['down', 'up'] as const);
    const edges = await this.edgeColl
      .find({ [near]: { $in: unique } } as Filter<EdgeDoc>, {
        projection: { _id: 0, up: 1, down: 1, slot: 1 },
      })
      .toArray();
    if (edges.length === 0) return [];
    const records = new Map(
      (await this.nodes([...new Set(edges.map((e) => e[far]))])).map((n) => [n.id, n] as const),
    );
    const seen = new Set<string>();
    const out: Step[] = [];
    for (const e of edges) {
      const to = records.get(e[far]);
      if (!to) continue;
      // The same (from, to, slot) held from both ends is one step.
      const key = `${e[near]}\u0000${to.id}\u0000${e.slot}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ from: e[near], to: to.id, slot: e.slot, type: to.type, collection: to.collection });
    }
    return out;
  }

  async referrers(
    ids: readonly string[],
    limit: number,
    excluding: readonly string[] = [],
  ): Promise<Referrer[]> {
    const unique = [...new Set(ids)];
    if (unique.length === 0 || limit <= 0) return [];
    const others = excluding.length > 0 ? { $nin: [...excluding] } : undefined;
    // An edge's holder is its downstream end for an upstream slot (`holder: 'down'`), its upstream
    // end otherwise: each branch is one range of an edge index.
    const edges = await this.edgeColl
      .find(
        {
          $or: [
            { up: { $in: unique }, holder: 'down', ...(others ? { down: others } : {}) },
            { down: { $in: unique }, holder: 'up', ...(others ? { up: others } : {}) },
          ],
        } as Filter<EdgeDoc>,
        { projection: { _id: 0, up: 1, down: 1, slot: 1, holder: 1 }, limit },
      )
      .toArray();
    if (edges.length === 0) return [];
    const holderOf = (e: Edge) => (e.holder === 'down' ? e.down : e.up);
    const records = new Map(
      (await this.nodes([...new Set(edges.map(holderOf))])).map((n) => [n.id, n] as const),
    );
    const out: Referrer[] = [];
    for (const e of edges) {
      const holder = records.get(holderOf(e));
      if (!holder) continue;
      const target = e.holder === 'down' ? e.up : e.down;
      out.push({ id: holder.id, collection: holder.collection, type: holder.type, slot: e.slot, target });
    }
    return out;
  }

  async watermark(): Promise<number> {
    return (await this.meta('watermark')) ?? 0;
  }

  async setWatermark(seq: number): Promise<void> {
    await this.setMeta('watermark', seq);
  }

  async close(): Promise<void> {
    // The store owns the client.
  }
}
