/**
 * The rows a sorted index walk reads: one indexed path's entries (`attr_index`) in the walk's
 * order (value ascending or descending, id ascending, as SQLite orders them), from the start, from
 * a row or from a position, each row meeting the index's conditions. sorted-index-walk.ts merges
 * them into pages.
 */
import type { Doc } from '../port.ts';
import { ODD_ID, type IndexValue } from './attribute-index.ts';
import type { SqlParam } from './statement-cache.ts';
import type { StoreContext } from './store-context.ts';
import type { Checkpoint } from './walk-checkpoints.ts';

/**
 * Rows of one value a descending walk keeps to hand them out in id order; a value with more is
 * read again in id order by a statement of its own.
 */
const GROUP_BUFFER = 256;

/** One entry of the index: its value and its record's id. */
export type Row = { value: IndexValue; id: string };

/** Text in SQLite's order (by code point, as its UTF-8 bytes compare). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate stands for a code point above U+FFFF.
    if (x >= 0xd800 && y >= 0xd800) {
      if (x < 0xe000) x += 0x10000;
      if (y < 0xe000) y += 0x10000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** Index values in SQLite's order: numbers before text, text by code point. */
export function compareSqliteValues(a: IndexValue, b: IndexValue): number {
  if (typeof a === 'number') return typeof b === 'number' ? a - b : -1;
  return typeof b === 'number' ? 1 : compareCodePoints(a, b);
}

/** Index rows in the walk's order: value ascending or descending, id ascending (SQLite's orders). */
export function compareRows(a: Row, b: Row, direction: 1 | -1): number {
  return compareSqliteValues(a.value, b.value) * direction || compareCodePoints(a.id, b.id);
}

/** What the walks of one page share. */
export interface Walk {
  ctx: StoreContext;
  collection: string;
  /** The sorted path and its key in the attribute index. */
  path: string;
  key: number;
  direction: 1 | -1;
  /** SQL (on `x`) and parameters of the index's conditions, checked on every row. */
  params: SqlParam[];
  conds: string;
  /** Records parsed so far, by id. */
  parsed: Map<string, Doc>;
}

/** The walk's rows (on `x`): those at its key meeting its conditions; parameters: the key, then `params`. */
export const selectRows = (w: Walk) =>
  `SELECT x.value AS value, x.id AS id FROM attr_index x WHERE x.key = ?${w.conds}`;

/** Rows of one value in id order (after `above` when given). */
function rowsOfValue(w: Walk, value: IndexValue, above?: string): IterableIterator<Row> {
  const seek = above !== undefined && !ODD_ID.test(above);
  return w.ctx.statements
    .get(`${selectRows(w)} AND x.value = ?${seek ? ' AND x.id > ?' : ''} ORDER BY x.id`)
    .iterate(w.key, ...w.params, value, ...(seek ? [above] : [])) as IterableIterator<Row>;
}

/**
 * Rows in descending value order, each value's ids ascending, below `below` when given: values
 * are read in reverse index order and a value's rows turned around, or read again in id order
 * when there are many.
 */
function* descendingRows(w: Walk, below: IndexValue | undefined): Generator<Row> {
  for (;;) {
    const rows = w.ctx.statements
      .get(
        `${selectRows(w)}${below === undefined ? '' : ' AND x.value < ?'} ORDER BY x.value DESC, x.id DESC`,
      )
      .iterate(w.key, ...w.params, ...(below === undefined ? [] : [below])) as IterableIterator<Row>;
    let group: Row[] = [];
    let overflow = false;
    for (const row of rows) {
      if (group.length > 0 && row.value !== group[0]!.value) {
        yield* group.reverse();
        group = [];
      }
      group.push(row);
      if (group.length > GROUP_BUFFER) {
        overflow = true;
        break; // closes the statement
      }
    }
    if (!overflow) {
      yield* group.reverse();
      return;
    }
    below = group[0]!.value;
    yield* rowsOfValue(w, below);
  }
}

