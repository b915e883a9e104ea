/**
 * Kept beginnings of sorted walks under conditions: for a walk of one path's index entries meeting
 * a filter's index conditions (index-walk-rows.ts), every row of its order up to a value, read once
 * and kept in order. A filter that correlates with the sort key (every `Terrestrial` record named
 * `Soil ...` or `Permafrost ...`) puts long runs of entries failing its conditions before and
 * between the matches; a page inside the kept rows is cut out of them instead of stepping over
 * those runs again, however deep it is.
 *
 * Rows are read in slices of about SLICE index entries (whole values), each slice in one snapshot
 * of the file, so a request that must read far takes turns with the others between slices
 * (`extend`). The kept rows stay exact across writes: each write enters the change log, and the
 * rows of the records written since are taken out and put back as the index now holds them
 * (`catchUp`); too many writes, a sweep of the log past the rows' sequence number or a commit by
 * another connection (SQLite's data version: a repair of the index by `npm run reindex` logs no
 * change) drop them instead. While a bulk load is under way (its index entries come after its
 * records) none are used. Memory is bounded: PREFIX_ROWS rows per walk, ROWS_KEPT in all.
 */
import { indexRecord, ODD_ID, type IndexValue } from './attribute-index.ts';
import { compareRows, compareSqliteValues, selectRows, type Row, type Walk } from './index-walk-rows.ts';
import { bodyOf } from './records.ts';
import { BULK_LOAD_KEY } from './bulk-load.ts';
import { onLoopTimer, readOnThread } from './read-threads.ts';
import type { SqlParam } from './statement-cache.ts';
import { parseBody, type StoreContext } from './store-context.ts';

/** Rows one walk keeps at most: the deepest page the listings allow (10,000 records in) fits. */
export const PREFIX_ROWS = 25_000;
/** Rows all kept walks hold together at most; the least recently used walk goes first. */
const ROWS_KEPT = 200_000;
/** Time slices of one walk take in a turn on the event loop at most, before the slice that passes it, ms. */
const TURN_MS = 10;
/** Walks kept at most. */
const WALKS_KEPT = 64;
/** Index entries (beyond the last value's) one slice of a walk passes over at most. */
export const SLICE = 4000;
/** Rows the first slice of a walk reads at most (beyond one value's). */
const FIRST_ROWS = 64;
/** Rows any slice reads at most (beyond one value's): each costs a few microseconds to hand over. */
const SLICE_ROWS = 2000;
/** Records written since a prefix was read that are caught up at most; beyond, it is read again. */
const CATCH_UP = 1000;

/** What the kept rows were read against: the change log's last number, the data version, a bulk load's mark. */
interface Token {
  seq: number;
  version: number;
  bulk: string;
}

/** The kept beginning of one walk. */
export interface WalkPrefix {
  /** Every row of the walk's order with a value up to `through` (in its direction), in order. */
  readonly rows: Row[];
  /** The last value whose rows are all kept; undefined before the first slice. */
  through: IndexValue | undefined;
  /** Whether the rows are the whole walk. */
  complete: boolean;
  /** Whether the rows reached PREFIX_ROWS and are read no further. */
  full: boolean;
  /** Pages cut out of these rows so far. */
  served: number;
  /** The values of each record among the rows. */
  readonly values: Map<string, IndexValue[]>;
  token: Token;
}

/** The first index of `rows` whose row is not before `row` in the walk's order. */
export function lowerBound(rows: Row[], row: Row, direction: 1 | -1): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareRows(rows[mid]!, row, direction) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether a value is within the rows a prefix holds. */
export function isKept(p: WalkPrefix, value: IndexValue, direction: 1 | -1): boolean {
  return p.complete || (p.through !== undefined && compareSqliteValues(value, p.through) * direction <= 0);
}

/** What names a walk: its collection, path's key, direction and index conditions. */
export function walkName(w: Walk): string {
  return `${w.key} ${w.direction} ${w.conds} ${JSON.stringify(w.params)}`;
}

/** The kept rows of each store (its context). */
const ofStore = new WeakMap<StoreContext, WalkPrefixes>();

