/**
 * Samples of a collection for the query planner's estimates: each record is drawn with the same
 * chance (SQLite's random(), so no pattern in the order records were written or in their ids can
 * line up with the draw), read as its stored JSON text. The draw reads the primary key index and
 * only the drawn rows' bodies: tens of milliseconds for a million records.
 */
import type { Database } from 'better-sqlite3';

/** About `size` stored texts of `collection` (every one when it holds no more than that). */
export function sampleTexts(
  db: Database,
  collection: string,
  collectionSize: number,
  size: number,
): string[] {
  if (collectionSize <= size) {
    return db
      .prepare('SELECT body FROM docs WHERE collection = ? ORDER BY id')
      .pluck()
      .all(collection) as string[];
  }
  const stride = Math.max(1, Math.floor(collectionSize / size));
  return db
    .prepare('SELECT body FROM docs WHERE collection = ? AND abs(random() % ?) = 0 LIMIT ?')
    .pluck()
    .all(collection, stride, size * 2) as string[];
}
