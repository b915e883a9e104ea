/**
 * How the embedded store reads a page of a find or a count: the strategies it knows, and the
 * choice among them the store makes today. Each strategy is a function of the store's context
 * and the query, so a planner can call the one it chose directly; the last find's strategy is
 * kept in `counters.lastStrategy` for an explain.
 */
import { compileFilter } from '../filter.ts';
import { sortDocs } from '../ordering.ts';
import { compileProjection, projectsIdOnly } from '../projection.ts';
import { InvalidQuery } from '../../errors.ts';
import type { Doc, Filter, FindOptions, Sort } from '../port.ts';
import { planIndex } from './attribute-index.ts';
import { countRegexOnValues, VALUE_COUNT_LIMITS } from './value-regex-count.ts';
import { candidateIdSql, conditionsSql } from './attribute-plans.ts';
import { countOnIndex } from './index-count.ts';
import { Turns } from '../../turns.ts';
import {
  attributeIndexScan,
  candidateIdsScan,
  eachMatch,
  idWalk,
  matchesInIdOrder,
  visitMatches,
  type Pause,
} from './id-order-scans.ts';
import { countPathRegexMatches, pathRegexOf } from './path-regex-count.ts';
import { sortKeysPage } from './sort-keys.ts';
import { prepareSortedIndexWalk, sortedIndexWalk } from './sorted-index-walk.ts';
import { recordCount } from './statistics.ts';
import type { PageStrategy, SortedPageQuery } from './page-queries.ts';
import type { SqlParam } from './statement-cache.ts';
import { CHUNK, type StoreContext } from './store-context.ts';

/**
 * 'sort-in-memory': every match parsed, sorted, and the page cut out. Always applies. The matches
 * come from `matches` when given (a planner's chosen scan), else from the store's own choice.
 */
export async function sortInMemory(
  ctx: StoreContext,
  q: SortedPageQuery,
  matches?: Iterable<Doc | Pause>,
): Promise<Doc[]> {
  const all: Doc[] = [];
  const scan = {
    collection: q.collection,
    filter: q.filter,
    candidateIds: q.candidateIds,
    afterId: q.afterId,
  };
  await visitMatches(matches ?? matchesInIdOrder(ctx, { ...scan, chunkSize: CHUNK }), (doc) => {
    all.push(doc);
  });
  sortDocs(all, q.sort);
  return all.slice(q.skip, q.limit === undefined ? undefined : q.skip + q.limit);
}

/** What a find asks for, read once from its options. */
interface PageRequest {
  skip: number;
  limit: number | undefined;
  project: (doc: Doc) => Doc;
  /** The projection keeps only `id`. */
  idsOnly: boolean;
  /** Records may come as RecordText (FindOptions.asText): asked for, whole, in id order. */
  asText: boolean;
  /** The same for a sorted page: only its strategies that read no more than the page's bodies do. */
  sortedAsText: boolean;
  /** Undefined for plain id order. */
  sort: Sort | undefined;
  candidateIds?: Iterable<string>;
  afterId?: string;
  after?: unknown[];
}

function pageRequest(options: FindOptions): PageRequest {
  const skip = options.skip ?? 0;
  const limit = options.limit && options.limit > 0 ? options.limit : undefined;
  if (skip < 0) throw new InvalidQuery('skip must not be negative');
  const project = compileProjection(options.projection);
  const whole = options.asText === true && options.projection === undefined;
  let sort = options.sort && options.sort.length > 0 ? options.sort : undefined;
  if (sort && sort.length === 1 && sort[0]![0] === 'id' && sort[0]![1] === 1) sort = undefined;
  return {
    skip,
    limit,
    project,
    idsOnly: projectsIdOnly(options.projection),
    asText: whole && sort === undefined,
    sortedAsText: whole && sort !== undefined,
    sort,
    candidateIds: options.candidateIds,
    afterId: options.afterId,
    after: sort ? options.after : undefined,
  };
}

