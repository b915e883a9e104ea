/**
 * Worker thread of a rebuild: parses records' stored JSON and prepares each batch (see
 * `prepared-batch.ts`) while the main thread writes the previous one. Given the index's file, it
 * also looks up the keys of the strings already indexed, through a read-only connection of its
 * own: at a million records those lookups were a third of the main thread's work. It also runs
 * the index's long reads (`Query`: a broad MATCH) on that connection, so they hold this thread
 * rather than the main thread's event loop. For the store's writing thread it also prepares, from
 * the same parse, the store's part of the records (`records`, src/store/sqlite/prepared-records.ts).
 */
import { parentPort } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { openReadOnly } from '../../src/store/sqlite/read-only.mjs';
import type { Doc } from '../../src/store/port.ts';
import { splitTexts } from '../../src/store/sqlite/joined-texts.ts';
import { prepareRecords } from '../../src/store/sqlite/prepared-records.ts';
import { edgesOf, typeOf } from '../../src/provenance/edges.ts';
import { prepareBatch, type PreparedBatch } from './prepared-batch.ts';
import { STRINGS_GENERATION } from './strings-generation.ts';

interface Request {
  id: number;
  /** The records' texts (see `joinTexts`). */
  joined: string;
  lengths: Int32Array;
  /** The index's database file; none for an in-memory database. */
  file?: string;
  /** Page cache of the worker's connection, KiB. */
  cacheKib: number;
  /** Also the store's records (see prepared-records.ts), with their graph when `graph`. */
  records?: { graph: boolean };
}

/** A read of the index's file: one statement, its rows as arrays. */
interface Query {
  id: number;
  query: { sql: string; params: unknown[] };
  file: string;
  cacheKib: number;
}

/** Answered at once: the thread is started and its modules loaded (`WorkerPreparer.warm`). */
interface Warm {
  id: number;
  warm: true;
}

type KeysOf = (batch: PreparedBatch) => PreparedBatch['known'];
/** The connection to the file asked last and its key reader (null: the file cannot be read). */
let reader: { file: string; db: Database.Database | null; keys: KeysOf | null } | null = null;

/**
 * Looks up keys through a read-only connection to `file` (WAL: it reads the last commit while the
 * main thread writes). A file it cannot open or read (one in rollback-journal mode being written,
 * or locked) only means the main thread looks the keys up.
 */
function readerOf(file: string, cacheKib: number): KeysOf | null {
  return connectionTo(file, cacheKib).keys;
}

function connectionTo(file: string, cacheKib: number): NonNullable<typeof reader> {
  if (reader?.file !== file) {
    reader?.db?.close();
    let db: Database.Database | undefined;
    try {
      // A file held locked for longer than a moment means the main thread looks the keys up.
      db = openReadOnly(file, cacheKib);
      reader = { file, db, keys: keyReader(db) };
    } catch {
      db?.close();
      reader = { file, db: null, keys: null };
    }
  }
  return reader;
}

/** Statements of `Query` messages, by SQL (the index asks a handful of shapes). */
const queries = new Map<string, Database.Statement>();

function runQuery({ query, file, cacheKib }: Query): unknown[][] {
  const { db } = connectionTo(file, cacheKib);
  if (!db) throw new Error(`cannot read ${file}`);
  let stmt = queries.get(query.sql);
  if (!stmt || stmt.database !== db) {
    if (queries.size > 100) queries.clear();
    queries.set(query.sql, (stmt = db.prepare(query.sql).raw()));
  }
  return stmt.all(...query.params) as unknown[][];
}

function keyReader(db: Database.Database): KeysOf {
  const generation = db.prepare(STRINGS_GENERATION.read).pluck();
  // Positions and keys only: reading the strings back would cost a JS string each.
  const lookUp = db
    .prepare(
      'SELECT j.key, s.rowid FROM (SELECT key, value FROM json_each(?) ORDER BY value) j CROSS JOIN search_strings s ON s.value = j.value',
    )
    .raw();
  // The generation and the keys come from one snapshot: the main thread uses the keys only if no
  // string was removed since (see `STRINGS_GENERATION`).
  const keysIn = db.transaction((batch: PreparedBatch): PreparedBatch['known'] => {
    const keys = new Float64Array(batch.pairValue.length);
    for (const [p, key] of lookUp.all(JSON.stringify(batch.pairValue)) as Array<[number, number]>)
      keys[p] = key;
    return { generation: (generation.get() as number | undefined) ?? 0, keys };
  });
  return (batch) => {
    try {
      return keysIn(batch);
    } catch {
      return undefined; // busy or locked now: the main thread looks these up
    }
  };
}

parentPort!.on('message', (message: Request | Query | Warm) => {
  if ('warm' in message) return parentPort!.postMessage({ id: message.id, rows: [] });
  if ('query' in message) {
    try {
      parentPort!.postMessage({ id: message.id, rows: runQuery(message) });
    } catch (err) {
      parentPort!.postMessage({ id: message.id, error: err instanceof Error ? err.message : String(err) });
    }
    return;
  }
  const { id, joined, lengths, file, cacheKib, records } = message;
  try {
    // Fingerprints are taken of the stored text, which is the record's `JSON.stringify`.
    const docs = JSON.parse(`[${joined}]`) as Doc[];
    const texts = splitTexts({ joined, lengths });
    if (docs.length !== texts.length) throw new Error('a record text is not one JSON value');
    const prepared =
      records &&
      prepareRecords(docs, records.graph ? (doc) => ({ type: typeOf(doc), edges: edgesOf(doc) }) : undefined);
    const batch = prepareBatch(docs, texts);
    const keys = file === undefined ? null : readerOf(file, cacheKib);
    if (keys) batch.known = keys(batch);
    parentPort!.postMessage({ id, batch, ...(prepared ? { records: prepared } : {}) });
  } catch (err) {
    parentPort!.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
