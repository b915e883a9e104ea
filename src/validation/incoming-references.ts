/**
 * References other records hold to records that are about to be gone (deleted, or moved to
 * another id): the referential-integrity check a delete or a change of id needs before it is
 * written, as the original service refuses writes that leave references dangling.
 *
 * Records with ids are found through the provenance edge index, which has every reference slot
 * of every record in both directions (on MongoDB it is first caught up with the change log, so
 * writes of other processes count). Records of collections without ids are not in the graph; the
 * few slots they have (`was_generated_by` of functional annotations) are asked of the store.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { DocumentStore } from '../store/port.ts';
import type { EdgeIndex } from '../provenance/port.ts';
import { STEP_BATCH } from '../provenance/port.ts';
import { catchUp } from '../../search/maintenance.ts';
import { UNIDENTIFIED_COLLECTIONS } from '../schema/nmdc.ts';
import { referenceSlotsOf } from '../schema/reference-slots.ts';
import { collectionsFor } from './database-check.ts';
import { rangeClassesOf } from './json-schema.ts';

/** A reference that a write would leave pointing at nothing. */
export interface BrokenReference {
  /** The record holding the reference (null: a record of a collection without ids). */
  id: string | null;
  collection: string;
  slot: string;
  /** The id it names, and the collection that record is in now. */
  target: string;
  target_collection: string;
}

/** Referrers read from the edge index per query, at least. */
const PAGE = 1000;

const keyOf = (collection: string, id: string) => `${collection}\u0000${id}`;

/** By the holder's collection, then its id (records without ids last), then the slot. */
function byHolder(a: BrokenReference, b: BrokenReference): number {
  if (a.collection !== b.collection) return a.collection < b.collection ? -1 : 1;
  if (a.id !== b.id) {
    if (a.id === null) return 1;
    if (b.id === null) return -1;
    return a.id < b.id ? -1 : 1;
  }
  return a.slot < b.slot ? -1 : a.slot > b.slot ? 1 : 0;
}

export class IncomingReferences {
  constructor(
    private readonly store: DocumentStore,
    private readonly edges: EdgeIndex,
  ) {}

  /**
   * References held to the records `ids` of `collection` that will be gone, by records other than
   * those in `changing` (keys `collection \0 id`: records deleted or rewritten by the same write,
   * whose new versions are checked on their own): at most `limit`, ordered as the original lists
   * them (by the holder's collection, then its id; records without ids last).
   */
  async heldTo(
    collection: string,
    ids: readonly string[],
    changing: ReadonlySet<string>,
    limit: number,
  ): Promise<BrokenReference[]> {
    if (ids.length === 0 || limit <= 0 || UNIDENTIFIED_COLLECTIONS.has(collection)) return [];
    if (!this.edges.synchronous) await catchUp(this.store, this.edges);
    const found: BrokenReference[] = [];
    for (let i = 0; i < ids.length && found.length < limit; i += STEP_BATCH) {
      // Each batch is a synchronous query on the embedded store: other requests get a turn between.
      if (i > 0) await nextTurn();
      const batch = ids.slice(i, i + STEP_BATCH);
      const excluded = new Set<string>();
      const page = Math.max(PAGE, limit);
      for (;;) {
        const rows = await this.edges.referrers(batch, page, [...excluded]);
        let progress = false;
        for (const r of rows) {
          if (changing.has(keyOf(r.collection, r.id))) {
            if (!excluded.has(r.id)) progress = true;
            excluded.add(r.id);
          } else if (found.length < limit)
            found.push({
              id: r.id,
              collection: r.collection,
              slot: r.slot,
              target: r.target,
              target_collection: collection,
            });
        }
        // A full page may hide more referrers behind those the write itself changes.
        if (rows.length < page || found.length >= limit || !progress) break;
      }
    }
    if (found.length < limit)
      found.push(...(await this.heldByUnidentified(collection, ids, limit - found.length)));
    return found.sort(byHolder);
  }

  /** References held by records of collections without ids, whose slots admit `collection`. */
  private async heldByUnidentified(collection: string, ids: readonly string[], limit: number) {
    const found: BrokenReference[] = [];
    const wanted = new Set(ids);
    for (const holder of UNIDENTIFIED_COLLECTIONS) {
      for (const cls of rangeClassesOf(holder)) {
        for (const { slot, range } of referenceSlotsOf(`nmdc:${cls}`)) {
          if (!collectionsFor(range).includes(collection)) continue;
          for (let i = 0; i < ids.length && found.length < limit; i += STEP_BATCH) {
            const docs = await this.store.find(
              holder,
              { [slot]: { $in: ids.slice(i, i + STEP_BATCH) } },
              { projection: [slot], limit: limit - found.length },
            );
            for (const doc of docs) {
              const value = doc[slot];
              const target = (Array.isArray(value) ? value : [value]).find(
                (v): v is string => typeof v === 'string' && wanted.has(v),
              );
              if (target !== undefined)
                found.push({ id: null, collection: holder, slot, target, target_collection: collection });
            }
          }
        }
      }
    }
    return found;
  }
}
