/**
 * Per-collection record counts and body bytes, kept up to date inside every write transaction so
 * counts of whole collections and the storage report need no scan.
 */
import type { Database as Db } from 'better-sqlite3';
import type { CollectionStats } from '../port.ts';
import type { StatementCache } from './statement-cache.ts';

export const STATISTICS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS collection_stats (
    collection TEXT PRIMARY KEY,
    count INTEGER NOT NULL,
    size INTEGER NOT NULL
  ) WITHOUT ROWID;
`;

/** Adds to a collection's record count and body bytes (inside the caller's write transaction). */
export function adjustStats(
  statements: StatementCache,
  collection: string,
  countDelta: number,
  sizeDelta: number,
): void {
  statements
    .get(
      'INSERT INTO collection_stats(collection, count, size) VALUES (?, ?, ?) ' +
        'ON CONFLICT(collection) DO UPDATE SET count = count + excluded.count, size = size + excluded.size',
    )
    .run(collection, countDelta, sizeDelta);
}

/** Records in a collection (0 for one never written). */
export function recordCount(statements: StatementCache, collection: string): number {
  const row = statements.get('SELECT count FROM collection_stats WHERE collection = ?').get(collection) as
    { count: number } | undefined;
  return row?.count ?? 0;
}

export function nonEmptyCollections(statements: StatementCache): string[] {
  const rows = statements
    .get('SELECT collection FROM collection_stats WHERE count > 0 ORDER BY collection')
    .all() as Array<{ collection: string }>;
  return rows.map((r) => r.collection);
}

/**
 * Bytes the file spends on record pages and on everything else (indexes, change log, state).
 * An O(1) estimate from page counts: walking the b-trees (dbstat) takes seconds on a large file.
 */
function pageSizes(db: Db, totalBodyBytes: number): { docs: number; indexes: number } {
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pages = db.pragma('page_count', { simple: true }) as number;
  const free = db.pragma('freelist_count', { simple: true }) as number;
  const used = (pages - free) * pageSize;
  // Record pages carry the bodies plus b-tree and cell overhead, roughly a tenth.
  const docs = Math.min(used, Math.round(totalBodyBytes * 1.1));
  return { docs, indexes: used - docs };
}

/** Each non-empty collection's share of the file: record pages by body bytes, the rest by record count. */
export function collectionStats(db: Db, statements: StatementCache): CollectionStats[] {
  const rows = statements
    .get('SELECT collection, count, size FROM collection_stats WHERE count > 0 ORDER BY collection')
    .all() as Array<{ collection: string; count: number; size: number }>;
  const totalSize = rows.reduce((s, r) => s + r.size, 0) || 1;
  const totalCount = rows.reduce((s, r) => s + r.count, 0) || 1;
  const pages = pageSizes(db, totalSize);
  return rows.map((r) => {
    const storageSize = Math.round((pages.docs * r.size) / totalSize);
    const totalIndexSize = Math.round((pages.indexes * r.count) / totalCount);
    return {
      collection: r.collection,
      count: r.count,
      size: r.size,
      avgObjSize: r.count ? Math.round(r.size / r.count) : 0,
      storageSize,
      totalIndexSize,
      totalSize: storageSize + totalIndexSize,
    };
  });
}
