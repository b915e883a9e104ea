/**
 * Counting a one-path `$regex` filter (what a compact `.search` becomes) on an attribute-indexed
 * path from the attribute index alone, without reading records: the cost of the answer, not of
 * the collection.
 *
 * The index holds, per record, the scalars MongoDB traversal reaches at the path (the same
 * traversal the compiled filter's regex operator makes), and marks a record irregular there when
 * those entries are not simply one plain value (several values, arrays of arrays, other kinds of
 * leaves, strings SQLite may store differently). So:
 *
 * - the distinct values at the path are walked in index order (one seek each) and the regex is
 *   tested on each string once; past `MAX_DISTINCT_VALUES` the path has too many to pay off and
 *   the caller counts another way;
 * - a regular record has at most one entry there, and it matches exactly when that entry is a
 *   matching string: the count of those is the count of entries with a matching value that do not
 *   belong to an irregular record;
 * - the irregular records (few, at most `MAX_IRREGULAR`) are parsed and decided by the compiled
 *   filter, as every other read is.
 *
 * better-sqlite3 is synchronous, and at 10^6 records one statement counting every entry of a
 * low-cardinality path holds the process for a tenth of a second or more. So every read is bounded:
 * the values are walked `WALK_CHUNK` at a time, one value's entries are counted `ENTRIES_SLICE` at
 * a time in id order, the irregular records are parsed `BODIES_CHUNK` at a time, and the count
 * takes a turn whenever it has held the process for TURN_MS. Reads between turns are not one
 * transaction: the change log's newest sequence, read before the first read and after the last,
 * tells that no write came between them. A count a write came between is started again, a few
 * times, then left to the other counts.
 */
import { compileFilter } from '../filter.ts';
import type { Filter } from '../port.ts';
import { INDEXED_PATHS, NO_KEY } from './attribute-index.ts';
import { Turns } from '../../turns.ts';
import { pathRegexOf } from './path-regex-count.ts';
import { loadBodies } from './records.ts';
import { parseBody, type StoreContext } from './store-context.ts';

/** Distinct values walked at most; past this the path's values are too many to test one by one. */
export const MAX_DISTINCT_VALUES = 20_000;
/** Irregular records parsed at most; past this the count is left to the other paths. */
export const MAX_IRREGULAR = 2_000;
/** How long a path found to hold too many distinct values is not walked again. */
const TOO_MANY_TTL_MS = 60_000;

/**
 * The distinct string values at an attribute key in index order, up to `limit` + 1: a loose index
 * scan, each step a seek past the previous value. Text sorts after every number in SQLite, so the
 * walk starts at '' and never meets one.
 */
const walkFrom = (start: string) =>
  'WITH RECURSIVE walk(v) AS (' +
  `SELECT (SELECT value FROM attr_index WHERE key = @key AND ${start} ORDER BY value LIMIT 1) ` +
  'UNION ALL SELECT (SELECT value FROM attr_index WHERE key = @key AND value > walk.v ORDER BY value LIMIT 1) ' +
  'FROM walk WHERE walk.v IS NOT NULL' +
  ') SELECT v FROM walk WHERE v IS NOT NULL LIMIT +@limit';
const DISTINCT_STRINGS = walkFrom("value >= ''");
/** The same walk from past a value already walked (`@after`). */
const DISTINCT_STRINGS_AFTER = walkFrom("value > @after AND value >= ''");

/**
 * How many entries a subquery selects, how many of those belong to regular records, and (`last`)
 * the last one's id. The ids are read only when asked for: counting 83,547 entries of 224 values at
 * 10^6 took 20.5 ms reading them, 10.7 ms without.
 */
const counted = (regular: boolean, entries: string, last: boolean) =>
  `SELECT count(*) AS entries, ${
    regular ? 'coalesce(sum(id NOT IN (SELECT id FROM attr_irregular WHERE key = @key)), 0)' : 'count(*)'
  } AS regular${last ? ', max(id) AS last' : ''} FROM (${entries} LIMIT +@slice)`;
