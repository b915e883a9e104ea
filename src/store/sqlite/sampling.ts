/**
 * Samples of a collection for the query planner's estimates: each record is drawn with the same
 * chance (SQLite's random(), so no pattern in the order records were written or in their ids can
 * line up with the draw), read as its stored JSON text. The draw reads the primary key index and
 * only the drawn rows' bodies, in slices of the index that take turns with other requests: a
 * million records on a cold file took more than 100 ms as one statement.
 */
import { nextTurn, PacedSize } from '../../turns.ts';
import { readOnThread } from './read-threads.ts';
import type { SqlParam } from './statement-cache.ts';
import type { StoreContext } from './store-context.ts';

/**
 * Time one slice of a draw should take, ms (`PacedSize`, from FIRST_SLICE index entries, between
 * MIN_SLICE and MAX_SLICE). On a cold file the first slice reads its bodies from disk: a fixed
 * 20,000 entries took half a second there.
 */
const SLICE_MS = 5;
const FIRST_SLICE = 1000;
const MIN_SLICE = 200;
const MAX_SLICE = 50_000;

/** Options of `sampleTexts`; smaller figures in tests. */
export interface SampleOptions {
  /** Index entries of every slice (by default each slice's are scaled to take SLICE_MS). */
  slice?: number;
}

/**
 * About `size` stored texts of `collection` (every one, in id order, when it holds no more than
 * that). Slices are read on the store's reading threads where it has them, at MAX_SLICE entries
 * each (they hold no other request); else on its connection, paced.
 */
export async function sampleTexts(
  ctx: StoreContext,
  collection: string,
  collectionSize: number,
  size: number,
  options: SampleOptions = {},
): Promise<string[]> {
  const slice = new PacedSize(
    options.slice ?? (ctx.readers ? MAX_SLICE : FIRST_SLICE),
    SLICE_MS,
    MIN_SLICE,
    MAX_SLICE,
  );
  const whole = collectionSize <= size;
  const stride = whole ? 1 : Math.max(1, Math.floor(collectionSize / size));
  const most = whole ? Infinity : size * 2;
  const drawn = whole ? '' : ' AND abs(random() % ?) = 0';
  const drawParams = whole ? [] : [stride];
  const texts: string[] = [];
  let onLoop = false;
  const read = async (sql: string, params: SqlParam[]): Promise<unknown[]> => {
    const rows = await readOnThread(ctx, sql, params, true);
    onLoop = rows === undefined;
    return (
      rows ??
      ctx.db
        .prepare(sql)
        .pluck()
        .all(...params)
    );
  };
  /** The last id of the slices read; undefined before the first. */
  let after: string | undefined;
  for (;;) {
    const started = performance.now();
    const from = after === undefined ? '' : ' AND id > ?';
    const fromParams = after === undefined ? [] : [after];
    const [edge] = (await read(
      `SELECT id FROM docs WHERE collection = ?${from} ORDER BY id LIMIT 1 OFFSET ${slice.size - 1}`,
      [collection, ...fromParams],
    )) as Array<string | undefined>;
    const upTo = edge === undefined ? '' : ' AND id <= ?';
    const rows = (await read(`SELECT body FROM docs WHERE collection = ?${from}${upTo}${drawn} ORDER BY id`, [
      collection,
      ...fromParams,
      ...(edge === undefined ? [] : [edge]),
      ...drawParams,
    ])) as string[];
    for (const text of rows) {
      if (texts.length >= most) break;
      texts.push(text);
    }
    if (edge === undefined || texts.length >= most) return texts;
    after = edge;
    if (options.slice === undefined && onLoop) slice.took(performance.now() - started);
    await nextTurn();
  }
}
