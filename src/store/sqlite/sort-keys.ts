/**
 * The 'sort-keys' page strategy: when the index decides the filter exactly, the sort keys of
 * every match come from SQLite's JSON functions, so only the page's records are parsed.
 */
import { compileFilter } from '../filter.ts';
import { sortByKeys, sortKeyOf, withIdTieBreaker } from '../ordering.ts';
import type { Doc } from '../port.ts';
import { planIndex } from './attribute-index.ts';
import { candidateIdSql, conditionsSql } from './attribute-plans.ts';
import type { SortedPageQuery } from './page-queries.ts';
import { loadBodies } from './records.ts';
import type { SqlParam } from './statement-cache.ts';
import { CHUNK, parseBody, recordText, type StoreContext } from './store-context.ts';

/** Ids one statement looks up at a time. */
const ID_BATCH = CHUNK * 10;

/**
 * A sorted page without parsing every match: sort keys come from SQLite's JSON functions and
 * only the page's records are parsed. A record whose key path meets an array or object is
 * parsed to follow MongoDB's array rules. Undefined when the filter needs the full check on
 * every record.
 */
export function sortKeysPage(ctx: StoreContext, q: SortedPageQuery): Doc[] | undefined {
  const { collection, filter, skip, limit, candidateIds } = q;
  const { statements } = ctx;
  compileFilter(filter);
  const plan = planIndex(filter);
  const empty = Object.keys(filter).length === 0;
  if (!empty && !plan.exact) return undefined;
  const keys = withIdTieBreaker(q.sort);
  const paths = keys.map(([p]) => p.split('.'));
  if (paths.some((segs) => segs.some((seg) => seg === '' || /["\\]/.test(seg)))) return undefined;
  const jsonPath = (segs: string[]) => '$' + segs.map((seg) => `."${seg}"`).join('');
  const columns: string[] = [];
  const pathParams: string[] = [];
  for (const segs of paths) {
    columns.push('json_extract(x.body, ?)');
    pathParams.push(jsonPath(segs));
    for (let i = 1; i <= segs.length; i++) {
      columns.push('json_type(x.body, ?)');
      pathParams.push(jsonPath(segs.slice(0, i)));
    }
  }
  const select = `SELECT x.id AS id, ${columns.map((c, i) => `${c} AS c${i}`).join(', ')} FROM docs x`;
  let rows: Array<Record<string, unknown>> = [];
  if (candidateIds !== undefined || plan.conditions.length > 0) {
    let ids: string[];
    if (candidateIds !== undefined) {
      const params: SqlParam[] = [];
      const conds = conditionsSql('x', plan.conditions, params, ctx.keys.of(collection));
      if (!empty && !conds.complete) return undefined;
      ids = [];
      const all = [...new Set(candidateIds)];
      const sql = `SELECT x.id AS id FROM docs x WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))${conds.sql}`;
      for (let i = 0; i < all.length; i += ID_BATCH) {
        const found = statements
          .get(sql)
          .all(collection, JSON.stringify(all.slice(i, i + ID_BATCH)), ...params) as Array<{ id: string }>;
        for (const r of found) ids.push(r.id);
      }
    } else {
      const { from, where, params, complete } = candidateIdSql(ctx.estimates, collection, plan);
      if (!complete) return undefined;
      ids = (
        statements
          .get(`SELECT DISTINCT x.id AS id FROM ${from} WHERE ${where.join(' AND ')}`)
          .all(...params) as Array<{ id: string }>
      ).map((r) => r.id);
    }
    const sql = `${select} WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))`;
    for (let i = 0; i < ids.length; i += ID_BATCH) {
      rows.push(
        ...(statements
          .get(sql)
          .all(...pathParams, collection, JSON.stringify(ids.slice(i, i + ID_BATCH))) as typeof rows),
      );
    }
  } else {
    rows = statements.get(`${select} WHERE x.collection = ?`).all(...pathParams, collection) as typeof rows;
  }
  const items = rows.map((row) => {
    const id = row.id as string;
    const values: unknown[] = [];
    let col = 0;
    let parse = false;
    for (const segs of paths) {
      const value = row[`c${col++}`];
      let type: unknown = null;
      for (let i = 0; i < segs.length; i++) {
        type = row[`c${col++}`];
        if (type === 'array' || (type === 'object' && i === segs.length - 1)) parse = true;
      }
      values.push(type === null ? null : type === 'true' ? true : type === 'false' ? false : value);
    }
    return { id, keys: values, parse };
  });
  const pending = new Map(items.filter((it) => it.parse).map((it) => [it.id, it]));
  if (pending.size > 0) {
    for (const row of loadBodies(statements, collection, [...pending.keys()])) {
      const doc = parseBody(ctx, row.body);
      const item = pending.get(row.id)!;
      item.keys = keys.map(([p, dir]) => sortKeyOf(doc, p, dir));
    }
  }
  sortByKeys(items, keys);
  const pageIds = items.slice(skip, limit === undefined ? undefined : skip + limit).map((it) => it.id);
  const byId = new Map(loadBodies(statements, collection, pageIds).map((r) => [r.id, r.body]));
  return pageIds.map((id) => (q.asText ? recordText(id, byId.get(id)!) : parseBody(ctx, byId.get(id)!)));
}
