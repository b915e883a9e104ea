/**
 * Many rows inserted through multi-row `VALUES` statements with bound parameters: ROWS_PER_INSERT
 * rows a statement, the rest in halving sizes (so at most ten statements are kept per shape).
 * Quicker than one `json_each` over the rows' JSON, whose text is built, parsed and read back with
 * `->>` per row: 603,000 search map rows took 30% less. The 1,100,089 attribute entries of a
 * 10^5-biosample submission took 1.1 s instead of 2.4 s into an empty `attr_index`, and 4.7-5.1 s
 * instead of 6.4-6.5 s into one holding as many (in key order against `json_each` slices sorted by
 * SQLite).
 */
import type { StatementCache } from './statement-cache.ts';

/** Rows per statement; SQLite allows 32,766 parameters, so up to 64 a row. */
const ROWS_PER_INSERT = 512;

/**
 * Inserts `count` rows of `width` parameters each through statements beginning with `head` (up
 * to `VALUES`); `fill(params, at, row)` writes row number `row`'s parameters from `params[at]` on.
 * Rows are inserted in their numbering's order.
 */
export function insertRows(
  statements: StatementCache,
  head: string,
  width: number,
  count: number,
  fill: (params: unknown[], at: number, row: number) => void,
): void {
  const tuple = `(${'?, '.repeat(width - 1)}?)`;
  let row = 0;
  for (let size = ROWS_PER_INSERT; size >= 1 && row < count; size >>= 1) {
    if (count - row < size) continue;
    const insert = statements.get(`${head} ${`${tuple}, `.repeat(size - 1)}${tuple}`);
    const params: unknown[] = new Array(size * width);
    for (; count - row >= size; row += size) {
      for (let k = 0; k < size; k++) fill(params, k * width, row + k);
      insert.run(params);
    }
  }
}
