/**
 * The store's files hold signing keys, password hashes and client secrets: its folder is created
 * readable by its owner only (0700) and its database files are made 0600, also when an older
 * version left them readable by others. SQLite creates its `-wal` and `-shm` files with the mode
 * of the database file.
 */
import fs from 'node:fs';
import path from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` (and missing parents) owner-only; an existing folder is left as it is. */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Creates the database `file` (empty, owner-only) when missing, in an owner-only folder, and makes
 * it and its SQLite companions owner-only.
 */
export function preparePrivateDatabaseFile(file: string): void {
  ensurePrivateDir(path.dirname(file));
  fs.closeSync(fs.openSync(file, 'a', PRIVATE_FILE_MODE));
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    try {
      fs.chmodSync(f, PRIVATE_FILE_MODE);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/** Whether other users may enter or read `dir` (an existing DATA_DIR made by hand, for example). */
export function isOpenToOthers(dir: string): boolean {
  try {
    return (fs.statSync(dir).mode & 0o077) !== 0;
  } catch {
    return false;
  }
}
