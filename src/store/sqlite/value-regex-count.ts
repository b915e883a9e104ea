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
 * The walk, the count and the irregular records are read in one read transaction, so a write from
 * another process cannot fall between them.
 *
 * A path with more distinct values than that is walked in chunks instead, taking turns between
 * them (`countRegexOnValuesInTurns`), for a count that would otherwise read every record: the
 * change log's newest sequence, read before the first chunk and after the last, tells that no write
 * came between the chunks, or the count is given up.
 */
import { compileFilter } from '../filter.ts';
import type { Filter } from '../port.ts';
import { INDEXED_PATHS, NO_KEY } from './attribute-index.ts';
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
  ') SELECT v FROM walk WHERE v IS NOT NULL LIMIT @limit';
const DISTINCT_STRINGS = walkFrom("value >= ''");
/** The same walk from past a value already walked (`@after`). */
const DISTINCT_STRINGS_AFTER = walkFrom("value > @after AND value >= ''");

/** Entries whose value is one of the JSON array's strings. */
const MATCHING_ENTRIES =
  'SELECT count(*) FROM attr_index WHERE key = @key AND value IN (SELECT value FROM json_each(@values))';
/** The same, leaving out the irregular records' entries (when there are any: a lookup per entry). */
const REGULAR_ENTRIES = `${MATCHING_ENTRIES} AND id NOT IN (SELECT id FROM attr_irregular WHERE key = @key)`;

const IRREGULAR_IDS = 'SELECT id FROM attr_irregular WHERE key = ? LIMIT ?';
const LATEST_CHANGE = 'SELECT max(seq) FROM changes';

/** Distinct values one read of a chunked walk takes; it takes a turn between reads. */
export const WALK_CHUNK = 5_000;
/** Irregular records parsed per read of a chunked count. */
const BODIES_CHUNK = 1_000;

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Attribute keys found to hold more distinct strings than the limit asked with, with when. */
const tooMany = new WeakMap<StoreContext, Map<number, number>>();

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
 * on one attribute-indexed path whose distinct values and irregular records are few enough;
 * undefined otherwise (the caller counts another way).
 */
export function countRegexOnValues(
  ctx: StoreContext,
  collection: string,
  filter: Filter,
  limits: { values: number; irregular: number } = { values: MAX_DISTINCT_VALUES, irregular: MAX_IRREGULAR },
): number | undefined {
  const target = indexedRegex(ctx, collection, filter);
  if (target === undefined) return undefined;
  if (target.key === NO_KEY) return 0;
  const { q, key } = target;
  let skipped = tooMany.get(ctx);
  if (!skipped) tooMany.set(ctx, (skipped = new Map()));
  const since = skipped.get(key);
  if (since !== undefined) {
    if (Date.now() - since < TOO_MANY_TTL_MS) return undefined;
    skipped.delete(key);
  }
  const read = ctx.db.transaction(() => {
    const values = ctx.statements
      .get(DISTINCT_STRINGS)
      .pluck()
      .all({ key, limit: limits.values + 1 }) as string[];
    if (values.length > limits.values) return 'too many values' as const;
    const irregular = ctx.statements
      .get(IRREGULAR_IDS)
      .pluck()
      .all(key, limits.irregular + 1) as string[];
    if (irregular.length > limits.irregular) return 'too many irregular' as const;
    const matching = values.filter((v) => q.test(v));
    const regular =
      matching.length === 0
        ? 0
        : (ctx.statements
            .get(irregular.length === 0 ? MATCHING_ENTRIES : REGULAR_ENTRIES)
            .pluck()
            .get({ key, values: JSON.stringify(matching) }) as number);
    return { regular, bodies: loadBodies(ctx.statements, collection, irregular) };
  })();
  if (read === 'too many values') {
    skipped.set(key, Date.now());
    return undefined;
  }
  if (read === 'too many irregular') return undefined;
  let n = read.regular;
  if (read.bodies.length > 0) {
    const decide = compileFilter(filter);
    for (const row of read.bodies) if (decide(parseBody(ctx, row.body))) n++;
  }
  return n;
}

/**
 * The exact number of records of `collection` matching `filter` (one `$regex` on one
 * attribute-indexed path), from the path's distinct values walked `chunk` at a time with turns
 * between the reads; undefined when the filter is not such a `$regex`, or when a write came
 * between the reads (the change log moved on), so the chunks do not add up to one moment's count.
 */
export async function countRegexOnValuesInTurns(
  ctx: StoreContext,
  collection: string,
  filter: Filter,
  chunk = WALK_CHUNK,
): Promise<number | undefined> {
  const target = indexedRegex(ctx, collection, filter);
  if (target === undefined) return undefined;
  if (target.key === NO_KEY) return 0;
  const { q, key } = target;
  const latest = () => ctx.statements.get(LATEST_CHANGE).pluck().get() as number | null;
  const before = latest();
  const irregular = ctx.statements.get(IRREGULAR_IDS).pluck().all(key, -1) as string[];
  const entries = ctx.statements.get(irregular.length === 0 ? MATCHING_ENTRIES : REGULAR_ENTRIES).pluck();
  let n = 0;
  let after: string | undefined;
  for (;;) {
    const values = (
      after === undefined
        ? ctx.statements.get(DISTINCT_STRINGS).pluck().all({ key, limit: chunk })
        : ctx.statements.get(DISTINCT_STRINGS_AFTER).pluck().all({ key, after, limit: chunk })
    ) as string[];
    const matching = values.filter((v) => q.test(v));
    if (matching.length > 0) n += entries.get({ key, values: JSON.stringify(matching) }) as number;
    if (values.length < chunk) break;
    after = values[values.length - 1];
    await turn();
  }
  const decide = compileFilter(filter);
  for (let i = 0; i < irregular.length; i += BODIES_CHUNK) {
    await turn();
    for (const row of loadBodies(ctx.statements, collection, irregular.slice(i, i + BODIES_CHUNK)))
      if (decide(parseBody(ctx, row.body))) n++;
  }
  return latest() === before ? n : undefined;
}
