/**
 * The 'sorted-index-walk' page strategy: a page sorted by one indexed path, read off that path's
 * index entries in key order, so only the page and the few records whose entries are not simply
 * their key are parsed, however many records match.
 *
 * Most records have one entry at the path, which is their sort key (`indexRecord` calls the others
 * irregular: several entries, null beside values, values an entry cannot hold, ids SQLite orders
 * differently). The regular records are read in SQL, in the index's order: when the index decides
 * the filter, SQLite skips the records before the page itself (OFFSET, in C), and the irregular
 * ones are merged in from memory; otherwise each record met is checked on its body until the
 * page is full. `after` (the keys of the record before the page) seeks instead of skipping.
 * Under conditions the rows found at positions of the walk are kept (walk-checkpoints.ts), so a
 * later page of the same walk starts near its own start.
 */
import { compileFilter } from '../filter.ts';
import { compareKeys, sortByKeys, sortKeyOf, withIdTieBreaker } from '../ordering.ts';
import type { Doc, Filter, Sort } from '../port.ts';
import {
  indexRecord,
  INDEXED_PATHS,
  NO_KEY,
  planIndex,
  coveredRecords,
  type IndexPlan,
  type IndexValue,
} from './attribute-index.ts';
import { candidateIdSql, conditionsSql } from './attribute-plans.ts';
import { isPause, matchesInIdOrder } from './id-order-scans.ts';
import { compareRows, rowAt, rowsFrom, rowsPast, type Row, type Walk } from './index-walk-rows.ts';
import { isKept, lowerBound, PREFIX_ROWS, walkName, walkPrefixes, type WalkPrefix } from './walk-prefixes.ts';
import type { Checkpoint } from './walk-checkpoints.ts';
import type { SortedPageQuery } from './page-queries.ts';
import { loadBodies } from './records.ts';
import { recordCount } from './statistics.ts';
import type { SqlParam } from './statement-cache.ts';
import { CHUNK, parseBody, recordText, type StoreContext } from './store-context.ts';

/** Matches below this many are sorted from their bodies rather than found on a walk of the sort key's index. */
const SMALL_MATCH = 1000;
/**
 * Index rows a walk that checks bodies reads between checks that it still beats reading the keys
 * from the bodies of every match, which costs about as much per match as four rows of the walk.
 */
const WALK_CHECK = 5000;
/** Records whose bodies are read and checked together when the index does not decide the filter. */
const VERIFY_BATCH = 32;

/** Rows between the positions a walk under conditions keeps on its way to a page. */
const POSITION_STRIDE = 1000;
/** Matches between the positions a walk that checks bodies keeps (each costs a parse to reach). */
const CHECKED_STRIDE = 100;

/** Thrown inside a sorted index walk that has read more rows than its budget. */
class WalkTooLong extends Error {}

type SortItem = { id: string; keys: unknown[] };

function isIndexValue(v: unknown): v is IndexValue {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
}

/**
 * A page sorted by one indexed path (see the module comment). Matches without an entry sort as
 * null; the index's counts say when there are none. Undefined when the sort or a small match set
 * makes another way cheaper, when a walk that checks bodies reads more rows than its budget
 * before the page is complete, or when candidate ids are given.
 */
export function sortedIndexWalk(ctx: StoreContext, q: SortedPageQuery): Doc[] | undefined {
  // One snapshot of the file: the positions kept for it and the rows read agree. Rows kept across
  // requests are used only in a snapshot of committed data (not inside a caller's transaction).
  return ctx.db.inTransaction ? walkPage(ctx, q, false) : ctx.db.transaction(() => walkPage(ctx, q, true))();
}

/** What a sorted index walk of a query reads, when one applies (see `sortedIndexWalk`). */
interface WalkSetup {
  keys: Sort;
  path: string;
  predicate: (doc: Doc) => boolean;
  direction: 1 | -1;
  plan: IndexPlan;
  /** Whether record bodies must be checked: the index's conditions do not decide the filter. */
  residual: boolean;
  after: unknown[] | undefined;
  afterKey: unknown;
  afterRow: Row | undefined;
  skip: number;
  limit: number;
  walk: Walk;
}