/** Up to `@slice` entries of the values of the JSON array `@values` (`column` of each). */
const batchOf = (column: 'id' | '1') =>
  `SELECT ${column} FROM attr_index WHERE key = @key AND value IN (SELECT value FROM json_each(@values))`;
/** Up to `@slice` entries of one value, in id order after `@after` (`last`: where the next starts). */
const SLICE = 'SELECT id FROM attr_index WHERE key = @key AND value = @value AND id > @after ORDER BY id';

const IRREGULAR_IDS = 'SELECT id FROM attr_irregular WHERE key = ? LIMIT +?';
const LATEST_CHANGE = 'SELECT max(seq) FROM changes';

/** Distinct values one read of the walk takes (a seek each); a turn is taken between reads. */
export const WALK_CHUNK = 250;
/** Entries one read counts at most. */
export const ENTRIES_SLICE = 20_000;
/** Matching values counted together at most, when their entries fit in a slice. */
const BATCH_VALUES = 256;
/** Irregular records parsed per read. */
const BODIES_CHUNK = 1_000;
/** Times a count is started again when a write came between its reads. */
const ATTEMPTS = 3;

export interface ValueCountLimits {
  /** Distinct values walked at most. */
  values: number;
  /** Irregular records parsed at most. */
  irregular: number;
}

/** The limits of a count that must pay off against the other counts. */
export const VALUE_COUNT_LIMITS: ValueCountLimits = { values: MAX_DISTINCT_VALUES, irregular: MAX_IRREGULAR };

/** Attribute keys found to hold more distinct strings than the limit asked with, with when. */
const tooMany = new WeakMap<StoreContext, Map<number, number>>();
/**
 * The count with limits under way on each attribute key. Another count on the key waits for it to
 * learn whether the key holds too many values: each walked them all (20,000 at most) only to find
 * that, and a burst of new `.search` filters on one path (a cache emptied by a large write) had
 * seven walks at once, each taking a second, every request waiting behind them.
 */
const limitedWalks = new WeakMap<StoreContext, Map<number, Promise<unknown>>>();

/**
 * The regex and attribute key of a filter that is one `$regex` on one attribute-indexed path;
 * NO_KEY when no record of the collection was ever indexed there (none holds a string there).
 */
function indexedRegex(
  ctx: StoreContext,
  collection: string,
  filter: Filter,
): { q: NonNullable<ReturnType<typeof pathRegexOf>>; key: number } | undefined {
  const q = pathRegexOf(filter);
  if (!q) return undefined;
  const path = q.segments.join('.');
  if (!INDEXED_PATHS.has(path)) return undefined;
  return { q, key: ctx.keys.get(collection, path) };
}

/**
 * The exact number of records of `collection` matching `filter`, when the filter is one `$regex`
 * on one attribute-indexed path (and, with `limits`, the path's distinct values and irregular
 * records are few enough); undefined otherwise, or when writes kept coming between its reads (the
 * caller counts another way). `chunk`: distinct values per read of the walk.
 */
export async function countRegexOnValues(
  ctx: StoreContext,
  collection: string,
  filter: Filter,
  options: { limits?: ValueCountLimits; chunk?: number } = {},
): Promise<number | undefined> {
  const target = indexedRegex(ctx, collection, filter);
  if (target === undefined) return undefined;
  if (target.key === NO_KEY) return 0;
  const { limits } = options;
  let skipped = tooMany.get(ctx);
  if (!skipped) tooMany.set(ctx, (skipped = new Map()));
  const known = () => {
    const since = skipped.get(target.key);
    if (since === undefined) return false;
    if (Date.now() - since < TOO_MANY_TTL_MS) return true;
    skipped.delete(target.key);
    return false;
  };
  const count = () => countWithRetries(ctx, collection, filter, target, limits, options.chunk, skipped);
  if (!limits) return count();
  if (known()) return undefined;
  let walks = limitedWalks.get(ctx);
  if (!walks) limitedWalks.set(ctx, (walks = new Map()));
  const first = walks.get(target.key);
  if (first) {
    await first;
    return known() ? undefined : count();
  }
  const mine = count();
  const settled = mine
    .catch(() => undefined)
    .finally(() => {
      if (walks.get(target.key) === settled) walks.delete(target.key);
    });
  walks.set(target.key, settled);
  return mine;
}

