/**
 * Reads across one or several collections through the planner: the planned-process endpoints
 * span five collections and must page, sort and count across them as if they were one.
 */
import { Aggregator } from 'mingo';
import type { QueryPlanner } from '../query/planner/planner.ts';
import { sortKeyOf } from '../store/ordering.ts';
import type { Doc, Filter, Sort } from '../store/port.ts';
import { compileProjection } from '../store/projection.ts';
import { parsedRecord, type RecordText } from '../json-text.ts';

/** A record found by id: parsed, or as its JSON text (`JSON.stringify` of the record). */
export type FoundRecord = { collection: string } & ({ doc: Doc } | { text: string });

export interface ReadPage {
  sort?: Sort;
  projection?: string[];
  skip?: number;
  limit?: number;
  afterId?: string;
  /** With a sort: the keys `SortedPage.lastKeys` gave for the record at `skip - 1` (see FindOptions.after). */
  after?: unknown[];
}

/** A sorted page with the sort keys of its records, from which the next page can start. */
export interface SortedPage<R = Doc> {
  docs: R[];
  /**
   * The sort keys with the id tie-breaker of the record at an index of `docs` (one collection
   * only), or null when a key is not a plain null, string or number (the next page then skips to
   * its place). Taken when asked: a record that came as its stored text is parsed for them.
   */
  keyAt?: (index: number) => unknown[] | null;
}

const plainKey = (v: unknown) =>
  v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

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
      return this.planner.find(collections[0]!, filter, {
        ...page,
        sort,
        after: sort ? page.after : undefined,
      });
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

  /**
   * As `find`, for records answered whole and read no further than their `id`: a page of one
   * collection without a projection may come as the records' stored texts (FindOptions.asText),
   * which are answered without being parsed or serialised again.
   */
  async findWhole(collections: string[], filter: Filter, page: ReadPage): Promise<Array<Doc | RecordText>> {
    if (collections.length !== 1 || page.projection !== undefined)
      return this.find(collections, filter, page);
    const sort = withIdTieBreaker(page.sort);
    // The store hands out RecordText for `asText` (typed as records for its scans' drivers).
    return this.planner.find(collections[0]!, filter, {
      ...page,
      sort,
      after: sort ? page.after : undefined,
      asText: true,
    });
  }

  /**
   * Like `find`, with the sort keys of each record when one collection is read in a sort order,
   * so that the next page can start after the last record instead of skipping to it (`after`).
   */
  async findSorted(collections: string[], filter: Filter, page: ReadPage): Promise<SortedPage>;
  /** `whole`: the records are answered whole, and a page in id order may be stored texts (findWhole). */
  async findSorted(
    collections: string[],
    filter: Filter,
    page: ReadPage,
    whole: true,
  ): Promise<SortedPage<Doc | RecordText>>;
  async findSorted(
    collections: string[],
    filter: Filter,
    page: ReadPage,
    whole = false,
  ): Promise<SortedPage<Doc | RecordText>> {
    const sort = withIdTieBreaker(page.sort);
    if (!sort || collections.length !== 1) {
      const { after: _after, ...rest } = page;
      return {
        docs: await (whole
          ? this.findWhole(collections, filter, rest)
          : this.find(collections, filter, rest)),
      };
    }
    const keysOf = (doc: Doc) => {
      const k = sort.map(([p, d]) => sortKeyOf(doc, p, d));
      return k.every(plainKey) ? k : null;
    };
    if (whole && page.projection === undefined) {
      // Whole records may come as their stored texts; only those whose keys are asked for are parsed.
      const docs = await this.findWhole(collections, filter, page);
      return { docs, keyAt: (i) => keysOf(parsedRecord(docs[i]!)) };
    }
    // The sort paths are read with the projection, and dropped after the keys are taken.
    const { projection } = page;
    const widened = projection ? [...new Set([...projection, ...sort.map(([p]) => p)])] : undefined;
    const found = await this.planner.find(collections[0]!, filter, { ...page, sort, projection: widened });
    const keys = found.map(keysOf);
    return { docs: projection ? found.map(compileProjection(projection)) : found, keyAt: (i) => keys[i]! };
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

  /**
   * As `getById` without a projection, the record as JSON text when the store gives it (exactly
   * `JSON.stringify` of the record: DocumentStore.getTextById), read and answered without parsing.
   */
  async getRecordById(collections: string[], id: string): Promise<FoundRecord | null> {
    const store = this.planner.store;
    if (!store.getTextById) return this.getById(collections, id);
    for (const collection of collections) {
      const text = await store.getTextById(collection, id);
      if (text !== null) return { collection, text };
    }
    return null;
  }
}