function walkSetup(ctx: StoreContext, q: SortedPageQuery): WalkSetup | undefined {
  const { collection, filter, limit } = q;
  const keys = withIdTieBreaker(q.sort);
  if (limit === undefined || q.candidateIds !== undefined) return undefined;
  if (keys.length !== 2 || keys[1]![0] !== 'id' || keys[1]![1] !== 1) return undefined;
  const [path, direction] = keys[0]!;
  if (!INDEXED_PATHS.has(path)) return undefined;
  const predicate = compileFilter(filter);
  const plan = planIndex(filter);
  const keyOf = ctx.keys.of(collection);
  const params: SqlParam[] = [];
  const conds = conditionsSql('x', plan.conditions, params, keyOf);
  const empty = Object.keys(filter).length === 0;
  const residual = !empty && !(plan.exact && conds.complete);
  if (plan.conditions.some((c) => ctx.estimates.estimate(collection, c) < SMALL_MATCH)) return undefined;
  // Where the page starts: after the given keys, or after `skip` matches.
  const after = q.after !== undefined && q.after.length === 2 ? q.after : undefined;
  const afterKey = after?.[0];
  if (after && afterKey !== null && !isIndexValue(afterKey)) return undefined;
  const afterRow =
    after && afterKey !== null ? { value: afterKey as IndexValue, id: String(after[1]) } : undefined;
  const skip = after ? 0 : q.skip;
  const walk: Walk = {
    ctx,
    collection,
    path,
    key: keyOf(path),
    direction,
    params,
    conds: conds.sql,
    parsed: new Map(),
  };
  return {
    keys,
    path,
    predicate,
    direction,
    plan,
    residual,
    after,
    afterKey,
    afterRow,
    skip,
    limit,
    walk,
  };
}

/**
 * Whether a page of the walk is cut out of its kept rows (walk-prefixes.ts): under index
 * conditions that decide the filter, within the rows a walk keeps, in a snapshot of committed data.
 */
function keepsRows(s: WalkSetup): boolean {
  return (
    s.walk.conds !== '' &&
    s.walk.key !== NO_KEY &&
    !s.residual &&
    (s.after !== undefined || s.skip + s.limit <= PREFIX_ROWS)
  );
}

/** Whether kept rows hold a page: `limit` rows after `afterRow`, else `skip + limit` rows. */
function holdsPage(s: WalkSetup): (p: WalkPrefix) => boolean {
  const { afterRow, skip, limit, direction } = s;
  return (p) =>
    (afterRow ? p.rows.length - lowerBound(p.rows, afterRow, direction) : p.rows.length) >= skip + limit;
}

/**
 * Reads, taking turns with other requests, the rows of the walk a sorted page will be cut out of
 * (walk-prefixes.ts), so `sortedIndexWalk` finds them kept. Nothing to do for other pages.
 */
export async function prepareSortedIndexWalk(ctx: StoreContext, q: SortedPageQuery): Promise<void> {
  if (ctx.db.inTransaction) return;
  const s = walkSetup(ctx, q);
  if (!s || !keepsRows(s)) return;
  const { afterRow, direction } = s;
  const holds = holdsPage(s);
  await walkPrefixes(ctx).extend(
    s.walk,
    (p) => (afterRow !== undefined && !isKept(p, afterRow.value, direction)) || holds(p),
  );
}