/** A page in id order off a scan: matches before `skip` are passed over, the scan stops at the page's end. */
async function idOrderPage(
  r: PageRequest,
  scan: (chunkSize: number, need: number) => Iterable<Doc | Pause>,
): Promise<Doc[]> {
  const need = r.limit === undefined ? Infinity : r.skip + r.limit;
  const chunkSize = Math.min(CHUNK, Math.max(need === Infinity ? CHUNK : need, 32));
  const out: Doc[] = [];
  let seen = 0;
  await visitMatches(scan(chunkSize, need), (doc) => {
    if (seen++ >= r.skip) out.push(r.project(doc));
    return seen >= need;
  });
  return out;
}

/** A page of a find: id order by scanning, other orders by the cheapest sorted strategy that applies. */
export async function findPage(
  ctx: StoreContext,
  collection: string,
  filter: Filter,
  options: FindOptions,
): Promise<Doc[]> {
  const r = pageRequest(options);
  const served = (strategy: PageStrategy) => {
    ctx.counters.lastStrategy = strategy;
  };
  const { candidateIds, afterId } = r;
  if (!r.sort) {
    return idOrderPage(r, (chunkSize, need) =>
      matchesInIdOrder(
        ctx,
        { collection, filter, candidateIds, afterId, chunkSize, need, idsOnly: r.idsOnly, asText: r.asText },
        served,
      ),
    );
  }
  const q: SortedPageQuery = {
    collection,
    filter,
    sort: r.sort,
    skip: r.skip,
    limit: r.limit,
    candidateIds,
    afterId,
    after: r.after,
    asText: r.sortedAsText,
  };
  if (afterId === undefined) {
    if (candidateIds === undefined) await prepareSortedIndexWalk(ctx, q);
    const walked = candidateIds === undefined ? sortedIndexWalk(ctx, q) : undefined;
    if (walked) {
      served('sorted-index-walk');
      return walked.map(r.project);
    }
    const keyed = sortKeysPage(ctx, q);
    if (keyed) {
      served('sort-keys');
      return keyed.map(r.project);
    }
  }
  served('sort-in-memory');
  return (await sortInMemory(ctx, q)).map(r.project);
}

/**
 * A page of a find read by the strategy given, for a planner that chose it: the same page
 * `findPage` answers, or undefined when that strategy cannot answer this find (an id-order
 * strategy for another order, 'candidate-ids' without candidates, a sorted strategy with
 * keyset paging, an index strategy the filter or sort gives nothing to work with).
 */
export async function findPageWith(
  ctx: StoreContext,
  strategy: PageStrategy,
  collection: string,
  filter: Filter,
  options: FindOptions,
): Promise<Doc[] | undefined> {
  const r = pageRequest(options);
  const { candidateIds, afterId } = r;
  const { bodyTest } = options.access ?? {};
  const stats = options.stats;
  const scan = (chunkSize: number, need?: number) => ({
    collection,
    filter,
    candidateIds,
    afterId,
    chunkSize,
    need,
    bodyTest,
    stats,
    idsOnly: !r.sort && r.idsOnly,
    asText: r.asText,
  });
  const sorted = r.sort ?? [['id', 1] as [string, 1]];
  const q: SortedPageQuery = {
    collection,
    filter,
    sort: sorted,
    skip: r.skip,
    limit: r.limit,
    candidateIds,
    afterId,
    after: r.after,
    bodyTest,
    asText: r.sortedAsText,
  };
  let page: Doc[] | undefined;
  switch (strategy) {
    case 'id-walk':
      if (candidateIds !== undefined) return undefined;
      if (r.sort) {
        page = await sortInMemory(ctx, q, idWalk(ctx, scan(CHUNK)));
        break;
      }
      return idOrderPage(r, (chunkSize, need) => idWalk(ctx, scan(chunkSize, need)));
    case 'attribute-index':
      if (candidateIds !== undefined || planIndex(filter).conditions.length === 0) return undefined;
      if (r.sort) {
        page = await sortInMemory(ctx, q, attributeIndexScan(ctx, scan(CHUNK)));
        break;
      }
      return idOrderPage(r, (chunkSize, need) => attributeIndexScan(ctx, scan(chunkSize, need)));
    case 'candidate-ids':
      if (candidateIds === undefined) return undefined;
      if (r.sort) {
        page = sortKeysPage(ctx, q) ?? (await sortInMemory(ctx, q, candidateIdsScan(ctx, scan(CHUNK))));
        break;
      }
      return idOrderPage(r, (chunkSize, need) => candidateIdsScan(ctx, scan(chunkSize, need)));
    case 'sorted-index-walk':
      if (afterId !== undefined || candidateIds !== undefined) break;
      await prepareSortedIndexWalk(ctx, q);
      page = sortedIndexWalk(ctx, q);
      break;
    case 'sort-keys':
      page = afterId === undefined ? sortKeysPage(ctx, q) : undefined;
      break;
    case 'sort-in-memory':
      page = await sortInMemory(ctx, q);
      break;
  }
  return page?.map(r.project);
}

