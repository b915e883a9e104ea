/**
 * The edge index: the provenance graph's references between records, kept in step with the
 * records like the search index (`MaintainedIndex`), so walks over it are never stale.
 *
 * Every record is a node (its collection, `type` and content fingerprint); every directed
 * reference (`src/schema/reference-slots.ts`) is an edge from the upstream record to the
 * downstream one, remembered with the slot and which end holds the reference. A reference to an
 * id that is not (yet) a record is kept: the edge takes part in walks as soon as that record
 * arrives. Walks only pass through records that exist.
 *
 * Adapters: embedded SQLite (`sqlite/`, tables in the store file, written in the store's write
 * transaction) and MongoDB (`mongo/`, collections beside the records, caught up from the
 * change log).
 */
import type { MaintainedIndex } from '../../search/port.ts';
import type { Direction } from '../schema/reference-slots.ts';

export type { Direction };

/** A record met by a walk step: the id it was reached from and what it is. */
export interface Step {
  from: string;
  to: string;
  /** The reference slot of the edge (`has_input`, `has_output`, ...). */
  slot: string;
  /** The record's `type` ('' when it has none). */
  type: string;
  collection: string;
}

export interface NodeInfo {
  id: string;
  type: string;
  collection: string;
}

/** A record holding a reference to an id (`EdgeIndex.referrers`). */
export interface Referrer {
  /** The record holding the reference, its collection and `type` ('' when it has none). */
  id: string;
  collection: string;
  type: string;
  /** The slot holding it (`associated_studies`, `has_output`, ...). */
  slot: string;
  /** The referenced id. */
  target: string;
}

export interface EdgeIndex extends MaintainedIndex {
  readonly engine: 'sqlite' | 'mongo';
  /** The records among `ids` that exist, with their type and collection (order not kept). */
  nodes(ids: readonly string[]): Promise<NodeInfo[]>;
  /**
   * One step along `direction` from each of `ids` (at most `STEP_BATCH` of them): every existing
   * record linked to one of them, once per (from, to, slot).
   */
  step(ids: readonly string[], direction: Direction): Promise<Step[]>;
  /**
   * The records that hold a reference to one of `ids` (at most `STEP_BATCH` of them), whichever
   * direction the slot has, except the records in `excluding`: at most `limit` of them, one per
   * (record, slot, referenced id). Referential integrity asks it before a delete or a change of id.
   */
  referrers(ids: readonly string[], limit: number, excluding?: readonly string[]): Promise<Referrer[]>;
}

/** Most ids one `step` or `nodes` call takes: walkers batch their frontier by it. */
export const STEP_BATCH = 1000;