function walkPage(ctx: StoreContext, q: SortedPageQuery, committed: boolean): Doc[] | undefined {
  const s = walkSetup(ctx, q);
  if (!s) return undefined;
  const { collection, filter } = q;
  const { statements } = ctx;
  const { keys, after, afterKey, afterRow, skip, limit, walk } = s;
  const { key } = walk;
  const prefix = committed && keepsRows(s) ? walkPrefixes(ctx).of(walk) : undefined;
  const isAfter = (item: SortItem) => !after || compareKeys(item.keys, after, keys) > 0;

  /** Records of `ids` (in order) that match the whole filter, their bodies parsed and kept. */
  const verify = (ids: string[]): Set<string> => {
    const passing = new Set<string>();
    if (ids.length === 0) return passing;
    const { bodyTest } = q;
    const rows = bodyTest
      ? (statements
          .get(
            'SELECT x.id AS id, x.body AS body FROM docs x WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))' +
              ` AND (${bodyTest.sql})`,
          )
          .all(collection, JSON.stringify(ids), ...bodyTest.params) as Array<{ id: string; body: string }>)
      : loadBodies(statements, collection, ids);
    for (const row of rows) {
      const doc = parseBody(ctx, row.body);
      if (s.predicate(doc)) {
        walk.parsed.set(row.id, doc);
        passing.add(row.id);
      }
    }
    return passing;
  };

  // Irregular records meeting the index's conditions: parsed, checked and sorted up front. Their
  // rows at the path are left out of the regular walk.
  const irregularRows = (
    key === NO_KEY
      ? []
      : statements
          .get(`SELECT x.id AS id, (1${walk.conds}) AS matches FROM attr_irregular x WHERE x.key = ?`)
          .all(...walk.params, key)
  ) as Array<{ id: string; matches: number }>;
  const records = recordCount(statements, collection);
  // Records with an entry or irregular at the path: the others sort as missing.
  const covered = coveredRecords(statements, key);
  const withoutEntriesCount = records - covered;
  const irregularItems: SortItem[] = [];
  /** The index rows (at the path) of irregular records meeting the conditions. */
  const irregularIndexRows: Row[] = [];
  const wanted = irregularRows.filter((r) => r.matches).map((r) => r.id);
  for (const row of loadBodies(statements, collection, wanted)) {
    const doc = parseBody(ctx, row.body);
    for (const [p, value] of indexRecord(doc).entries)
      if (p === s.path) irregularIndexRows.push({ value, id: row.id });
    if (!s.predicate(doc)) continue;
    walk.parsed.set(row.id, doc);
    const item = { id: row.id, keys: [sortKeyOf(doc, s.path, s.direction), row.id] };
    if (isAfter(item)) irregularItems.push(item);
  }
  const skipIds = new Set(irregularRows.map((r) => r.id));

  // Regular matches without entries: none, all of them in id order (no regular record has an
  // entry), or read once and merged with the irregular records.
  let lazyNulls: Generator<SortItem> | undefined;
  const others = irregularItems;
  if (withoutEntriesCount > 0 && !(after && afterKey !== null && s.direction === 1)) {
    const later = (id: string) => !after || afterKey !== null || id > String(after[1]);
    if (covered === irregularRows.length) {
      lazyNulls = (function* () {
        const chunkSize = Math.min(CHUNK, skip + limit + 1);
        for (const doc of matchesInIdOrder(ctx, { collection, filter, chunkSize })) {
          if (isPause(doc) || skipIds.has(doc.id) || !later(doc.id)) continue;
          walk.parsed.set(doc.id, doc);
          yield { id: doc.id, keys: [null, doc.id] };
        }
      })();
    } else {
      const ids = matchesWithoutEntries(ctx, collection, key, s.plan).filter(
        (id) => !skipIds.has(id) && later(id),
      );
      for (let i = 0; i < ids.length; i += VERIFY_BATCH) {
        const batch = ids.slice(i, i + VERIFY_BATCH);
        const passing = s.residual ? verify(batch) : undefined;
        for (const id of batch) if (!passing || passing.has(id)) others.push({ id, keys: [null, id] });
      }
    }
  }
  const sortedOthers = sortByKeys(others, keys);

  let page: string[] | undefined;
  try {
    if (lazyNulls) {
      // No record has an entry: the regular matches are the records in id order.
      page = mergePage(keys, lazyNulls, 0, sortedOthers, 0, skip, limit);
    } else if (after && afterKey === null && s.direction === -1) {
      // Every entry sorts before a missing key: only the others remain.
      page = mergePage(keys, [][Symbol.iterator](), 0, sortedOthers, 0, skip, limit);
    } else if (!s.residual) {
      page =
        (prefix && prefixPage(s, prefix, sortedOthers, irregularIndexRows, skipIds)) ??
        exactPage(walk, keys, sortedOthers, irregularIndexRows, skipIds, skip, limit, afterRow, after);
    } else {
      page = checkedPage(
        walk,
        keys,
        sortedOthers,
        skipIds,
        skip,
        limit,
        afterRow,
        after,
        records,
        verify,
        isAfter,
        filter,
      );
    }
  } catch (err) {
    if (err instanceof WalkTooLong) return undefined;
    throw err;
  }
  ctx.counters.sortedIndexWalks++;
  const { parsed } = walk;
  const missing = page.filter((id) => !parsed.has(id));
  const texts = new Map<string, Doc>();
  for (const row of loadBodies(statements, collection, missing)) {
    if (q.asText) texts.set(row.id, recordText(row.id, row.body));
    else parsed.set(row.id, parseBody(ctx, row.body));
  }
  return page.map((id) => parsed.get(id) ?? texts.get(id)!);
}

