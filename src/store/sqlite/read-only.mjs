// Read-only connections to a store's file, for threads of their own. Plain JavaScript, so that a
// thread without the process's loaders (read-worker.mjs) can import it too.
import Database from 'better-sqlite3';

/**
 * A read-only connection to `file` (WAL: it reads the last commit while other connections write).
 * A lock is waited on for a moment only (better-sqlite3 waits 5 s by default).
 */
export function openReadOnly(file, cacheKib) {
  const db = new Database(file, { readonly: true, fileMustExist: true, timeout: 250 });
  try {
    db.pragma(`cache_size = -${cacheKib}`);
    // As the store's own connection: pages read through the OS page cache the process shares.
    db.pragma('mmap_size = 1073741824');
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}
