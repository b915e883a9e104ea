/**
 * The 'sorted-index-walk' page strategy: a page sorted by one indexed path, read off that path's
 * index entries in key order, so only the page (and records whose entries do not decide their
 * key) are parsed, however many records match.
 */
import { compileFilter } from '../filter.ts';
import { compareKeys, sortByKeys, sortKeyOf, withIdTieBreaker } from '../ordering.ts';
import type { Doc } from '../port.ts';
import { INDEXED_PATHS, planIndex, type IndexPlan, type IndexValue } from './attribute-index.ts';
import { candidateIdSql, conditionsSql } from './attribute-plans.ts';
import type { SortedPageQuery } from './page-queries.ts';
import { loadBodies } from './records.ts';
import { recordCount } from './statistics.ts';
import type { SqlParam } from './statement-cache.ts';
import { parseBody, type StoreContext } from './store-context.ts';

/** Matches below this many are sorted from their bodies rather than found on a walk of the sort key's index. */
const SMALL_MATCH = 1000;
/**
 * Index rows a sorted walk reads between checks that it still beats reading the keys from the
 * bodies of every match, which costs about as much per match as four rows of the walk.
 */
const WALK_CHECK = 5000;

/** Ids that SQLite and JavaScript may order differently (they hold a character from U+D800 up). */
const ID_OUT_OF_ORDER = /[\uD800-\uFFFF]/;

/** Thrown inside a sorted index walk that has read more rows than its budget. */
class WalkTooLong extends Error {}

type SortItem = { id: string; keys: unknown[] };

/**
 * A page sorted by one indexed path, read off that path's index entries in key order: a record's
 * key ascending is its smallest entry and descending its largest, which the walk meets first.
 * Records whose entries do not decide their key (attr_irregular) are parsed and merged in;
 * matches without entries sort as null. Only the page and the irregular records are parsed.
 * Undefined when the sort, the filter or a small match set makes another way cheaper, or when
 * the walk reads more rows than its budget before the page is complete. Ignores candidate ids.
 */