/** Rows in the walk's order with values past `value` (after it in the walk's direction). */
export function rowsPast(w: Walk, value: IndexValue | undefined): Generator<Row> | IterableIterator<Row> {
  if (w.direction === -1) return descendingRows(w, value);
  return w.ctx.statements
    .get(`${selectRows(w)}${value === undefined ? '' : ' AND x.value > ?'} ORDER BY x.value, x.id`)
    .iterate(w.key, ...w.params, ...(value === undefined ? [] : [value])) as IterableIterator<Row>;
}

/** Rows in the walk's order from the first after `from` (a row of the index, or a position) on. */
export function* rowsFrom(w: Walk, from: Row | undefined): Generator<Row> {
  const { statements } = w.ctx;
  if (w.direction === 1) {
    const seek =
      from === undefined ? '' : ODD_ID.test(from.id) ? ' AND x.value >= ?' : ' AND (x.value, x.id) > (?, ?)';
    const seekParams = from === undefined ? [] : seek.includes('x.id') ? [from.value, from.id] : [from.value];
    for (const row of statements
      .get(`${selectRows(w)}${seek} ORDER BY x.value, x.id`)
      .iterate(w.key, ...w.params, ...seekParams) as IterableIterator<Row>) {
      if (from === undefined || compareRows(row, from, 1) > 0) yield row;
    }
    return;
  }
  if (from !== undefined) {
    for (const row of rowsOfValue(w, from.value, from.id))
      if (compareCodePoints(row.id, from.id) > 0) yield row;
  }
  yield* descendingRows(w, from?.value);
}

/**
 * The index row at a position of the walk's order, or undefined past the end. From `known` (a
 * row found earlier at a position not past this one) SQLite steps over the rows after it only.
 */
export function rowAt(w: Walk, position: number, known?: Checkpoint): Row | undefined {
  const { statements } = w.ctx;
  const from = known ?? { position: 0, row: undefined };
  const offset = position - from.position;
  const row = from.row;
  if (w.direction === 1) {
    return statements
      .get(
        `${selectRows(w)}${row ? ' AND (x.value, x.id) >= (?, ?)' : ''} ORDER BY x.value, x.id LIMIT 1 OFFSET ?`,
      )
      .get(w.key, ...w.params, ...(row ? [row.value, row.id] : []), offset) as Row | undefined;
  }
  let rest = offset;
  if (row) {
    // The rest of the known row's value first (ids ascending), then the values below it.
    const sameValue = ' AND x.value = ? AND x.id >= ?';
    const found = statements
      .get(`${selectRows(w)}${sameValue} ORDER BY x.id LIMIT 1 OFFSET ?`)
      .get(w.key, ...w.params, row.value, row.id, rest) as Row | undefined;
    if (found !== undefined) return found;
    rest -= statements
      .get(`SELECT count(*) FROM attr_index x WHERE x.key = ?${w.conds}${sameValue}`)
      .pluck()
      .get(w.key, ...w.params, row.value, row.id) as number;
  }
  // Values come in the same groups in reverse index order: find the value, then the id within it.
  const below = row ? ' AND x.value < ?' : '';
  const belowParams = row ? [row.value] : [];
  const last = statements
    .get(`${selectRows(w)}${below} ORDER BY x.value DESC, x.id DESC LIMIT 1 OFFSET ?`)
    .get(w.key, ...w.params, ...belowParams, rest) as Row | undefined;
  if (last === undefined) return undefined;
  const above = statements
    .get(`SELECT count(*) FROM attr_index x WHERE x.key = ?${w.conds}${below} AND x.value > ?`)
    .pluck()
    .get(w.key, ...w.params, ...belowParams, last.value) as number;
  return statements
    .get(`${selectRows(w)} AND x.value = ? ORDER BY x.id LIMIT 1 OFFSET ?`)
    .get(w.key, ...w.params, last.value, rest - above) as Row;
}