/**
 * The ids of the page: `regular` (in sort order, starting at position `regularBefore` among the
 * regular items) merged with `others` (sorted, from index `othersFrom`).
 */
function mergePage(
  keys: Sort,
  regular: Iterator<SortItem>,
  regularBefore: number,
  others: SortItem[],
  othersFrom: number,
  skip: number,
  limit: number,
): string[] {
  const page: string[] = [];
  let head: SortItem | undefined;
  let fetched = false;
  let next = othersFrom;
  const need = skip + limit;
  try {
    for (let position = regularBefore + othersFrom; position < need; position++) {
      if (!fetched) {
        const r = regular.next();
        head = r.done ? undefined : r.value;
        fetched = true;
      }
      const other = others[next];
      let item: SortItem;
      if (head && (!other || compareKeys(head.keys, other.keys, keys) <= 0)) {
        item = head;
        fetched = false;
      } else if (other) {
        item = other;
        next++;
      } else break;
      if (position >= skip) page.push(item.id);
    }
  } finally {
    regular.return?.(undefined);
  }
  return page;
}

/**
 * A page when the index decides the filter, cut out of the walk's kept rows (walk-prefixes.ts),
 * read further first when they fall short, and walked on past them when the page runs beyond.
 * As in `exactPage`, the page is merged from a row about `skip` rows in, short of it by as many
 * rows as the others and the irregular records' rows could take. Undefined when the page starts
 * after a row past the kept ones: the walk seeks there instead.
 */
function prefixPage(
  s: WalkSetup,
  p: WalkPrefix,
  others: SortItem[],
  irregularRows: Row[],
  skipIds: ReadonlySet<string>,
): string[] | undefined {
  const { walk: w, keys, skip, limit, afterRow, after } = s;
  if (afterRow && !isKept(p, afterRow.value, w.direction)) return undefined;
  if (p.served++ > 0) w.ctx.counters.walkPositionsReused++;
  walkPrefixes(w.ctx).extendNow(w, p, holdsPage(s));
  const { rows } = p;
  /** Regular items from the kept row at `from` on, then from the walk past the kept rows. */
  const regular = (from: number) =>
    (function* () {
      for (let i = from; i < rows.length; i++) {
        const row = rows[i]!;
        if (!skipIds.has(row.id)) yield { id: row.id, keys: [row.value, row.id] };
      }
      if (p.complete) return;
      for (const row of rowsPast(w, p.through))
        if (!skipIds.has(row.id)) yield { id: row.id, keys: [row.value, row.id] };
    })();
  if (after) {
    const items = regular(afterRow ? lowerBound(rows, afterRow, w.direction) : 0);
    const later = (function* () {
      for (const item of items) if (compareKeys(item.keys, after, keys) > 0) yield item;
    })();
    return mergePage(keys, later, 0, others, 0, skip, limit);
  }
  const fromStart = () => mergePage(keys, regular(0), 0, others, 0, skip, limit);
  const start = Math.max(0, skip - others.length - irregularRows.length);
  const first = rows[start];
  if (start === 0 || first === undefined) return fromStart();
  const regularBefore = start - irregularRows.filter((r) => compareRows(r, first, w.direction) < 0).length;
  return mergeFrom(keys, regular(start), regularBefore, others, skip, limit) ?? fromStart();
}

