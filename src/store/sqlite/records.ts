/**
 * The records of the embedded store: opening the file, the docs and meta tables, reads of
 * record bodies, and the write path that keeps the attribute index, change log, statistics and
 * write hooks in the same transaction as the records.
 */
import Database from 'better-sqlite3';
import type { Database as Db } from 'better-sqlite3';
import { cleanDocs } from '../clean-docs.ts';
import { keysByCollection } from '../record-keys.ts';
import { preparePrivateDatabaseFile } from '../private-files.ts';
import { MMAP_BYTES } from './read-only.mjs';
import { isDeepStrictEqual } from 'node:util';
import type {
  AtomicWrite,
  CheckedChange,
  CheckedChangeResult,
  Doc,
  ReadModifyWriteDecision,
  RecordKey,
  WriteResult,
} from '../port.ts';
import { removeEntries } from './attribute-index.ts';
import { AttributeBatch } from './attribute-writes.ts';
import type { ChangeLog } from './change-log.ts';
import type { StatementCache } from './statement-cache.ts';
import { adjustStats } from './statistics.ts';
import type { PreparedRecords } from './prepared-records.ts';
import { parseBody, type Row, type StoreContext } from './store-context.ts';

export const RECORDS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS docs (
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    size INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (collection, id)
  );
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`;

/** The page size of a new records file (bytes); `openDatabase` explains it. */
const RECORDS_PAGE_BYTES = 16_384;

/**
 * Opens (creating it and its folder when missing) the database file with the store's settings;
 * `cacheKib` sets a page cache other than the records' 64 MiB, `pageBytes` the page size of a new
 * file other than the records' (the state file keeps SQLite's 4 KiB).
 */
export function openDatabase(file: string, cacheKib = 65_536, pageBytes = RECORDS_PAGE_BYTES): Db {
  // Owner-only folder and files: the store holds signing keys and password hashes.
  preparePrivateDatabaseFile(file);
  const db = new Database(file);
  // Set before the first table, so only a new file takes it (a file keeps the page size it was
  // created with; WAL mode cannot change it). 16 KiB pages rather than SQLite's 4 KiB: a record
  // of 1-2 KiB no longer leaves most of a page unused, and large writes touch a quarter as many
  // pages (a submission of 10^5 biosamples: the writing thread's CPU 13.1-13.5 s -> 9.7-11.0 s,
  // the records table 200 -> 147 MiB).
  db.pragma(`page_size = ${pageBytes}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma(`cache_size = -${cacheKib}`);
  db.pragma(`mmap_size = ${MMAP_BYTES}`); // reads through the OS page cache (read-only.mjs)
  db.pragma('temp_store = MEMORY');
  return db;
}

/** The stored body of one record, or undefined when there is none. */
export function bodyOf(statements: StatementCache, collection: string, id: string): string | undefined {
  const row = statements.get('SELECT body FROM docs WHERE collection = ? AND id = ?').get(collection, id) as
    { body: string } | undefined;
  return row?.body;
}

/** Bodies of the records with these ids, in id order (missing ids are left out). */
export function loadBodies(statements: StatementCache, collection: string, ids: string[]): Row[] {
  if (ids.length === 0) return [];
  return statements.get(BODIES_OF_IDS).all(collection, JSON.stringify(ids)) as Row[];
}

/** The statement of `loadBodies`: a collection and a JSON array of ids. */
export const BODIES_OF_IDS =
  'SELECT id, body FROM docs WHERE collection = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY id';

/** Every record body of a collection in id order, `batchSize` at a time, with no statement left open between batches. */
export async function* scanTexts(
  statements: StatementCache,
  collection: string,
  batchSize: number,
): AsyncIterable<string[]> {
  let cursor = '';
  for (;;) {
    const rows = statements
      .get('SELECT id, body FROM docs WHERE collection = ? AND id > ? ORDER BY id LIMIT +?')
      .all(collection, cursor, batchSize) as Row[];
    if (rows.length === 0) return;
    yield rows.map((r) => r.body);
    if (rows.length < batchSize) return;
    cursor = rows[rows.length - 1]!.id;
  }
}

