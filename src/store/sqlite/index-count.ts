/**
 * Exact counts of filters the attribute index decides (`IndexPlan.exact`), read off the index
 * alone and in pages that take turns with other requests.
 *
 * One condition drives: its index rows are read in the index's order, (value, id), and every other
 * condition is checked on each row by a primary-key probe (`conditionSql`). A range can only
 * drive (checking it per record would scan the range), so a plan with one range is counted with
 * the range driving, and a plan with two cannot be counted here. Counted the other way,
 * `ecosystem_category = Terrestrial` with `depth.has_numeric_value > 0` had the depth checked on
 * 30,000 parsed records (536 ms at 10^5 biosamples, about 5 s at 10^6); driven by the depth's
 * index rows with a probe each, it takes about 90 ms and 0.7 s, in turns of about 10 ms.
 *
 * Rows are counted once per record: a record holds at most one entry at a path unless it is
 * irregular there (`indexRecord`), so the rows of records irregular at the driver's path are
 * counted by id, the others by row.
 */
import { type Condition, type IndexPlan, type IndexValue, valueSql } from './attribute-index.ts';
import { compareSqliteValues } from './index-walk-rows.ts';
import { PacedSize, Turns } from '../../turns.ts';
import { conditionsSql } from './attribute-plans.ts';
import type { SqlParam } from './statement-cache.ts';
import type { StoreContext } from './store-context.ts';

/**
 * Time one page should take, ms (`PacedSize`, from FIRST_PAGE_ROWS rows, between MIN_PAGE_ROWS and
 * MAX_PAGE_ROWS). On a cold file a probe reads a page of the file (tens of microseconds, not one),
 * and fixed pages of 20,000 rows held the event loop for most of a second.
 */
const PAGE_MS = 4;
const FIRST_PAGE_ROWS = 1000;
const MIN_PAGE_ROWS = 100;
const MAX_PAGE_ROWS = 50_000;
/**
 * Index probes that cost about as much as parsing one record: a probe is about 0.6 µs, parsing a
 * generated biosample (2 KB) about 13 µs; smaller records parse faster, hence the margin.
 */
const PROBES_PER_RECORD = 16;
/**
 * Index rows of an equality counted at most when weighing a range against it. An equality with
 * more drives bodies worth a range of about as many rows as a path holds in 10^6 records: the range
 * drives without its rows being counted.
 */
const EQUALITY_ROWS_COUNTED = 50_000;

/** A slice of the driver's rows (SQL on `x`) with its parameters. */
interface Page {
  sql: string;
  params: SqlParam[];
}

/** Options of `countOnIndex`; smaller figures in tests. */
export interface IndexCountOptions {
  /** Rows of every page (by default each page's are scaled to take PAGE_MS). */
  pageRows?: number;
}

/**
 * The exact count of an exact plan's records, read off the index in turns; undefined when the plan
 * cannot be counted this way (two ranges, or conditions on `id` alone). The edges of pages are
 * values and ids read from the file and bound again, so they compare exactly, whatever they hold.
 */
export async function countOnIndex(
  ctx: StoreContext,
  collection: string,
  plan: IndexPlan,
  options: IndexCountOptions = {},
): Promise<number | undefined> {
  const driver = driverOf(ctx, collection, plan);
  if (!driver) return undefined;
  const keyOf = ctx.keys.of(collection);
  const key = keyOf(driver.path);
  if (!worthDriving(ctx, collection, plan, driver, key)) return undefined;
  // Weighing the range took a while: the pages start in a turn of their own.
  const turns = new Turns();
  await turns.give();
  const restParams: SqlParam[] = [];
  const rest = conditionsSql(
    'x',
    plan.conditions.filter((c) => c !== driver),
    restParams,
    keyOf,
  );
  if (!rest.complete) return undefined;
  const { statements } = ctx;
  const hasIrregular =
    statements.get('SELECT 1 FROM attr_irregular WHERE key = ? LIMIT 1').pluck().get(key) !== undefined;
  const irregular = 'EXISTS (SELECT 1 FROM attr_irregular i WHERE i.key = x.key AND i.id = x.id)';
  const irregularIds = new Set<string>();
  let n = 0;
  const size = new PacedSize(options.pageRows ?? FIRST_PAGE_ROWS, PAGE_MS, MIN_PAGE_ROWS, MAX_PAGE_ROWS);
  const pages = driverPages(ctx, key, driver, size);
  for (;;) {
    if (turns.due()) await turns.give();
    const pageStart = performance.now();
    const next = pages.next();
    if (next.done) return n + irregularIds.size;
    const page = next.value;
    const where = `FROM attr_index x WHERE ${page.sql}${rest.sql}`;
    n += statements
      .get(`SELECT count(*) ${where}${hasIrregular ? ` AND NOT ${irregular}` : ''}`)
      .pluck()
      .get(...page.params, ...restParams) as number;
    if (hasIrregular)
      for (const row of statements
        .get(`SELECT x.id AS id ${where} AND ${irregular}`)
        .all(...page.params, ...restParams) as Array<{ id: string }>)
        irregularIds.add(row.id);
    if (options.pageRows === undefined) size.took(performance.now() - pageStart);
  }
}

/**
 * The condition to drive: the plan's one range when it has one, or else its condition with the
 * fewest entries; undefined when no condition can drive (two ranges, or only `id` conditions).
 */
function driverOf(ctx: StoreContext, collection: string, plan: IndexPlan): Condition | undefined {
  if (!plan.exact) return undefined;
  const onIndex = plan.conditions.filter((c) => c.path !== 'id');
  const ranges = onIndex.filter((c) => c.op !== 'eq' && c.op !== 'in');
  if (ranges.length > 1) return undefined;
  if (ranges.length === 1) return ranges[0];
  let best: Condition | undefined;
  let fewest = Infinity;
  for (const c of onIndex) {
    const entries = ctx.estimates.estimate(collection, c);
    if (entries < fewest) [best, fewest] = [c, entries];
  }
  return best;
}

