/**
 * Where sorted walks have been: for a walk of one path's index entries under the conditions of a
 * filter (index-walk-rows.ts), the rows already found at given positions of its order. A filter
 * that correlates with the sort key (every `Terrestrial` record named `Soil ...` or
 * `Permafrost ...`) puts long runs of entries failing its conditions before and between the
 * matches, and each page would step over them again, checking each entry; a later page of the
 * same walk starts from the nearest row found before its own start instead.
 *
 * A position holds only while the records do: every write to the store enters its change log,
 * and all checkpoints are dropped when the log's last sequence number (SQLite's AUTOINCREMENT
 * counter, which a sweep of old rows never lowers) is not the one they were taken at, a write
 * by another process over the same file included; also when another connection committed
 * anything at all (SQLite's data version), such as a repair of the index by `npm run reindex`,
 * which writes no change.
 */
import type { IndexValue } from './attribute-index.ts';
import type { StatementCache } from './statement-cache.ts';

/** Walks (path, direction, conditions) remembered at most; the least recently used goes first. */
const WALKS_KEPT = 64;
/** Positions remembered per walk at most; the least recently used goes first. */
const POSITIONS_KEPT = 512;

/** An entry of the index (index-walk-rows.ts): its value and its record's id. */
type Row = { value: IndexValue; id: string };

/** The store's counter of pages that started from a kept row (store-context.ts). */
type Counters = { walkPositionsReused: number };

/** A row of a walk's order and its position there (rows before it under the same conditions). */
export interface Checkpoint {
  position: number;
  row: Row;
}

export class WalkCheckpoints {
  private readonly walks = new Map<string, Map<number, Row>>();
  /** The change log's last sequence number and SQLite's data version when the kept rows were found. */
  private seq: string | undefined;

  constructor(
    private readonly statements: StatementCache,
    private readonly counters: Counters,
  ) {}

  /** The positions of one walk (`walk` names its key, direction and conditions), valid for the data now. */
  of(walk: string): WalkPositions {
    const seq = this.statements
      .get(
        "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'changes'), 0) || ' ' || " +
          '(SELECT data_version FROM pragma_data_version())',
      )
      .pluck()
      .get() as string;
    if (seq !== this.seq) {
      this.walks.clear();
      this.seq = seq;
    }
    let positions = this.walks.get(walk);
    if (positions) this.walks.delete(walk);
    else {
      positions = new Map();
      if (this.walks.size >= WALKS_KEPT) this.walks.delete(this.walks.keys().next().value!);
    }
    this.walks.set(walk, positions);
    return new WalkPositions(positions, this.counters);
  }
}

/** The known rows of one walk by position. */
export class WalkPositions {
  constructor(
    private readonly positions: Map<number, Row>,
    private readonly counters: Counters,
  ) {}

  /** The known row at the largest position not past `position`, if any. */
  nearest(position: number): Checkpoint | undefined {
    let best: number | undefined;
    for (const p of this.positions.keys()) if (p <= position && (best === undefined || p > best)) best = p;
    if (best === undefined) return undefined;
    const row = this.positions.get(best)!;
    this.positions.delete(best);
    this.positions.set(best, row);
    this.counters.walkPositionsReused++;
    return { position: best, row };
  }

  /** Remembers the row at a position. */
  add(position: number, row: Row): void {
    this.positions.delete(position);
    if (this.positions.size >= POSITIONS_KEPT) this.positions.delete(this.positions.keys().next().value!);
    this.positions.set(position, { value: row.value, id: row.id });
  }
}
