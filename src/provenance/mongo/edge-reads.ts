/**
 * The reads of the MongoDB edge index that walks make (see edge-index.ts): the nodes that are
 * records, one breadth-first step from a frontier, and the records referring to given ids.
 */
import type { Collection, Filter } from 'mongodb';
import { engine } from '../../store/mongo/engine-errors.ts';
import type { Edge } from '../edges.ts';
import type { Direction, NodeInfo, Referrer, Step } from '../port.ts';
import type { EdgeDoc, NodeDoc } from './graph-docs.ts';

/** Ids per `$in` lookup of the far ends of a step: a walk step from a study may reach 10^5. */
const LOOKUP_BATCH = 20_000;

/** What the reads use of the index. */
export interface GraphReader {
  nodeColl: Collection<NodeDoc>;
  edgeColl: Collection<EdgeDoc>;
  /** Time limit of the walks' reads (`maxTimeMS`). */
  maxTimeMS: number;
}

/** The nodes of these ids that are records. */
export async function nodesOf(g: GraphReader, ids: readonly string[]): Promise<NodeInfo[]> {
  const unique = [...new Set(ids)];
  const out: NodeInfo[] = [];
  for (let i = 0; i < unique.length; i += LOOKUP_BATCH) {
    const batch = unique.slice(i, i + LOOKUP_BATCH);
    const found = await engine(() =>
      g.nodeColl
        .find(
          { _id: { $in: batch }, collection: { $ne: null } },
          { projection: { _id: 1, type: 1, collection: 1 }, maxTimeMS: g.maxTimeMS },
        )
        .toArray(),
    );
    for (const n of found) out.push({ id: n._id, type: n.type ?? '', collection: n.collection! });
  }
  return out;
}

/** One breadth-first step from the frontier `ids`: each (from, to, slot) once, `to` a record. */
export async function stepOf(g: GraphReader, ids: readonly string[], direction: Direction): Promise<Step[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const [near, far] = direction === 'downstream' ? (['up', 'down'] as const) : (['down', 'up'] as const);
  const edges = await engine(() =>
    g.edgeColl
      .find({ [near]: { $in: unique } } as Filter<EdgeDoc>, {
        projection: { _id: 0, up: 1, down: 1, slot: 1 },
        maxTimeMS: g.maxTimeMS,
      })
      .toArray(),
  );
  if (edges.length === 0) return [];
  const records = new Map(
    (await nodesOf(g, [...new Set(edges.map((e) => e[far]))])).map((n) => [n.id, n] as const),
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

/** Records holding an edge to one of `ids` (other than those `excluding`), at most `limit` edges read. */
export async function referrersOf(
  g: GraphReader,
  ids: readonly string[],
  limit: number,
  excluding: readonly string[] = [],
): Promise<Referrer[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0 || limit <= 0) return [];
  const others = excluding.length > 0 ? { $nin: [...excluding] } : undefined;
  // An edge's holder is its downstream end for an upstream slot (`holder: 'down'`), its upstream
  // end otherwise: each branch is one range of an edge index.
  const edges = await engine(() =>
    g.edgeColl
      .find(
        {
          $or: [
            { up: { $in: unique }, holder: 'down', ...(others ? { down: others } : {}) },
            { down: { $in: unique }, holder: 'up', ...(others ? { up: others } : {}) },
          ],
        } as Filter<EdgeDoc>,
        { projection: { _id: 0, up: 1, down: 1, slot: 1, holder: 1 }, limit, maxTimeMS: g.maxTimeMS },
      )
      .toArray(),
  );
  if (edges.length === 0) return [];
  const holderOf = (e: Edge) => (e.holder === 'down' ? e.down : e.up);
  const records = new Map(
    (await nodesOf(g, [...new Set(edges.map(holderOf))])).map((n) => [n.id, n] as const),
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
