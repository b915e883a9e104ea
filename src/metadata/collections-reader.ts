/**
 * Reads across one or several collections through the planner: the planned-process endpoints
 * span five collections and must page, sort and count across them as if they were one.
 */
import { Aggregator } from 'mingo';
import type { QueryPlanner } from '../query/planner/planner.ts';
import type { Doc, Filter, Sort } from '../store/port.ts';
import { compileProjection } from '../store/projection.ts';

export interface ReadPage {
  sort?: Sort;
  projection?: string[];
  skip?: number;
  limit?: number;
  afterId?: string;
}

/** Sort keys with `id` as the final tie-breaker, so pages are stable. */
export function withIdTieBreaker(sort: Sort | undefined): Sort | undefined {
  if (!sort || sort.length === 0) return undefined;
  return sort.some(([field]) => field === 'id') ? sort : [...sort, ['id', 1]];
}

export class CollectionsReader {
  constructor(private readonly planner: QueryPlanner) {}

  async find(collections: string[], filter: Filter, page: ReadPage): Promise<Doc[]> {
    const sort = withIdTieBreaker(page.sort);
    if (collections.length === 1) {
      return this.planner.find(collections[0]!, filter, { ...page, sort });
    }
    // Each collection yields its first skip+limit records in the requested order; merging them
    // and cutting the window gives the same page as one collection holding them all.
    const window = page.limit === undefined ? undefined : (page.skip ?? 0) + page.limit;
    const perCollection = await Promise.all(
      collections.map((c) =>
        this.planner.find(c, filter, {
          sort,
          afterId: page.afterId,
          limit: window,
          projection: sort ? undefined : page.projection,
        }),
      ),
    );
    let merged = perCollection.flat();
    merged = sort
      ? (new Aggregator([{ $sort: Object.fromEntries(sort) }]).run(merged) as Doc[])
      : merged.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const start = page.skip ?? 0;
    merged = merged.slice(start, window);
    return sort && page.projection ? merged.map(compileProjection(page.projection)) : merged;
  }

  async count(collections: string[], filter: Filter): Promise<number> {
    const counts = await Promise.all(collections.map((c) => this.planner.count(c, filter)));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** How the planner would read (and, with `executionStats`, reads) a find or count of one collection. */
  explain(
    collection: string,
    filter: Filter,
    page: ReadPage,
    purpose: 'page' | 'count',
    verbosity: 'queryPlanner' | 'executionStats',
    databaseName: string,
  ): Promise<Record<string, unknown>> {
    return this.planner.explain(
      collection,
      filter,
      { ...page, sort: withIdTieBreaker(page.sort) },
      purpose,
      verbosity,
      databaseName,
    );
  }

  /** The first of the collections holding a record with this id. */
  async getById(
    collections: string[],
    id: string,
    projection?: string[],
  ): Promise<{ collection: string; doc: Doc } | null> {
    for (const collection of collections) {
      const doc = await this.planner.store.getById(collection, id, projection);
      if (doc) return { collection, doc };
    }
    return null;
  }
}
