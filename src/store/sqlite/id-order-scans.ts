/**
 * Scans that hand out a filter's matches in id order, chunk by chunk, so a caller can stop after
 * a page: three ways to find the candidates (every record, the caller's candidate ids, the
 * attribute index), each checked by the compiled filter unless the index decides it exactly.
 */
import { compileFilter } from '../filter.ts';
import type { BodyTestSql, Doc, ExecutionStats, Filter } from '../port.ts';
import { planIndex } from './attribute-index.ts';
import { candidateIdSql, conditionsSql, NO_CONDITIONS, type CandidateIds } from './attribute-plans.ts';
import { compareCodePoints } from './index-walk-rows.ts';
import { BODIES_OF_IDS } from './records.ts';
import type { IdOrderStrategy } from './page-queries.ts';
import type { SqlParam } from './statement-cache.ts';
import { CHUNK, parseBody, recordText, type Row, type StoreContext } from './store-context.ts';
import { textTestOf } from './text-regex-test.ts';
import { OffLoopRead, ON_LOOP_ROWS, scanRows } from './read-threads.ts';
import { Turns } from '../../turns.ts';

/**
 * Scans read in chunks with no statement left open between records, so they can pause between
 * records: the scan offers PAUSE, and a reader outside a transaction takes a turn when one is due
 * (`Turns`). The record scan offers a pause after every PAUSE_EVERY + 1 records it tests.
 */
const PAUSE_EVERY = 63;
export const PAUSE = Symbol('pause');
/** What a scan yields besides records: a place to take a turn, or a read for its driver to run. */
export type Pause = typeof PAUSE | OffLoopRead;

/** True for what a scan yields that is not a record (a driver that does not wait passes it over). */
export const isPause = (item: Doc | Pause): item is Pause => item === PAUSE || item instanceof OffLoopRead;

export interface IdOrderQuery {
  collection: string;
  filter: Filter;
  /** Restrict to these ids (from the search index). */
  candidateIds?: Iterable<string>;
  /** Only records with an id greater than this. */
  afterId?: string;
  /** Records read per statement: about a page, so a small page reads little. */
  chunkSize: number;
  /**
   * Matches the caller stops after (skip + limit; undefined: every one). A body-tested walk asks
   * SQLite for no more rows than are still missing, so the test is not run on rows past the page.
   */
  need?: number;
  /**
   * 'id-walk' only: SQL on `x.body` every match passes (the planner's body test); records that
   * fail it are skipped without being parsed.
   */
  bodyTest?: BodyTestSql;
  /** Counts what the scan reads (explain's executionStats). */
  stats?: ExecutionStats;
  /**
   * The caller keeps only `id`: where the candidates alone decide (no condition left to test),
   * records are handed out as `{ id }` without their text being read or parsed.
   */
  idsOnly?: boolean;
  /**
   * The caller answers records whole and reads nothing of them but `id` (FindOptions.asText):
   * matches are handed out as RecordText, and only those the filter's test needs are parsed.
   */
  asText?: boolean;
}

type Test = (doc: Doc) => boolean;
const ALWAYS: Test = () => true;
/** The filter's test; ALWAYS for the empty filter, which every record passes unread. */
const testOf = (filter: Filter): Test => (Object.keys(filter).length === 0 ? ALWAYS : compileFilter(filter));

/**
 * Parses each row, yields the records `test` passes, and offers PAUSE every PAUSE_EVERY + 1
 * records. With `filter`, rows whose text fails its top-level `$regex` conditions
 * (text-regex-test.ts) are passed over unparsed. With `asText`, a match is yielded as its
 * RecordText, parsed only when `test` must read it.
 */