/** How a store reads and keeps its walks' rows; smaller figures in tests. */
export interface WalkPrefixOptions {
  /** Index entries one slice passes over at most (SLICE). */
  slice?: number;
  /** Rows one walk keeps at most (PREFIX_ROWS). */
  rowsPerWalk?: number;
  /** Time one turn of slices takes at most before the slice that passes it (TURN_MS). */
  turnMs?: number;
}

/** Starts keeping walks' first rows for a store. */
export function keepWalkPrefixes(ctx: StoreContext, options: WalkPrefixOptions = {}): void {
  ofStore.set(ctx, new WalkPrefixes(options));
}

/** The kept first rows of a store's sorted walks. */
export function walkPrefixes(ctx: StoreContext): WalkPrefixes {
  let prefixes = ofStore.get(ctx);
  if (!prefixes) {
    prefixes = new WalkPrefixes();
    ofStore.set(ctx, prefixes);
  }
  return prefixes;
}

export class WalkPrefixes {
  private readonly kept = new Map<string, WalkPrefix>();

  private readonly slice: number;
  private readonly rowsPerWalk: number;
  private readonly turnMs: number;

  constructor(options: WalkPrefixOptions = {}) {
    this.slice = options.slice ?? SLICE;
    this.rowsPerWalk = options.rowsPerWalk ?? PREFIX_ROWS;
    this.turnMs = options.turnMs ?? TURN_MS;
  }

  /**
   * The kept rows of a walk, caught up with the writes since they were read, created empty when
   * none are kept; undefined while a bulk load is under way. Call inside a read transaction.
   */
  of(w: Walk): WalkPrefix | undefined {
    const token = this.token(w);
    if (token.bulk !== '') return undefined;
    const name = walkName(w);
    let p = this.kept.get(name);
    if (p) {
      this.kept.delete(name);
      if (!this.catchUp(w, p, token)) p = undefined;
    }
    p ??= { rows: [], through: undefined, complete: false, full: false, served: 0, values: new Map(), token };
    this.kept.set(name, p);
    return p;
  }