/**
 * A page when the index decides the filter: SQLite skips to about `skip` rows in, short of it by
 * as many rows as the others and the irregular records' rows could take, and the rest is merged
 * here. With `afterRow` the walk seeks there instead.
 */
function exactPage(
  w: Walk,
  keys: Sort,
  others: SortItem[],
  irregularRows: Row[],
  skipIds: ReadonlySet<string>,
  skip: number,
  limit: number,
  afterRow: Row | undefined,
  after: unknown[] | undefined,
): string[] {
  // Under conditions, rows failing them may lie before and between the matches: positions
  // found once are kept, and a later page starts from the nearest one.
  const positions = w.conds === '' ? undefined : w.ctx.checkpoints.of(walkName(w));
  /** Regular items from `from` (itself included when `including`) on. */
  const regular = (from: Row | undefined, including: boolean) =>
    (function* () {
      if (from && including && !skipIds.has(from.id)) yield { id: from.id, keys: [from.value, from.id] };
      let atStart = from === undefined;
      for (const row of rowsFrom(w, from)) {
        if (atStart) positions?.add(0, row);
        atStart = false;
        if (!skipIds.has(row.id)) yield { id: row.id, keys: [row.value, row.id] };
      }
    })();
  if (after) {
    // Everything before the page is left out: the walk seeks, the others were cut.
    const items = (function* () {
      for (const item of regular(afterRow, false)) if (compareKeys(item.keys, after, keys) > 0) yield item;
    })();
    return mergePage(keys, items, 0, others, 0, skip, limit);
  }
  const fromStart = () => {
    // The walk's first row, when known, is sought rather than reached over the rows failing.
    const zero = positions?.nearest(0)?.row;
    return mergePage(keys, regular(zero, zero !== undefined), 0, others, 0, skip, limit);
  };
  const start = Math.max(0, skip - others.length - irregularRows.length);
  if (start === 0) return fromStart();
  let known = positions?.nearest(start);
  // On the way to the page, a position every POSITION_STRIDE rows is kept for the pages between.
  while (positions && start - (known?.position ?? 0) > POSITION_STRIDE) {
    const position = (known?.position ?? 0) + POSITION_STRIDE;
    const row = rowAt(w, position, known);
    if (row === undefined) break;
    positions.add(position, row);
    known = { position, row };
  }
  const first = known?.position === start ? known.row : rowAt(w, start, known);
  if (first === undefined) return fromStart(); // the page is near the end: walk to it
  positions?.add(start, first);
  // Each regular item before `first` is before the page, and so is each other item before the
  // first regular item from `first` on (at most `start` + their number of positions in).
  const regularBefore = start - irregularRows.filter((r) => compareRows(r, first, w.direction) < 0).length;
  return mergeFrom(keys, regular(first, true), regularBefore, others, skip, limit) ?? fromStart();
}

/**
 * The page from regular items that start `regularBefore` regular items in, when every other
 * item before the first of them is before the page too: each other item sorting before that
 * first one is counted before it. Undefined when there are no such regular items.
 */