export function sortedIndexWalk(ctx: StoreContext, q: SortedPageQuery): Doc[] | undefined {
  const { collection, filter, skip, limit } = q;
  const { statements } = ctx;
  const keys = withIdTieBreaker(q.sort);
  if (limit === undefined || keys.length !== 2 || keys[1]![0] !== 'id' || keys[1]![1] !== 1) return undefined;
  const [path, direction] = keys[0]!;
  if (!INDEXED_PATHS.has(path)) return undefined;
  compileFilter(filter);
  const plan = planIndex(filter);
  if (Object.keys(filter).length > 0 && !plan.exact) return undefined;
  const params: SqlParam[] = [];
  const conds = conditionsSql('x', plan.conditions, params);
  if (!conds.complete) return undefined;
  if (plan.conditions.some((c) => ctx.estimates.estimate(collection, c) < SMALL_MATCH)) return undefined;
  const need = skip + limit;

  const parsed = new Map<string, Doc>();
  const irregularIds = (
    statements
      .get(`SELECT x.id AS id FROM attr_irregular x WHERE x.collection = ? AND x.path = ?${conds.sql}`)
      .all(collection, path, ...params) as Array<{ id: string }>
  ).map((r) => r.id);
  const irregular: SortItem[] = sortByKeys(
    loadBodies(statements, collection, irregularIds).map((row) => {
      const doc = parseBody(ctx, row.body);
      parsed.set(row.id, doc);
      return { id: row.id, keys: [sortKeyOf(doc, path, direction), row.id] };
    }),
    keys,
  );
  const skipIds = new Set(irregularIds);

  // Matches with entries, in key order: the first row of a record carries its key. The walk
  // goes value by value (the next one is a seek), each value's rows in id order straight off
  // the primary key. Every row comes back, flagged with whether its record matches, so the
  // budget counts what the walk reads.
  const seen = new Set<string>();
  let walked = false;
  const [agg, cmp] = direction === 1 ? ['min', '>'] : ['max', '<'];
  const firstValue = statements.get(
    `SELECT ${agg}(value) AS value FROM attr_index WHERE collection = ? AND path = ?`,
  );
  const nextValue = statements.get(
    `SELECT ${agg}(value) AS value FROM attr_index WHERE collection = ? AND path = ? AND value ${cmp} ?`,
  );
  const rowsOfValue = statements.get(
    `SELECT x.id AS id, (1${conds.sql}) AS matches FROM attr_index x` +
      ' WHERE x.collection = ? AND x.path = ? AND x.value = ? ORDER BY x.id',
  );
  const records = recordCount(statements, collection);
  function* withEntries(): Generator<SortItem> {
    let rows = 0;
    let hits = 0;
    let value = (firstValue.get(collection, path) as { value: IndexValue | null }).value;
    while (value !== null) {
      for (const row of rowsOfValue.iterate(...params, collection, path, value) as IterableIterator<{
        id: string;
        matches: number;
      }>) {
        // Rows still to read at the match rate so far, against the matches of the collection at it.
        if (++rows % WALK_CHECK === 0 && need * rows * rows > 4 * hits * hits * records)
          throw new WalkTooLong();
        // SQLite orders such ids by code point, JavaScript (and so the reference) by UTF-16 unit.
        if (ID_OUT_OF_ORDER.test(row.id)) throw new WalkTooLong();
        if (!row.matches) continue;
        hits++;
        if (skipIds.has(row.id) || seen.has(row.id)) continue;
        seen.add(row.id);
        yield { id: row.id, keys: [value, row.id] };
      }
      value = (nextValue.get(collection, path, value) as { value: IndexValue | null }).value;
    }
    walked = true;
  }
  // Matches without entries, in id order, once the merge reaches them.
  function* withoutEntries(): Generator<SortItem> {
    for (const id of matchesWithoutEntries(ctx, collection, path, plan, walked ? seen : undefined))
      if (!skipIds.has(id)) yield { id, keys: [null, id] };
  }
  const regular = (function* () {
    if (direction === 1) {
      yield* withoutEntries();
      yield* withEntries();
    } else {
      yield* withEntries();
      yield* withoutEntries();
    }
  })();

  const pageIds: string[] = [];
  try {
    let head: SortItem | undefined;
    let fetched = false;
    let next = 0;
    for (let emitted = 0; emitted < need; emitted++) {
      if (!fetched) {
        const r = regular.next();
        head = r.done ? undefined : r.value;
        fetched = true;
      }
      const other = irregular[next];
      let item: SortItem;
      if (head && (!other || compareKeys(head.keys, other.keys, keys) <= 0)) {
        item = head;
        fetched = false;
      } else if (other) {
        item = other;
        next++;
      } else break;
      if (emitted >= skip) pageIds.push(item.id);
    }
  } catch (err) {
    if (err instanceof WalkTooLong) return undefined;
    throw err;
  } finally {
    regular.return(undefined);
  }
  ctx.counters.sortedIndexWalks++;
  const missing = pageIds.filter((id) => !parsed.has(id));
  for (const row of loadBodies(statements, collection, missing)) parsed.set(row.id, parseBody(ctx, row.body));
  return pageIds.map((id) => parsed.get(id)!);
}

/**
 * Ids of the matches of an index-decided filter without an entry at `path`, in id order.
 * `withEntries` is the set of matches with one when a walk has collected it already.
 */
function matchesWithoutEntries(
  ctx: StoreContext,
  collection: string,
  path: string,
  plan: IndexPlan,
  withEntries: ReadonlySet<string> | undefined,
): string[] {
  const { from, where, params } = candidateIdSql(ctx.estimates, collection, plan);
  if (withEntries) {
    const ids = ctx.statements
      .get(`SELECT DISTINCT x.id AS id FROM ${from} WHERE ${where.join(' AND ')}`)
      .all(...params) as Array<{ id: string }>;
    return ids
      .map((r) => r.id)
      .filter((id) => !withEntries.has(id))
      .sort();
  }
  const ids = ctx.statements
    .get(
      `SELECT DISTINCT x.id AS id FROM ${from} WHERE ${where.join(' AND ')}` +
        ' AND x.id NOT IN (SELECT id FROM attr_index WHERE collection = ? AND path = ?)',
    )
    .all(...params, collection, path) as Array<{ id: string }>;
  return ids.map((r) => r.id).sort();
}