  /**
   * Reads slices of the walk into its kept rows until `enough` says they hold what a page needs,
   * the walk ends or the rows are full, taking a turn on the event loop after TURN_MS, each turn's
   * slices in a snapshot of their own.
   */
  async extend(w: Walk, enough: (p: WalkPrefix) => boolean): Promise<void> {
    const { db } = w.ctx;
    for (;;) {
      // A cold collection: a reading thread reads the next slice first, so that the one read
      // here (in this snapshot, for the kept rows) finds its pages in the OS cache; one a turn.
      const cold = w.ctx.readers?.warmth.cold(w.collection) ?? false;
      if (cold) await this.readAhead(w, enough);
      const more = db.transaction(() => {
        const p = this.of(w);
        const start = performance.now();
        do {
          if (!p || p.complete || p.full || enough(p)) return false;
          this.readSlice(w, p);
        } while (!cold && performance.now() - start < this.turnMs);
        return true;
      })();
      if (!more) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.trim();
  }

  /**
   * Runs the statements of the walk's next slice, as its kept rows stand now, on a reading
   * thread, their rows dropped. Their pages are then in the OS cache for `readSlice`: at 10^6 on
   * a cold file a slice under a filter's conditions held the loop 59-86 ms.
   */
  private async readAhead(w: Walk, enough: (p: WalkPrefix) => boolean): Promise<void> {
    const p = this.kept.get(walkName(w));
    // Rows kept already (perhaps before writes the transaction will catch them up with) that hold
    // the page, or all there are: nothing to read ahead.
    if (p && (p.complete || p.full || enough(p))) return;
    const through = p?.through;
    const bound = this.boundStatement(w, through);
    // Both count as evidence of the collection's warmth (`of`), a slice being a few milliseconds warm.
    const of = { collection: w.collection, reads: 0 };
    const [upTo] = (await readOnThread(w.ctx, bound.sql, bound.params, true, of)) ?? [];
    const rows = this.rowsStatement(w, through, upTo as IndexValue | undefined, this.mostRows(p));
    await readOnThread(w.ctx, rows.sql, rows.params, false, of);
  }

  /** The statement of the value about SLICE index entries after `through` (from the start when undefined). */
  private boundStatement(w: Walk, through: IndexValue | undefined): { sql: string; params: SqlParam[] } {
    const asc = w.direction === 1;
    const after = through === undefined ? '' : asc ? ' AND x.value > ?' : ' AND x.value < ?';
    return {
      sql: `SELECT x.value FROM attr_index x WHERE x.key = ?${after} ORDER BY x.value${asc ? '' : ' DESC'} LIMIT 1 OFFSET ${this.slice}`,
      params: [w.key, ...(through === undefined ? [] : [through])],
    };
  }

  /**
   * The statement of the rows after `through` up to `upTo` (to the end when undefined), at most
   * `limit` of them (a parameter: one statement), in the index's order or its reverse: a
   * descending walk turns each value's ids around afterwards, which costs less than SQLite
   * sorting them.
   */
  private rowsStatement(
    w: Walk,
    through: IndexValue | undefined,
    upTo: IndexValue | undefined,
    limit?: number,
  ): { sql: string; params: SqlParam[] } {
    const asc = w.direction === 1;
    const order = asc ? '' : ' DESC';
    const after = through === undefined ? '' : asc ? ' AND x.value > ?' : ' AND x.value < ?';
    return {
      sql:
        `${selectRows(w)}${after}${upTo === undefined ? '' : asc ? ' AND x.value <= ?' : ' AND x.value >= ?'}` +
        ` ORDER BY x.value${order}, x.id${order}${limit === undefined ? '' : ' LIMIT +?'}`,
      params: [
        w.key,
        ...w.params,
        ...(through === undefined ? [] : [through]),
        ...(upTo === undefined ? [] : [upTo]),
        ...(limit === undefined ? [] : [limit]),
      ],
    };
  }

  /** Rows the next slice reads at most (one more tells whether its last value goes on). */
  private mostRows(p: WalkPrefix | undefined): number {
    return Math.min(SLICE_ROWS, Math.max(FIRST_ROWS, p?.rows.length ?? 0)) + 1;
  }

  /** `extend` without taking turns, inside the caller's transaction. */
  extendNow(w: Walk, p: WalkPrefix, enough: (p: WalkPrefix) => boolean): void {
    while (!p.complete && !p.full && !enough(p)) this.readSlice(w, p);
    this.trim();
  }

  /**
   * Reads the next slice: the values after `through` up to about SLICE index entries on, or fewer
   * values when their rows would be more than the rows kept so far (at least FIRST_ROWS, at most
   * SLICE_ROWS): a first page reads few rows, a deep one doubles what it holds with each slice.
   */
  private readSlice(w: Walk, p: WalkPrefix): void {
    const took = onLoopTimer(w.ctx.readers, w.collection);
    const { statements } = w.ctx;
    const asc = w.direction === 1;
    const b = this.boundStatement(w, p.through);
    const bound = statements
      .get(b.sql)
      .pluck()
      .get(...b.params) as IndexValue | undefined;
    const most = this.mostRows(p) - 1;
    const read = (upTo: IndexValue | undefined, limit?: number) => {
      const r = this.rowsStatement(w, p.through, upTo, limit);
      return statements.get(r.sql).all(...r.params) as Row[];
    };
    let rows = read(bound, most + 1);
    let through = bound;
    if (rows.length > most) {
      // The last value read may have more rows: only the values before it are kept whole, or,
      // when the rows are all of one value, that value is read whole.
      const last = rows[rows.length - 1]!.value;
      let end = rows.length - 1;
      while (end > 0 && rows[end - 1]!.value === last) end--;
      if (end > 0) rows.length = end;
      else rows = read(last);
      through = rows[rows.length - 1]!.value;
    }
    if (!asc) idsAscending(rows);
    for (const row of rows) {
      p.rows.push(row);
      addValue(p, row);
    }
    if (through === undefined) p.complete = true;
    else p.through = through;
    if (p.rows.length > this.rowsPerWalk) this.cut(p);
    took();
  }

  /** Keeps the whole values among the first `rowsPerWalk` rows, and reads no further. */
  private cut(p: WalkPrefix): void {
    let end = this.rowsPerWalk;
    while (end > 0 && p.rows[end - 1]!.value === p.rows[end]!.value) end--;
    for (const row of p.rows.splice(end)) removeValue(p, row);
    p.complete = false;
    p.full = true;
    p.through = end > 0 ? p.rows[end - 1]!.value : undefined;
  }

  /** Drops the least recently used walks while there are more than WALKS_KEPT or ROWS_KEPT rows. */
  private trim(): void {
    let total = 0;
    for (const p of this.kept.values()) total += p.rows.length;
    for (const [name, p] of this.kept) {
      if (total <= ROWS_KEPT && this.kept.size <= WALKS_KEPT) break;
      total -= p.rows.length;
      this.kept.delete(name);
    }
  }

  private token(w: Walk): Token {
    return w.ctx.statements
      .get(
        "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0) AS seq, " +
          '(SELECT data_version FROM pragma_data_version()) AS version, ' +
          "coalesce((SELECT value FROM meta WHERE key = ?), '') AS bulk",
      )
      .get(BULK_LOAD_KEY) as Token;
  }

  /**
   * Brings kept rows up to the writes logged since they were read: each record written since
   * leaves the rows, and comes back with the entries the index holds for it now that meet the
   * conditions and fall within the kept values. False when the rows must be read again instead.
   */
  private catchUp(w: Walk, p: WalkPrefix, now: Token): boolean {
    const was = p.token;
    if (was.version !== now.version || was.bulk !== now.bulk || now.seq < was.seq) return false;
    if (now.seq === was.seq) return true;
    const { statements } = w.ctx;
    const pruned = Number(
      statements.get("SELECT value FROM meta WHERE key = 'changes_pruned_through'").pluck().get() ?? 0,
    );
    if (pruned > was.seq) return false;
    const changes = statements
      .get('SELECT collection, id FROM changes WHERE seq > ? ORDER BY seq LIMIT +?')
      .all(was.seq, CATCH_UP + 1) as Array<{ collection: string; id: string }>;
    if (changes.length > CATCH_UP) return false;
    const ids = new Set(changes.filter((c) => c.collection === w.collection).map((c) => c.id));
    const entry = statements.get(`${selectRows(w)} AND x.value = ? AND x.id = ?`);
    // An id SQLite may hold otherwise than JavaScript binds it cannot be looked up exactly.
    if ([...ids].some((id) => ODD_ID.test(id))) return false;
    for (const id of ids) {
      for (const value of p.values.get(id) ?? []) {
        const at = lowerBound(p.rows, { value, id }, w.direction);
        if (p.rows[at]?.id !== id || p.rows[at]!.value !== value) return false;
        p.rows.splice(at, 1);
      }
      p.values.delete(id);
      const body = bodyOf(statements, w.collection, id);
      if (body === undefined) continue;
      for (const [path, value] of indexRecord(parseBody(w.ctx, body)).entries) {
        if (path !== w.path || !isKept(p, value, w.direction)) continue;
        const row = entry.get(w.key, ...w.params, value, id) as Row | undefined;
        if (!row) continue;
        p.rows.splice(lowerBound(p.rows, row, w.direction), 0, row);
        addValue(p, row);
      }
    }
    p.token = now;
    return true;
  }
}

/** Turns around each value's run of rows (ids descending) so its ids ascend. */
function idsAscending(rows: Row[]): void {
  for (let start = 0; start < rows.length;) {
    let end = start + 1;
    while (end < rows.length && rows[end]!.value === rows[start]!.value) end++;
    for (let i = start, j = end - 1; i < j; i++, j--) [rows[i], rows[j]] = [rows[j]!, rows[i]!];
    start = end;
  }
}

function addValue(p: WalkPrefix, row: Row): void {
  const values = p.values.get(row.id);
  if (values) values.push(row.value);
  else p.values.set(row.id, [row.value]);
}

function removeValue(p: WalkPrefix, row: Row): void {
  const values = p.values.get(row.id)!;
  values.splice(values.indexOf(row.value), 1);
  if (values.length === 0) p.values.delete(row.id);
}