function* verified(
  ctx: StoreContext,
  chunks: Iterable<Row[] | OffLoopRead>,
  test: Test,
  { stats, asText }: Pick<IdOrderQuery, 'stats' | 'asText'>,
  filter?: Filter,
): Generator<Doc | Pause> {
  const textTest = filter && test !== ALWAYS ? textTestOf(filter) : undefined;
  const unparsed = asText === true && test === ALWAYS;
  let tested = 0;
  for (const rows of chunks) {
    if (rows instanceof OffLoopRead) {
      yield rows; // the driver reads them on a thread
      continue;
    }
    if (rows.length === 0) yield PAUSE; // the scan read records that none passed
    for (const row of rows) {
      if (stats) stats.docsExamined++;
      if (unparsed) yield recordText(row.id, row.body);
      else {
        const read = textTest === undefined ? 'parse' : textTest(row.body);
        if (read === 'yes' && asText === true) yield recordText(row.id, row.body);
        else if (read !== 'no') {
          if (stats) stats.docsParsed++;
          const doc = parseBody(ctx, row.body);
          if (test(doc)) yield asText ? recordText(row.id, row.body) : doc;
        }
      }
      if ((++tested & PAUSE_EVERY) === 0) yield PAUSE;
    }
  }
}

/** 'candidate-ids': the caller's candidates, index conditions checked in SQL where it can. */
export function* candidateIdsScan(ctx: StoreContext, q: IdOrderQuery): Generator<Doc | Pause> {
  const predicate = testOf(q.filter);
  const plan = planIndex(q.filter);
  const { collection, afterId, chunkSize } = q;
  const sorted = [...new Set(q.candidateIds ?? [])]
    .filter((id) => afterId === undefined || id > afterId)
    .sort();
  const params: SqlParam[] = [];
  const conds = conditionsSql('x', plan.conditions, params, ctx.keys.of(collection));
  const sql =
    'SELECT x.id AS id, x.body AS body FROM docs x WHERE x.collection = ? AND x.id IN (SELECT value FROM json_each(?))' +
    conds.sql +
    ' ORDER BY x.id';
  function* chunks(): Generator<Row[] | OffLoopRead> {
    for (let i = 0; i < sorted.length; i += chunkSize) {
      const ids = JSON.stringify(sorted.slice(i, i + chunkSize));
      yield (yield* scanRows(ctx, sql, [collection, ids, ...params], {
        collection,
        reads: chunkSize,
      })) as Row[];
    }
  }
  if (q.stats) q.stats.keysExamined += sorted.length;
  yield* verified(ctx, chunks(), plan.exact && conds.complete ? ALWAYS : predicate, q, q.filter);
}

/** The ids a statement answers (its only column). */
const idsOf = (ctx: StoreContext, sql: string, params: SqlParam[]) =>
  ctx.statements.plucked(sql).all(...params) as string[];

/**
 * The ids of a candidate-id SQL after `afterId`, in id order, a chunk at a time: a statement per
 * chunk when they come in id order (the first asking for `first` ids); otherwise sorted once up
 * front, which beats re-sorting them for every chunk.
 */
function* idChunks(
  ctx: StoreContext,
  q: IdOrderQuery,
  candidates: CandidateIds,
  first = q.chunkSize,
): Generator<string[]> {
  const { from, where, params, ordered, perValue } = candidates;
  // In id order (the records' own key, or one value of an attribute), each id comes once.
  const distinct = ordered ? '' : 'DISTINCT ';
  const sql = `SELECT ${distinct}x.id AS id FROM ${from} WHERE ${where.join(' AND ')} AND x.id > ? ORDER BY x.id`;
  if (!ordered && perValue) {
    yield* mergedChunks(ctx, q, from, perValue);
    return;
  }
  if (!ordered) {
    const ids = idsOf(ctx, sql, [...params, q.afterId ?? '']);
    for (let i = 0; i < ids.length; i += q.chunkSize) yield ids.slice(i, i + q.chunkSize);
    return;
  }
  let cursor = q.afterId ?? '';
  let limit = first;
  for (;;) {
    const ids = idsOf(ctx, `${sql} LIMIT +?`, [...params, cursor, limit]);
    if (ids.length > 0) yield ids;
    if (ids.length < limit) return;
    cursor = ids[ids.length - 1]!;
    limit = q.chunkSize;
  }
}