/** Called synchronously inside the write transaction, so a co-located index commits or rolls back with the records. */
export interface WriteHook {
  onUpsert(collection: string, written: WrittenRecords): void;
  onDelete(collection: string, ids: string[]): void;
}

/** The records a write hook is told of, position by position. */
export interface WrittenRecords {
  ids: string[];
  /** The records as stored (their `JSON.stringify`). */
  texts: string[];
  /** The records; parsed from their texts on the first call when they came as texts alone. */
  docs(): Doc[];
  /**
   * What the writing thread's workers prepared of them, when they did: record `i` here is record
   * `positions[i]` of `records` (see prepared-records.ts).
   */
  prepared?: { records: PreparedRecords; positions: number[] };
}

/**
 * An atomic write's records as the writing thread has them when its workers prepared them: their
 * texts and what was prepared (no record is parsed unless a hook asks for the records).
 */
export interface PreparedThreadWrite {
  collection: string;
  texts: string[];
  prepared: PreparedRecords;
}

/** One collection's records of an atomic write: as records, or prepared (`PreparedThreadWrite`). */
export type ThreadWrite = AtomicWrite | PreparedThreadWrite;

/** Records an upsert writes, position by position, however they came. */
interface Incoming {
  ids: string[];
  texts: string[];
  /** Adds record `i`'s attribute entries to `batch` (`before`: the version it replaces). */
  index(batch: AttributeBatch, i: number, before?: Doc): void;
  /** The hooks' view of the records at `positions`. */
  written(positions: number[]): WrittenRecords;
}

/** Records given as records (`texts`: their `JSON.stringify`, when the caller has them). */
function incomingDocs(clean: Doc[], given?: string[]): Incoming {
  const texts = given ?? clean.map((doc) => JSON.stringify(doc));
  return {
    ids: clean.map((doc) => doc.id),
    texts,
    index: (batch, i, before) => batch.add(clean[i]!, before),
    written: (positions) => {
      const docs = positions.map((i) => clean[i]!);
      return { ids: docs.map((d) => d.id), texts: positions.map((i) => texts[i]!), docs: () => docs };
    },
  };
}

/** Records prepared by the writing thread's workers: parsed only if a hook asks for them. */
function incomingPrepared({ texts, prepared }: PreparedThreadWrite): Incoming {
  if (prepared.ids.length !== texts.length)
    throw new Error('upsertAtomically: a prepared record for each text');
  return {
    ids: prepared.ids,
    texts,
    index: (batch, i, before) => batch.addPrepared(prepared, i, before),
    written: (positions) => {
      const mine = positions.map((i) => texts[i]!);
      let docs: Doc[] | undefined;
      return {
        ids: positions.map((i) => prepared.ids[i]!),
        texts: mine,
        docs: () => (docs ??= mine.map((text) => JSON.parse(text) as Doc)),
        prepared: { records: prepared, positions },
      };
    },
  };
}

/** A write's texts, when it brings them: one per record (see `DocumentStore.upsertAtomically`). */
export function checkedTexts(write: { docs: Doc[]; texts?: string[] }): string[] | undefined {
  if (write.texts !== undefined && write.texts.length !== write.docs.length)
    throw new Error('upsertAtomically: a text for each record, or none');
  return write.texts;
}

/**
 * An atomic write whose transaction is still open: what it wrote is seen by no other connection
 * until `finish` adds the last records and commits; `abort` rolls it all back. It holds the file's
 * write lock meanwhile, so whoever holds one must end it.
 */
export interface HeldWrite {
  /** Writes more records in the open transaction. */
  add(writes: ThreadWrite[]): void;
  finish(more: ThreadWrite[]): WriteResult;
  abort(): void;
}

/** Record writes, each in one immediate transaction with everything kept beside the records. */
export class RecordWrites {
  private readonly hooks: WriteHook[] = [];

  constructor(
    private readonly ctx: StoreContext,
    private readonly changeLog: ChangeLog,
  ) {}