/** How many records match: from statistics, from index SQL when it decides the filter, else by scanning. */
export async function countMatches(
  ctx: StoreContext,
  collection: string,
  filter: Filter,
  candidateIds?: Iterable<string>,
  options: Pick<FindOptions, 'access' | 'stats'> = {},
): Promise<number> {
  const plan = planIndex(filter);
  const empty = Object.keys(filter).length === 0;
  const { access, stats } = options;
  if (access?.path === 'attribute-index' && candidateIds === undefined && !plan.exact) {
    // The planner chose the count on the attribute index's values (a one-path $regex).
    const n = await countRegexOnValues(ctx, collection, filter, { limits: VALUE_COUNT_LIMITS });
    if (n !== undefined) return n;
  }
  if (access?.path === 'id-walk' && candidateIds === undefined && !empty && !plan.exact) {
    // The planner chose to read every record (with its body test) over the other paths. A one-path
    // $regex on an indexed path reads its distinct values there instead: at most as many.
    const walked = await countRegexOnValues(ctx, collection, filter);
    if (walked !== undefined) {
      if (stats) stats.path = 'attribute-index';
      return walked;
    }
    let n = 0;
    const walk = idWalk(ctx, { collection, filter, chunkSize: CHUNK, bodyTest: access.bodyTest, stats });
    await visitMatches(walk, () => {
      n++;
    });
    return n;
  }
  if (candidateIds === undefined) {
    if (empty) return recordCount(ctx.statements, collection);
    if (plan.exact) {
      compileFilter(filter); // same validation as every other read
      const counted = await countOnIndex(ctx, collection, plan);
      if (counted !== undefined) return counted;
    }
    // An exact plan the index count declines: conditions on `id` alone.
    const exact = plan.exact ? candidateIdSql(ctx.estimates, collection, plan) : undefined;
    if (exact?.complete) {
      const { from, where, params } = exact;
      const row = ctx.statements
        .get(`SELECT count(DISTINCT x.id) AS n FROM ${from} WHERE ${where.join(' AND ')}`)
        .get(...params) as { n: number };
      return row.n;
    }
  } else if (
    empty ||
    (plan.exact && conditionsSql('x', plan.conditions, [], ctx.keys.of(collection)).complete)
  ) {
    compileFilter(filter);
    const ids = [...new Set(candidateIds)];
    const params: SqlParam[] = [];
    const conds = conditionsSql('x', plan.conditions, params, ctx.keys.of(collection));
    const sql =
      'SELECT count(*) AS n FROM docs x WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))' +
      conds.sql;
    let n = 0;
    // A submission asks which of its 10^5 ids are stored already: a statement per CHUNK ids, in turns.
    const turns = new Turns();
    for (let i = 0; i < ids.length; i += CHUNK) {
      if (turns.due()) await turns.give();
      n += (
        ctx.statements.get(sql).get(collection, JSON.stringify(ids.slice(i, i + CHUNK)), ...params) as {
          n: number;
        }
      ).n;
    }
    return n;
  }
  const pathRegex = candidateIds !== undefined ? pathRegexOf(filter) : undefined;
  if (pathRegex) {
    const ids = [...new Set(candidateIds)];
    if (stats) stats.keysExamined += ids.length;
    return countPathRegexMatches(ctx, collection, filter, pathRegex, ids);
  }
  let n = 0;
  await eachMatch(ctx, { collection, filter, candidateIds, chunkSize: CHUNK, stats }, () => {
    n++;
  });
  return n;
}
