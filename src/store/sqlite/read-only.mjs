// Read-only connections to a store's file, for threads of their own. Plain JavaScript, so that a
// thread without the process's loaders (read-worker.mjs) can import it too.
import Database from 'better-sqlite3';

/**
 * The most of a store's file a connection reads through memory mapping: SQLite's own cap as
 * better-sqlite3 builds it (SQLITE_MAX_MMAP_SIZE, 2 GiB less 64 KiB; a larger setting is cut to
 * it). A page past the mapped part is read with a system call and copied into the connection's
 * cache: at 10^6 biosamples (a 3.2 GB file) the first count of `collection_date ~ /-03-/` walked
 * 2,688 index pages in 78-92 ms with 1 GiB mapped, 53-55 ms with this, from the OS cache.
 */
export const MMAP_BYTES = 0x7fff0000;

/**
 * A read-only connection to `file` (WAL: it reads the last commit while other connections write).
 * A lock is waited on for a moment only (better-sqlite3 waits 5 s by default).
 */
export function openReadOnly(file, cacheKib) {
  const db = new Database(file, { readonly: true, fileMustExist: true, timeout: 250 });
  try {
    db.pragma(`cache_size = -${cacheKib}`);
    // As the store's own connection: pages read through the OS page cache the process shares.
    db.pragma(`mmap_size = ${MMAP_BYTES}`);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}