function mergeFrom(
  keys: Sort,
  regular: Generator<SortItem>,
  regularBefore: number,
  others: SortItem[],
  skip: number,
  limit: number,
): string[] | undefined {
  const head = regular.next();
  if (head.done) return undefined;
  let othersBefore = 0;
  while (othersBefore < others.length && compareKeys(others[othersBefore]!.keys, head.value.keys, keys) < 0)
    othersBefore++;
  const items = (function* () {
    yield head.value;
    yield* regular;
  })();
  return mergePage(keys, items, regularBefore, others, othersBefore, skip, limit);
}

/**
 * A page when bodies must be checked: the walk reads rows in key order from the start (or from
 * `afterRow`), checks records in batches, and gives up when it reads far more rows than matches.
 * Every CHECKED_STRIDE-th match it meets is kept with the number of matches before it, and a
 * later page of the same filter and order starts from the nearest one before it.
 */
function checkedPage(
  w: Walk,
  keys: Sort,
  others: SortItem[],
  skipIds: ReadonlySet<string>,
  skip: number,
  limit: number,
  afterRow: Row | undefined,
  after: unknown[] | undefined,
  records: number,
  verify: (ids: string[]) => Set<string>,
  isAfter: (item: SortItem) => boolean,
  filter: Filter,
): string[] {
  // Positions here count the matches of the whole filter before a row, not the rows.
  const positions = after ? undefined : w.ctx.checkpoints.of(`${walkName(w)} ${filterName(filter)}`);
  /** Matches in the walk's order from `known` (itself first) or from the start or `afterRow`. */
  const matches = (known: Checkpoint | undefined) =>
    (function* () {
      const need = skip + limit - (known?.position ?? 0);
      let rows = 0;
      let hits = 0;
      let pending: SortItem[] = [];
      const flush = function* () {
        const passing = verify(pending.map((p) => p.id));
        for (const item of pending) {
          if (!passing.has(item.id)) continue;
          const position = (known?.position ?? 0) + hits++;
          if (position % CHECKED_STRIDE === 0)
            positions?.add(position, { value: item.keys[0] as IndexValue, id: item.id });
          yield item;
        }
        pending = [];
      };
      if (known) pending.push({ id: known.row.id, keys: [known.row.value, known.row.id] });
      for (const row of rowsFrom(w, known?.row ?? afterRow)) {
        // Rows still to read at the match rate so far, against the matches of the collection at it.
        if (++rows % WALK_CHECK === 0 && need * rows * rows > 4 * hits * hits * records)
          throw new WalkTooLong();
        if (skipIds.has(row.id)) continue;
        const item = { id: row.id, keys: [row.value, row.id] };
        if (after && !isAfter(item)) continue;
        pending.push(item);
        if (pending.length >= VERIFY_BATCH) yield* flush();
      }
      yield* flush();
    })();
  const fromStart = () => mergePage(keys, matches(undefined), 0, others, 0, skip, limit);
  // Every other item may sort before the page: only matches that many before it are known to be.
  const known = positions?.nearest(skip - others.length);
  if (!known) return fromStart();
  // The kept match is the first item from it on; the others before it are before the page too.
  return mergeFrom(keys, matches(known), known.position, others, skip, limit) ?? fromStart();
}

/** A filter as the name of what it matches (regular expressions apart from strings). */
function filterName(filter: Filter): string {
  return JSON.stringify(filter, (_, v: unknown) =>
    v instanceof RegExp ? { $RegExp: [v.source, v.flags] } : v,
  );
}

/** Ids of the records meeting a plan's index conditions without an entry at the key's path, in id order (JavaScript's). */
function matchesWithoutEntries(
  ctx: StoreContext,
  collection: string,
  key: number,
  plan: IndexPlan,
): string[] {
  const { from, where, params } = candidateIdSql(ctx.estimates, collection, plan);
  const ids = ctx.statements
    .get(
      `SELECT DISTINCT x.id AS id FROM ${from} WHERE ${where.join(' AND ')}` +
        ' AND x.id NOT IN (SELECT id FROM attr_index WHERE key = ?)',
    )
    .all(...params, key) as Array<{ id: string }>;
  return ids.map((r) => r.id).sort();
}