  addHook(hook: WriteHook): void {
    this.hooks.push(hook);
  }

  upsertMany(collection: string, docs: Doc[]): WriteResult {
    const clean = cleanDocs(docs);
    return this.ctx.db
      .transaction(() => this.upsertInTransaction(collection, incomingDocs(clean)))
      .immediate();
  }

  /** `texts`, when given, are the records' `JSON.stringify` (see `DocumentStore.upsertAtomically`). */
  upsertAtomically(writes: ThreadWrite[]): WriteResult {
    return this.ctx.db
      .transaction((): WriteResult => {
        const write = this.atomicWrite();
        write.add(writes);
        return write.end();
      })
      .immediate();
  }

  /**
   * Begins an atomic write and leaves its transaction open (see `HeldWrite`): records are written
   * with `add`, and the last ones at `finish`, which commits them all. A part that fails rolls the
   * whole write back.
   */
  beginAtomically(): HeldWrite {
    const db = this.ctx.db;
    if (db.inTransaction) throw new Error('beginAtomically: a transaction is already open');
    db.exec('BEGIN IMMEDIATE');
    const rollback = () => {
      if (db.inTransaction) db.exec('ROLLBACK');
    };
    const write = this.atomicWrite();
    const orRollBack = <T>(f: () => T): T => {
      try {
        return f();
      } catch (err) {
        rollback();
        throw err;
      }
    };
    return {
      add: (more) => orRollBack(() => write.add(more)),
      finish: (more) =>
        orRollBack(() => {
          write.add(more);
          const total = write.end();
          db.exec('COMMIT');
          return total;
        }),
      abort: rollback,
    };
  }

  /**
   * The writes of one atomic write inside the caller's transaction, added in parts. One attribute
   * batch per collection for the whole write, flushed at its `end`: its entries then go into the
   * index in key order once, not spread over it again by every part.
   */
  private atomicWrite(): { add(writes: ThreadWrite[]): void; end(): WriteResult } {
    const total = { inserted: 0, updated: 0 };
    const attributes = new Map<string, AttributeBatch>();
    return {
      add: (writes) => {
        for (const w of writes) {
          const incoming =
            'prepared' in w ? incomingPrepared(w) : incomingDocs(cleanDocs(w.docs), checkedTexts(w));
          let batch = attributes.get(w.collection);
          if (!batch) attributes.set(w.collection, (batch = new AttributeBatch(this.ctx, w.collection)));
          const r = this.upsertInTransaction(w.collection, incoming, batch);
          total.inserted += r.inserted;
          total.updated += r.updated;
        }
      },
      end: () => {
        for (const batch of attributes.values()) batch.flush();
        return total;
      },
    };
  }

  insertIfAbsent(collection: string, doc: Doc): boolean {
    const [clean] = cleanDocs([doc]);
    const exists = this.ctx.statements.get('SELECT 1 FROM docs WHERE collection = ? AND id = ?');
    return this.ctx.db
      .transaction((): boolean => {
        if (exists.get(collection, clean!.id)) return false;
        this.upsertInTransaction(collection, incomingDocs([clean!]));
        return true;
      })
      .immediate();
  }

  readModifyWrite<T>(
    keys: RecordKey[],
    decide: (current: Array<Doc | null>) => ReadModifyWriteDecision<T>,
  ): T {
    return this.ctx.db
      .transaction((): T => {
        const current = keys.map(({ collection, id }) => {
          const body = bodyOf(this.ctx.statements, collection, id);
          return body === undefined ? null : parseBody(this.ctx, body);
        });
        const { writes, deletes = [], value } = decide(current);
        this.applyInTransaction(writes, deletes);
        return value;
      })
      .immediate();
  }