async function countWithRetries(
  ctx: StoreContext,
  collection: string,
  filter: Filter,
  target: NonNullable<ReturnType<typeof indexedRegex>>,
  limits: ValueCountLimits | undefined,
  chunk: number | undefined,
  skipped: Map<number, number>,
): Promise<number | undefined> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const n = await countOnce(ctx, collection, filter, target, limits, chunk ?? WALK_CHUNK);
    if (n === 'too many values') skipped.set(target.key, Date.now());
    if (typeof n === 'number') return n;
    if (n !== 'a write came between') return undefined;
  }
  return undefined;
}

async function countOnce(
  ctx: StoreContext,
  collection: string,
  filter: Filter,
  { q, key }: NonNullable<ReturnType<typeof indexedRegex>>,
  limits: ValueCountLimits | undefined,
  chunk: number,
): Promise<number | 'too many values' | 'too many irregular' | 'a write came between'> {
  const turns = new Turns();
  const latest = () => ctx.statements.get(LATEST_CHANGE).pluck().get() as number | null;
  const before = latest();
  const irregular = ctx.statements
    .get(IRREGULAR_IDS)
    .pluck()
    .all(key, limits ? limits.irregular + 1 : -1) as string[];
  if (limits && irregular.length > limits.irregular) return 'too many irregular';
  const regular = irregular.length > 0;
  type Counted = { entries: number; regular: number; last: string | null };
  const batch = ctx.statements.get(counted(regular, batchOf(regular ? 'id' : '1'), false));
  const slice = ctx.statements.get(counted(regular, SLICE, true));
  /** One value's entries, a slice at a time. */
  const countValue = async (value: string) => {
    let found = 0;
    for (let after = ''; ;) {
      const s = slice.get({ key, value, after, slice: ENTRIES_SLICE }) as Counted;
      found += s.regular;
      if (s.entries < ENTRIES_SLICE) return found;
      after = s.last!;
      if (turns.due()) await turns.give();
    }
  };
  let n = 0;
  let batchValues = BATCH_VALUES;
  let walked = 0;
  let after: string | undefined;
  for (;;) {
    const values = (
      after === undefined
        ? ctx.statements.get(DISTINCT_STRINGS).pluck().all({ key, limit: chunk })
        : ctx.statements.get(DISTINCT_STRINGS_AFTER).pluck().all({ key, after, limit: chunk })
    ) as string[];
    walked += values.length;
    if (limits && walked > limits.values) return 'too many values';
    const matching = values.filter((v) => q.test(v));
    for (let i = 0; i < matching.length;) {
      const some = matching.slice(i, i + batchValues);
      i += some.length;
      const b = batch.get({ key, values: JSON.stringify(some), slice: ENTRIES_SLICE }) as Counted;
      if (b.entries < ENTRIES_SLICE) {
        n += b.regular;
        if (b.entries < ENTRIES_SLICE / 4) batchValues = Math.min(2 * batchValues, BATCH_VALUES);
      } else {
        // More entries together than a slice: these values are counted one by one, in slices,
        // and the next batch is smaller.
        batchValues = Math.max(1, batchValues >> 1);
        for (const value of some) {
          n += await countValue(value);
          if (turns.due()) await turns.give();
        }
      }
      if (turns.due()) await turns.give();
    }
    if (values.length < chunk) break;
    after = values[values.length - 1];
    await turns.give();
  }
  const decide = compileFilter(filter);
  for (let i = 0; i < irregular.length; i += BODIES_CHUNK) {
    await turns.give();
    for (const row of loadBodies(ctx.statements, collection, irregular.slice(i, i + BODIES_CHUNK)))
      if (decide(parseBody(ctx, row.body))) n++;
  }
  return latest() === before ? n : 'a write came between';
}
