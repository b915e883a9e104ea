/**
 * Writes of metadata records: the source of truth first, then the search index, so updates and
 * deletes (from `/queries:run` or the loader) keep search results exact. With the embedded index
 * the store's write hook already indexed in the same transaction and the second step is a no-op.
 */
import type { DocumentStore, Doc, Filter, WriteResult } from '../src/store/port.ts';
import type { SearchIndex } from './port.ts';
import { catchUp } from './maintenance.ts';
import { assertRegexLengths } from './filter-predicates.ts';
import { keyedRecord } from '../src/store/record-keys.ts';

export class RecordWriter {
  constructor(
    private readonly store: DocumentStore,
    private readonly index: SearchIndex,
  ) {}

  /** Upserts by id; records of a collection without ids are kept under a store key. */
  async upsert(collection: string, docs: Array<Doc | Record<string, unknown>>): Promise<WriteResult> {
    const keyed = docs.map((doc) => keyedRecord(collection, doc) as Doc);
    const result = await this.store.upsertMany(collection, keyed);
    await this.afterWrite(() => this.index.index(collection, keyed));
    return result;
  }

  /** Deletes the records matching `filter` (at most `limit`); returns their ids. */
  async delete(collection: string, filter: Filter, limit?: number): Promise<string[]> {
    assertRegexLengths(filter);
    const ids = await this.store.deleteMany(collection, filter, limit);
    if (ids.length > 0) await this.afterWrite(() => this.index.remove(collection, ids));
    return ids;
  }

  private async afterWrite(write: () => Promise<void>): Promise<void> {
    if (this.index.synchronous) return;
    // Index what this call wrote, then everything still pending (other processes' writes too),
    // which advances the watermark. If this fails the writes stay fresh candidates until a catch-up.
    await write();
    await catchUp(this.store, this.index);
  }
}
