/**
 * The edges one record makes: each directed reference as (upstream id, downstream id), with the
 * slot and which end holds the reference (`holder`), so rewriting or deleting the record can
 * replace exactly its own edges.
 */
import { referencesOf } from '../schema/reference-slots.ts';
import { UNIDENTIFIED_COLLECTIONS, isCollectionName } from '../schema/nmdc.ts';

export interface Edge {
  up: string;
  down: string;
  slot: string;
  /** 'down': the downstream record holds the reference (an upstream slot such as `has_input`). */
  holder: 'up' | 'down';
}

/**
 * The graph holds the schema's records: the service's own records (accounts, jobs, objects, runs)
 * are not nodes, and records of collections without ids are nodes of nothing.
 */
export function inGraph(collection: string): boolean {
  return isCollectionName(collection) && !UNIDENTIFIED_COLLECTIONS.has(collection);
}

export function edgesOf(doc: { id: string } & Record<string, unknown>): Edge[] {
  const out: Edge[] = [];
  for (const ref of referencesOf(doc)) {
    if (ref.id === doc.id) continue;
    if (ref.direction === 'upstream') out.push({ up: ref.id, down: doc.id, slot: ref.slot, holder: 'down' });
    else out.push({ up: doc.id, down: ref.id, slot: ref.slot, holder: 'up' });
  }
  return out;
}

export function typeOf(doc: Record<string, unknown>): string {
  return typeof doc.type === 'string' ? doc.type : '';
}
