/**
 * Waiting for another connection's write lock without holding the event loop. SQLite's own busy
 * handler waits by sleeping the calling thread: on the service's main thread, every request would
 * wait with it (another server process on the same file, or this process's writing thread, may
 * hold the lock for seconds during a large write). Writes on the store's connection instead try
 * the lock without waiting and, while it is held, try again after a pause, answering other
 * requests meanwhile.
 */
import type { Database } from 'better-sqlite3';
import { StoreUnavailable } from '../../errors.ts';

/** True for SQLite's "database is locked" (another connection holds the lock). */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** Runs `f` with SQLite's busy handler off: a lock another connection holds fails at once. */
export function withoutWaiting<T>(db: Database, f: () => T): T {
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  if (timeout === 0) return f();
  db.pragma('busy_timeout = 0');
  try {
    return f();
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

/** How long a write waits for another connection's lock before it is refused. Default one minute. */
export const WRITE_WAIT_MS = 60_000;
/** The longest pause between tries, ms. */
const MAX_PAUSE_MS = 50;

/**
 * Runs the write `f` (a transaction or one statement: SQLite takes the write lock before it
 * changes anything, so a refused try wrote nothing) once no other connection holds the lock,
 * trying again after pauses of 1 to 50 ms. `before` is awaited before each try (this process's
 * own gate). Past `waitMs`, refused with StoreUnavailable (503).
 */
export async function writeWhenFree<T>(
  db: Database,
  f: () => T,
  options: { waitMs?: number; before?: () => Promise<void> } = {},
): Promise<T> {
  const started = performance.now();
  const waitMs = options.waitMs ?? WRITE_WAIT_MS;
  for (let pause = 1; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    await options.before?.();
    try {
      return withoutWaiting(db, f);
    } catch (err) {
      if (!isBusy(err)) throw err;
      if (performance.now() - started >= waitMs)
        throw new StoreUnavailable('Another write holds the store for now; try again shortly', 5, {
          cause: err,
        });
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