  /** `DocumentStore.writeIfUnchanged` in one transaction on this connection. */
  writeIfUnchanged(change: CheckedChange): CheckedChangeResult {
    return this.ctx.db
      .transaction((): CheckedChangeResult => {
        const changed = change.expected.findIndex(({ collection, id, doc }) => {
          const body = bodyOf(this.ctx.statements, collection, id);
          return !isDeepStrictEqual(body === undefined ? null : parseBody(this.ctx, body), doc);
        });
        if (changed >= 0) return { changed, deleted: 0 };
        return { changed: -1, deleted: this.applyInTransaction(change.writes, change.deletes) };
      })
      .immediate();
  }

  /** Deletes (those present), then upserts, inside the caller's transaction; the number deleted. */
  private applyInTransaction(
    writes: Array<{ collection: string; docs: Doc[] }>,
    deletes: RecordKey[],
  ): number {
    let deleted = 0;
    for (const [collection, ids] of keysByCollection(deletes)) {
      const victims: Doc[] = [];
      for (const id of ids) {
        const body = bodyOf(this.ctx.statements, collection, id);
        if (body !== undefined) victims.push(parseBody(this.ctx, body));
      }
      deleted += this.deleteInTransaction(collection, victims).length;
    }
    for (const { collection, docs } of writes)
      this.upsertInTransaction(collection, incomingDocs(cleanDocs(docs)));
    return deleted;
  }

  /**
   * Upserts inside the caller's transaction: records, attribute index, change log, statistics,
   * hooks. With `attributes` (the caller's, for this collection), the attribute entries are left
   * to the caller's `flush`.
   */
  private upsertInTransaction(
    collection: string,
    incoming: Incoming,
    attributes?: AttributeBatch,
  ): WriteResult {
    const { statements } = this.ctx;
    const existing = statements.get('SELECT body, size FROM docs WHERE collection = ? AND id = ?');
    const insertDoc = statements.get(
      'INSERT INTO docs(collection, id, body, size, seq) VALUES (?, ?, ?, ?, ?)',
    );
    const updateDoc = statements.get(
      'UPDATE docs SET body = ?, size = ?, seq = ? WHERE collection = ? AND id = ?',
    );
    let inserted = 0;
    let updated = 0;
    let sizeDelta = 0;
    const changed: number[] = [];
    const batch = attributes ?? new AttributeBatch(this.ctx, collection);
    const { ids, texts } = incoming;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const body = texts[i]!;
      const size = Buffer.byteLength(body);
      const before = existing.get(collection, id) as { body: string; size: number } | undefined;
      if (before) {
        updated++;
        // Rewriting an identical record would only churn pages, the change log and the index.
        if (before.body === body) continue;
        const seq = this.changeLog.append(collection, id, false);
        updateDoc.run(body, size, seq, collection, id);
        incoming.index(batch, i, parseBody(this.ctx, before.body));
        sizeDelta += size - before.size;
      } else {
        inserted++;
        const seq = this.changeLog.append(collection, id, false);
        insertDoc.run(collection, id, body, size, seq);
        incoming.index(batch, i);
        sizeDelta += size;
      }
      changed.push(i);
    }
    if (!attributes) batch.flush();
    adjustStats(statements, collection, inserted, sizeDelta);
    if (changed.length > 0) {
      const written = incoming.written(changed);
      for (const hook of this.hooks) hook.onUpsert(collection, written);
    }
    return { inserted, updated };
  }

  /** Deletes these records inside the caller's transaction; returns their ids. */
  deleteInTransaction(collection: string, victims: Doc[]): string[] {
    const { statements } = this.ctx;
    const removeDoc = statements.get('DELETE FROM docs WHERE collection = ? AND id = ? RETURNING size');
    const ids = victims.map((d) => d.id);
    let sizeDelta = 0;
    for (const doc of victims) {
      const row = removeDoc.get(collection, doc.id) as { size: number } | undefined;
      sizeDelta -= row?.size ?? 0;
      removeEntries(this.ctx, collection, doc);
      this.changeLog.append(collection, doc.id, true);
    }
    if (ids.length > 0) {
      adjustStats(statements, collection, -ids.length, sizeDelta);
      for (const hook of this.hooks) hook.onDelete(collection, ids);
    }
    return ids;
  }
}