/**
 * Whether a range is worth driving beside the plan's equalities: a probe per range row costs less
 * than parsing each record of the most selective equality while the range has at most
 * PROBES_PER_RECORD times as many rows. Both are counted off the index (the range up to that
 * bound), at a few hundredths of a microsecond a row.
 */
function worthDriving(
  ctx: StoreContext,
  collection: string,
  plan: IndexPlan,
  driver: Condition,
  key: number,
): boolean {
  const others = plan.conditions.filter((c) => c !== driver && c.path !== 'id');
  if (driver.op === 'eq' || driver.op === 'in' || others.length === 0) return true;
  const { statements } = ctx;
  const rowsUpTo = (c: Condition, k: number, most: number) => {
    const v = valueSql('value', c);
    return statements
      .get(`SELECT count(*) FROM (SELECT 1 FROM attr_index WHERE key = ? AND ${v.sql} LIMIT +?)`)
      .pluck()
      .get(k, ...v.params, most) as number;
  };
  const keyOf = ctx.keys.of(collection);
  let fewest = EQUALITY_ROWS_COUNTED;
  for (const c of others) fewest = Math.min(fewest, rowsUpTo(c, keyOf(c.path), fewest));
  if (fewest >= EQUALITY_ROWS_COUNTED) return true;
  const most = fewest * PROBES_PER_RECORD;
  return rowsUpTo(driver, key, most + 1) <= most;
}

/** One end of an interval of index values: the value, and whether it is in. */
interface End {
  value: IndexValue;
  in: boolean;
}

/**
 * The intervals of index values a driving condition selects, in index order, each with one lower
 * and one upper end at most: SQLite seeks an index by one bound at each end, and a second lower
 * bound (the condition's, then a page's) would have every page read from the condition's start.
 * Numbers sort before text: a numeric range stops at '', a text one starts there.
 */
function intervalsOf(c: Condition): Array<{ lo?: End; hi?: End }> {
  switch (c.op) {
    case 'eq':
      return [{ lo: { value: c.value, in: true }, hi: { value: c.value, in: true } }];
    case 'in':
      return [...new Set(c.values)]
        .sort(compareSqliteValues)
        .map((value) => ({ lo: { value, in: true }, hi: { value, in: true } }));
    case 'gt':
    case 'gte': {
      const lo = { value: c.value, in: c.op === 'gte' };
      return [typeof c.value === 'number' ? { lo, hi: { value: '', in: false } } : { lo }];
    }
    case 'lt':
    case 'lte': {
      const hi = { value: c.value, in: c.op === 'lte' };
      return [typeof c.value === 'number' ? { hi } : { lo: { value: '', in: true }, hi }];
    }
  }
}

/** SQL (on `x.value`) of an interval's ends, with their parameters. */
function boundsSql(lo: End | undefined, hi: End | undefined): { sql: string; params: SqlParam[] } {
  let sql = '';
  const params: SqlParam[] = [];
  if (lo) {
    sql += ` AND x.value ${lo.in ? '>=' : '>'} ?`;
    params.push(lo.value);
  }
  if (hi) {
    sql += ` AND x.value ${hi.in ? '<=' : '<'} ?`;
    params.push(hi.value);
  }
  return { sql, params };
}

/**
 * The driver's rows in (value, id) order as pages of at most `size.size` rows, each one an index
 * search: rows of values between two edges, or rows of one value between two ids (a value with
 * more rows than a page is read by id).
 */
function* driverPages(ctx: StoreContext, key: number, driver: Condition, size: PacedSize): Generator<Page> {
  for (const interval of intervalsOf(driver)) yield* intervalPages(ctx, key, interval, size);
}

function* intervalPages(
  ctx: StoreContext,
  key: number,
  interval: { lo?: End; hi?: End },
  size: PacedSize,
): Generator<Page> {
  const { statements } = ctx;
  let lo = interval.lo;
  const { hi } = interval;
  for (;;) {
    const within = boundsSql(lo, hi);
    const edge = statements
      .get(
        `SELECT x.value AS value, x.id AS id FROM attr_index x WHERE x.key = ?${within.sql} ` +
          'ORDER BY x.value, x.id LIMIT 1 OFFSET ?',
      )
      .get(key, ...within.params, size.size - 1) as { value: IndexValue; id: string } | undefined;
    if (!edge) {
      yield { sql: `x.key = ?${within.sql}`, params: [key, ...within.params] };
      return;
    }
    // The values before the edge's, then the edge's value's rows up to its id and after it, by id.
    const before = boundsSql(lo, { value: edge.value, in: false });
    yield { sql: `x.key = ?${before.sql}`, params: [key, ...before.params] };
    yield { sql: 'x.key = ? AND x.value = ? AND x.id <= ?', params: [key, edge.value, edge.id] };
    let after = edge.id;
    for (;;) {
      const end = statements
        .get(
          'SELECT x.id FROM attr_index x WHERE x.key = ? AND x.value = ? AND x.id > ? ORDER BY x.id LIMIT 1 OFFSET ?',
        )
        .pluck()
        .get(key, edge.value, after, size.size - 1) as string | undefined;
      if (end === undefined) {
        yield { sql: 'x.key = ? AND x.value = ? AND x.id > ?', params: [key, edge.value, after] };
        break;
      }
      yield {
        sql: 'x.key = ? AND x.value = ? AND x.id > ? AND x.id <= ?',
        params: [key, edge.value, after, end],
      };
      after = end;
    }
    lo = { value: edge.value, in: false };
  }
}
