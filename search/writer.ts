/**
 * Writes of metadata records: the source of truth first, then the indexes derived from it (the
 * search index, the provenance edge index), so updates and deletes (from `/queries:run` or the
 * loader) keep search results and lineage exact. With the embedded indexes the store's write hook
 * already wrote them in the same transaction and the second step is a no-op.
 */
import type { DocumentStore, Doc, Filter, RecordIds, WriteResult } from '../src/store/port.ts';
import type { MaintainedIndex } from './port.ts';
import { catchUp } from './maintenance.ts';
import { assertRegexLengths } from './filter-predicates.ts';
import { keyedRecord } from '../src/store/record-keys.ts';

export class RecordWriter {
  private readonly indexes: MaintainedIndex[];

  constructor(
    private readonly store: DocumentStore,
    indexes: MaintainedIndex | MaintainedIndex[],
  ) {
    this.indexes = Array.isArray(indexes) ? indexes : [indexes];
  }

  /** Upserts by id; records of a collection without ids are kept under a store key. */
  async upsert(collection: string, docs: Array<Doc | Record<string, unknown>>): Promise<WriteResult> {
    return this.upsertAll([{ collection, docs }]);
  }

  /**
   * Upserts into several collections all or nothing (one store transaction, which on the embedded
   * store holds the co-located indexes' writes too), then brings the other indexes up to date.
   */
  async upsertAll(
    writes: Array<{ collection: string; docs: Array<Doc | Record<string, unknown>> }>,
  ): Promise<WriteResult> {
    const keyed = writes.map((w) => ({
      collection: w.collection,
      docs: w.docs.map((doc) => keyedRecord(w.collection, doc) as Doc),
    }));
    const result = await this.store.upsertAtomically(keyed);
    await this.afterWrite(async (index) => {
      for (const { collection, docs } of keyed)
        if (docs.length > 0 && (index.covers?.(collection) ?? true)) await index.index(collection, docs);
    });
    return result;
  }

  /** Deletes the records matching `filter` (at most `limit`); returns their ids. */
  async delete(collection: string, filter: Filter, limit?: number): Promise<string[]> {
    assertRegexLengths(filter);
    const ids = await this.store.deleteMany(collection, filter, limit);
    if (ids.length > 0)
      await this.afterWrite(async (index) => {
        if (index.covers?.(collection) ?? true) await index.remove(collection, ids);
      });
    return ids;
  }

  /**
   * Deletes records by id from several collections all or nothing (one store transaction, which on
   * the embedded store holds the co-located indexes' writes too), then brings the other indexes
   * up to date. Answers the ids deleted per collection.
   */
  async deleteAtomically(deletes: RecordIds[]): Promise<RecordIds[]> {
    const deleted = await this.store.deleteAtomically(deletes);
    if (deleted.some((d) => d.ids.length > 0))
      await this.afterWrite(async (index) => {
        for (const { collection, ids } of deleted)
          if (ids.length > 0 && (index.covers?.(collection) ?? true)) await index.remove(collection, ids);
      });
    return deleted;
  }

  private async afterWrite(write: (index: MaintainedIndex) => Promise<void>): Promise<void> {
    for (const index of this.indexes) {
      if (index.synchronous) continue;
      // Index what this call wrote, then everything still pending (other processes' writes too),
      // which advances the watermark. If this fails the writes stay fresh candidates until a catch-up.
      await write(index);
      await catchUp(this.store, index);
    }
  }
}