/**
 * The candidate ids of several SQL statements (a driving `$in`, value by value), each read in id
 * order a chunk at a time and merged, each id once: a page reads about a page of each, where one
 * statement over all the values sorts every candidate first (70,000 of 10^5 biosamples: 70 ms
 * with nothing else answered; ten times that at 10^6).
 */
function* mergedChunks(
  ctx: StoreContext,
  q: IdOrderQuery,
  from: string,
  parts: Array<{ where: string[]; params: SqlParam[] }>,
): Generator<string[]> {
  const streams = parts.map(({ where, params }) => ({
    sql: `SELECT x.id AS id FROM ${from} WHERE ${where.join(' AND ')} AND x.id > ? ORDER BY x.id LIMIT +?`,
    params,
    ids: [] as string[],
    at: 0,
    cursor: q.afterId ?? '',
    done: false,
  }));
  let out: string[] = [];
  let last: string | undefined;
  for (;;) {
    let next: (typeof streams)[number] | undefined;
    for (const s of streams) {
      if (s.at === s.ids.length && !s.done) {
        s.ids = idsOf(ctx, s.sql, [...s.params, s.cursor, q.chunkSize]);
        s.at = 0;
        s.done = s.ids.length < q.chunkSize;
        if (s.ids.length > 0) s.cursor = s.ids[s.ids.length - 1]!;
      }
      if (s.at < s.ids.length && (!next || compareCodePoints(s.ids[s.at]!, next.ids[next.at]!) < 0)) next = s;
    }
    if (!next) break;
    const id = next.ids[next.at++]!;
    if (id === last) continue;
    last = id;
    out.push(id);
    if (out.length === q.chunkSize) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}

/**
 * Reads the records of a candidate-id SQL in id order and checks them with `test`. A walk of the
 * records table in id order reads ids and bodies in one statement per chunk. Where the candidates decide
 * (`test` is ALWAYS) and the caller keeps only ids, records are handed out as `{ id }`, their text
 * never read, with a pause after each chunk.
 */
function* candidatesScan(
  ctx: StoreContext,
  q: IdOrderQuery,
  candidates: CandidateIds,
  test: Test,
): Generator<Doc | Pause> {
  const { collection, afterId, chunkSize } = q;
  const { from, where, params } = candidates;
  // Where every candidate is a match, the first statement reads the caller's matches and no more
  // (a page of 25 and the one after it: 26 records, not 32).
  const first = test === ALWAYS && q.need !== undefined && q.need < chunkSize ? q.need : chunkSize;
  if (q.idsOnly && test === ALWAYS) {
    for (const ids of idChunks(ctx, q, candidates, first)) {
      if (q.stats) q.stats.docsExamined += ids.length;
      for (const id of ids) yield { id };
      yield PAUSE;
    }
    return;
  }
  function* walkedChunks(): Generator<Row[] | OffLoopRead> {
    const sql = `SELECT x.id AS id, x.body AS body FROM ${from} WHERE ${where.join(' AND ')} AND x.id > ? ORDER BY x.id LIMIT +?`;
    let cursor = afterId ?? '';
    let limit = first;
    for (;;) {
      const rows = (yield* scanRows(ctx, sql, [...params, cursor, limit], {
        collection,
        reads: limit,
      })) as Row[];
      if (rows.length === 0) return;
      yield rows;
      if (rows.length < limit) return;
      cursor = rows[rows.length - 1]!.id;
      limit = chunkSize;
    }
  }
  function* loadedChunks(): Generator<Row[] | OffLoopRead> {
    for (const ids of idChunks(ctx, q, candidates, first))
      yield (yield* scanRows(ctx, BODIES_OF_IDS, [collection, JSON.stringify(ids)], {
        collection,
        reads: ids.length,
      })) as Row[];
  }
  const inline = candidates.ordered && from === 'docs x';
  yield* verified(ctx, inline ? walkedChunks() : loadedChunks(), test, q, q.filter);
}

/** 'id-walk': every record of the collection in id order, each checked by the filter. */
export function* idWalk(ctx: StoreContext, q: IdOrderQuery): Generator<Doc | Pause> {
  const predicate = testOf(q.filter);
  if (q.bodyTest) {
    // Rows that pass the body test mostly hold the regex's string too; the text test still spares
    // parsing them when it decides the filter alone.
    yield* verified(ctx, bodyTestedRanges(ctx, q, q.bodyTest), predicate, q, q.filter);
    return;
  }
  yield* candidatesScan(ctx, q, candidateIdSql(ctx.estimates, q.collection, NO_CONDITIONS), predicate);
}

/** Records a body-tested walk reads per statement at first; each range doubles it, up to RANGE_MAX. */
const RANGE_FIRST = 256;
const RANGE_MAX = 8192;

/**
 * The first range of a body-tested walk: twice the records in which `need` pass at the share the
 * planner expects to pass (`pass`), at least RANGE_FIRST, at most what a statement reads on the
 * event loop. Ids are spread evenly over what records hold, so a page is mostly found in one
 * statement: `geo_loc_name ~ /Toolik/` (a tenth of 10^6 biosamples) found 22 of its 26 records in
 * 256 ids, and took a second statement and boundary for the other 4.
 */
export function firstRange(need: number | undefined, pass: number | undefined): number {
  if (need === undefined || !Number.isFinite(need) || pass === undefined || !(pass > 0)) return RANGE_FIRST;
  return Math.min(ON_LOOP_ROWS, Math.max(RANGE_FIRST, Math.ceil((2 * need) / pass)));
}

/**
 * The rows of a walk in id order whose stored text passes `test`, in ranges of ids: a statement
 * reads at most one range (the id RANGE rows ahead bounds it), so a test that few records pass
 * cannot hold a reader for the whole collection, and turns are taken between ranges. Ranges
 * grow as the walk goes on: a page of a broad predicate ends in the first one. The larger ranges'
 * statements run on a reading thread (`scanRows`): 8,192 bodies took 391-547 ms on a cold file at
 * 10^6.
 */
function* bodyTestedRanges(
  ctx: StoreContext,
  q: IdOrderQuery,
  test: BodyTestSql,
): Generator<Row[] | OffLoopRead> {
  const { collection, chunkSize, stats } = q;
  const boundary = 'SELECT id FROM docs WHERE collection = ? AND id > ? ORDER BY id LIMIT 1 OFFSET ?';
  const within = `SELECT x.id AS id, x.body AS body FROM docs x WHERE x.collection = ? AND x.id > ? AND x.id <= ? AND (${test.sql}) ORDER BY x.id LIMIT +?`;
  const beyond = `SELECT x.id AS id, x.body AS body FROM docs x WHERE x.collection = ? AND x.id > ? AND (${test.sql}) ORDER BY x.id LIMIT +?`;
  const rowsBetween = 'SELECT count(*) AS n FROM docs WHERE collection = ? AND id > ? AND id <= ?';
  let from = q.afterId ?? '';
  let range = firstRange(q.need, test.pass);
  // Rows handed out so far: most pass the filter too, so the page misses about `need` less these.
  // Once that many were handed out and more are asked for, the filter refused some: each further
  // statement asks for twice as many as the one before.
  let passed = 0;
  let extra = 1;
  for (;;) {
    const bound = (
      (yield* scanRows(ctx, boundary, [collection, from, range - 1], { collection, reads: range })) as Array<{
        id: string;
      }>
    )[0]?.id;
    let cursor = from;
    for (;;) {
      const missing = (q.need ?? Infinity) - passed;
      const limit = Math.min(chunkSize, missing > 0 ? missing : extra);
      if (missing <= 0) extra *= 2;
      const rows = (yield* scanRows(
        ctx,
        bound === undefined ? beyond : within,
        bound === undefined
          ? [collection, cursor, ...test.params, limit]
          : [collection, cursor, bound, ...test.params, limit],
        { collection, reads: range },
      )) as Row[];
      passed += rows.length;
      const last = rows.length > 0 ? rows[rows.length - 1]!.id : undefined;
      const rangeDone = rows.length < limit;
      // Records skipped by the test count as examined (explain only: it costs a count).
      if (stats) {
        const upTo = (rangeDone ? bound : last) ?? '\u{10FFFF}';
        const [{ n }] = (yield* scanRows(ctx, rowsBetween, [collection, cursor, upTo], {
          collection,
          reads: range,
        })) as [{ n: number }];
        stats.docsExamined += n - rows.length;
      }
      if (rows.length > 0) yield rows;
      if (rangeDone) break;
      cursor = last!;
    }
    if (bound === undefined) return;
    from = bound;
    range = Math.min(range * 2, RANGE_MAX);
    yield []; // a place for the caller to take a turn between ranges
  }
}

/** 'attribute-index': candidates read off the index by the filter's most selective condition. */
export function* attributeIndexScan(ctx: StoreContext, q: IdOrderQuery): Generator<Doc | Pause> {
  const predicate = testOf(q.filter);
  const plan = planIndex(q.filter);
  const candidates = candidateIdSql(ctx.estimates, q.collection, plan);
  yield* candidatesScan(ctx, q, candidates, plan.exact && candidates.complete ? ALWAYS : predicate);
}

/**
 * Matching records in id order, after `afterId`, parsed chunk by chunk so callers can stop early.
 * `served` learns which strategy the scan chose before the first record is read.
 */
export function* matchesInIdOrder(
  ctx: StoreContext,
  q: IdOrderQuery,
  served?: (strategy: IdOrderStrategy) => void,
): Generator<Doc | Pause> {
  if (q.candidateIds !== undefined) {
    served?.('candidate-ids');
    yield* candidateIdsScan(ctx, q);
    return;
  }
  const predicate = testOf(q.filter);
  const plan = planIndex(q.filter);
  let candidates = candidateIdSql(ctx.estimates, q.collection, plan);
  let test = plan.exact && candidates.complete ? ALWAYS : predicate;
  if (!candidates.ordered && q.chunkSize < CHUNK && ctx.estimates.isBroad(q.collection, candidates.driver!)) {
    // A few matches of a broad range turn up sooner walking records in id order than
    // sorting every candidate id first.
    candidates = candidateIdSql(ctx.estimates, q.collection, NO_CONDITIONS);
    test = predicate;
  }
  served?.(candidates.from === 'docs x' ? 'id-walk' : 'attribute-index');
  yield* candidatesScan(ctx, q, candidates, test);
}

/**
 * Hands every match, in id order, to `visit` until it returns true, taking the scan's pauses
 * when a turn is due (see Turns). Not for use inside a transaction.
 */
export async function eachMatch(
  ctx: StoreContext,
  q: IdOrderQuery,
  visit: (doc: Doc) => boolean | void,
  served?: (strategy: IdOrderStrategy) => void,
): Promise<void> {
  await visitMatches(matchesInIdOrder(ctx, q, served), visit);
}

/** Hands a scan's matches to `visit` until it returns true, taking the scan's pauses when a turn is due. */
export async function visitMatches(
  matches: Iterable<Doc | Pause>,
  visit: (doc: Doc) => boolean | void,
): Promise<void> {
  const turns = new Turns();
  for (const doc of matches) {
    if (doc instanceof OffLoopRead) {
      await doc.run();
      turns.restart();
    } else if (doc === PAUSE) {
      if (turns.due()) await turns.give();
    } else if (visit(doc)) return;
  }
}
