/** Bounds on untrusted filters, so one request cannot exhaust the server. */
export const FILTER_LIMITS = {
  /** Deepest nesting of objects/arrays in a filter. */
  maxDepth: 16,
  /** Longest `$regex` pattern, in characters. */
  maxRegexLength: 1000,
  /** Most values in one `$in`, `$nin` or `$all`. */
  maxListSize: 10_000,
  /**
   * Most clauses of one `$and`, `$or` or `$nor`: each is tested against every candidate record, and
   * a `$or` of 5,000 clauses held the event loop 250 ms over sixty records.
   */
  maxClauses: 1_000,
};
