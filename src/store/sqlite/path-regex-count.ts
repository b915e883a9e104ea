/**
 * Deciding a one-path `$regex` filter (`{"a.b": {"$regex": ..., "$options": ...}}`, what a compact
 * `.search` becomes) without parsing records, for counts of search candidates:
 * SQLite's JSON functions read the value at the path and the types on the way to it, and the
 * regex runs on that string alone.
 * MongoDB (and the compiled filter) match such a filter exactly when the path goes through objects
 * to a string the regex matches; a record whose path meets an array on the way or at its end is
 * parsed and decided by the compiled filter, as every other read is, and a record where the path
 * ends early or at another kind of value does not match.
 */
import { compileFilter, compileRegex } from '../filter.ts';
import type { Filter } from '../port.ts';
import { loadBodies } from './records.ts';
import { parseBody, type StoreContext } from './store-context.ts';

/** Candidate ids one statement reads. */
const CHUNK = 5000;

interface PathRegex {
  segments: string[];
  test: (value: string) => boolean;
}

/** The path and test of a filter that is one `$regex` (with `$options`) on one plain dotted path. */
export function pathRegexOf(filter: Filter): PathRegex | undefined {
  const keys = Object.keys(filter);
  if (keys.length !== 1 || keys[0]!.startsWith('$')) return undefined;
  const path = keys[0]!;
  const operand = filter[path];
  if (operand === null || typeof operand !== 'object' || Array.isArray(operand)) return undefined;
  const ops = Object.keys(operand);
  const { $regex: pattern, $options: options } = operand as Record<string, unknown>;
  if (typeof pattern !== 'string' || !ops.every((k) => k === '$regex' || k === '$options')) return undefined;
  if (options !== undefined && typeof options !== 'string') return undefined;
  const segments = path.split('.');
  // Quoted JSON path segments: no quotes or backslashes; numeric segments may be array positions.
  if (segments.some((s) => s === '' || /["\\]/.test(s) || /^\d+$/.test(s))) return undefined;
  const re = compileRegex(pattern, options ?? '');
  return { segments, test: (value) => re.test(value) };
}

const jsonPath = (segments: string[]) => '$' + segments.map((s) => `."${s}"`).join('');

/**
 * SQL select-list columns reading a record's types along the path (`t0`, `t1`, ...) and the value
 * at its end (`leaf`) from `x.body`, with their parameters (they come before the WHERE's).
 */
function pathColumns(q: PathRegex): { sql: string; params: string[] } {
  const types = q.segments.map((_, i) => `json_type(x.body, ?) AS t${i}`);
  return {
    sql: `${types.join(', ')}, json_extract(x.body, ?) AS leaf`,
    params: [...q.segments.map((_, i) => jsonPath(q.segments.slice(0, i + 1))), jsonPath(q.segments)],
  };
}

/**
 * What a row of `pathColumns` says of the record: it matches, it does not, or its path meets an
 * array and the compiled filter must decide on the parsed record.
 */
function decidePathRow(q: PathRegex, row: Record<string, unknown>): 'match' | 'no' | 'parse' {
  const last = q.segments.length - 1;
  for (let s = 0; s <= last; s++) {
    const type = row[`t${s}`];
    if (type === 'array') return 'parse';
    if (s < last ? type !== 'object' : type !== 'text') return 'no';
  }
  return q.test(row.leaf as string) ? 'match' : 'no';
}

/** How many of `ids` match `filter`, which `pathRegexOf` accepted; takes turns between chunks. */
export async function countPathRegexMatches(
  ctx: StoreContext,
  collection: string,
  filter: Filter,
  q: PathRegex,
  ids: string[],
): Promise<number> {
  const columns = pathColumns(q);
  const sql =
    `SELECT x.id AS id, ${columns.sql} FROM docs x ` +
    'WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))';
  const decide = compileFilter(filter);
  let n = 0;
  for (let i = 0; i < ids.length; i += CHUNK) {
    const rows = ctx.statements
      .get(sql)
      .all(...columns.params, collection, JSON.stringify(ids.slice(i, i + CHUNK))) as Array<
      Record<string, unknown>
    >;
    const irregular: string[] = [];
    for (const row of rows) {
      const decided = decidePathRow(q, row);
      if (decided === 'parse') irregular.push(row.id as string);
      else if (decided === 'match') n++;
    }
    for (const row of loadBodies(ctx.statements, collection, irregular))
      if (decide(parseBody(ctx, row.body))) n++;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return n;
}
