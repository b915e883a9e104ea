/**
 * What a page read of the embedded store asks for, and the names of the ways it can be read: the
 * vocabulary the page strategies (page-strategies.ts, sort-keys.ts, sorted-index-walk.ts,
 * id-order-scans.ts) and the store's counters share, kept below all of them.
 */
import type { BodyTestSql, Filter, Sort } from '../port.ts';

/** The ways a scan in id order finds its candidates. */
export type IdOrderStrategy = 'id-walk' | 'candidate-ids' | 'attribute-index';

/**
 * The ways a page is read. In id order: walking every record ('id-walk'), the caller's candidate
 * ids ('candidate-ids'), candidates off the attribute index ('attribute-index'). Sorted otherwise:
 * a walk of the sort key's index ('sorted-index-walk'), keys read by SQLite's JSON functions
 * ('sort-keys'), or every match parsed and sorted ('sort-in-memory').
 */
export type PageStrategy = IdOrderStrategy | 'sorted-index-walk' | 'sort-keys' | 'sort-in-memory';

/** A page of matches in a sort order other than plain id order. */
export interface SortedPageQuery {
  collection: string;
  filter: Filter;
  sort: Sort;
  skip: number;
  limit: number | undefined;
  /** Restrict to these ids (from the search index). */
  candidateIds?: Iterable<string>;
  /** Keyset paging on id (only the in-memory sort honours it). */
  afterId?: string;
  /**
   * Keyset paging in sort order: the sort keys (the id tie-breaker last) of the record before the
   * page, `skip` records in. The sorted index walk starts there; the other strategies skip.
   */
  after?: unknown[];
  /** The planner's test of the stored text, for strategies that read bodies to check the filter. */
  bodyTest?: BodyTestSql;
  /**
   * The page's records may be RecordText (FindOptions.asText): the strategies that read only the
   * page's bodies hand out those they did not parse as read.
   */
  asText?: boolean;
}
