/**
 * A reading thread of the embedded store (read-threads.ts): runs one read-only statement a
 * message on a connection of its own, so a statement that reads the disk holds this thread, not
 * the event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Database, Statement } from 'better-sqlite3';
import { openReadOnly } from './read-only.ts';
import { StatementCache } from './statement-cache.ts';

interface Read {
  id: number;
  sql: string;
  params: unknown[];
  /** Rows as their first column's values. */
  pluck: boolean;
}

const { file, cacheKib } = workerData as { file: string; cacheKib: number };
let db: Database | undefined;
let statements: StatementCache | undefined;
const plucked = new WeakSet<Statement>();

function statementOf(sql: string, pluck: boolean): Statement {
  if (!db) {
    db = openReadOnly(file, cacheKib);
    statements = new StatementCache(db);
  }
  // Plucking statements are kept apart from the others: a statement keeps its mode.
  const s = statements!.get(pluck ? `${sql} -- pluck` : sql);
  if (pluck && !plucked.has(s)) {
    s.pluck();
    plucked.add(s);
  }
  return s;
}

parentPort!.on('message', ({ id, sql, params, pluck }: Read) => {
  try {
    const started = performance.now();
    const rows = statementOf(sql, pluck).all(...params);
    parentPort!.postMessage({ id, result: { rows, ms: performance.now() - started } });
  } catch (err) {
    parentPort!.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
