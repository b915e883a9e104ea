// A reading thread of the embedded store (read-threads.ts): runs one read-only statement a message
// on a connection of its own, so a statement that reads the disk holds this thread, not the event
// loop. Plain JavaScript: the thread needs none of the process's loaders (`--import tsx`), and it
// starts in a tenth of the time a TypeScript thread takes (250 ms), which a cold store waits for.
import { parentPort, workerData } from 'node:worker_threads';
import { openReadOnly } from './read-only.mjs';

const { file, cacheKib } = workerData;
/** @type {import('better-sqlite3').Database | undefined} */
let db;
/** Prepared statements by SQL, plucking ones apart; started over past 500. */
const statements = new Map();

function statementOf(sql, pluck) {
  db ??= openReadOnly(file, cacheKib);
  const key = pluck ? `${sql} -- pluck` : sql;
  let s = statements.get(key);
  if (!s) {
    s = db.prepare(sql);
    if (pluck) s.pluck();
    if (statements.size >= 500) statements.clear();
    statements.set(key, s);
  }
  return s;
}

parentPort?.on('message', ({ id, sql, params, pluck }) => {
  try {
    const started = performance.now();
    const rows = statementOf(sql, pluck).all(...params);
    parentPort.postMessage({ id, result: { rows, ms: performance.now() - started } });
  } catch (err) {
    parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
