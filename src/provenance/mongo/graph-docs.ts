/**
 * The documents of the MongoDB edge index (see edge-index.ts): its collections, a node per
 * record, an edge per (up, down, slot, holder), and the index's own marks.
 */
import type { Edge } from '../edges.ts';

export const NODES_COLLECTION = '_graph_nodes';
export const EDGES_COLLECTION = '_graph_edges';
export const META_COLLECTION = '_graph_meta';

export interface NodeDoc {
  _id: string;
  /** The record's collection; absent or null: not a record. */
  collection?: string | null;
  type?: string | null;
  fingerprint?: string | null;
  /** The change-log sequence number of the version whose edges are written (null: not known). */
  seq?: number | null;
}

export interface EdgeDoc extends Edge {
  _id: string;
}

export interface MetaDoc {
  _id: string;
  value: number;
}

/** The deterministic `_id` of an edge, so writing it again is idempotent. */
export function edgeId(edge: Edge): string {
  return `${edge.up}\u0000${edge.down}\u0000${edge.slot}\u0000${edge.holder}`;
}
