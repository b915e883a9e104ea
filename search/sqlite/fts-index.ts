/**
 * The embedded search index: SQLite FTS5 tables in the store's own file. One row per distinct
 * (record, path, string value) in `search_values`; two external-content FTS5 tables read it:
 * `search_trigram` (trigram tokenizer, case-insensitive) answers regex and substring predicates,
 * `search_words` (unicode61) answers word predicates. Triggers keep both in step with the rows,
 * and the store's write hook keeps the rows in step with the records inside the same
 * transaction, so the index is never behind.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { Doc } from '../../src/store/port.ts';
import type { Candidates, IndexablePredicate, SearchIndex } from '../port.ts';
import { fingerprintOf, indexedPathScope, indexedValuesOf } from '../indexed-values.ts';
import { trigramQueryOfPredicate } from '../predicates.ts';
import type { TrigramQuery } from '../regex/trigram-query.ts';
import { wordsOf } from '../words.ts';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS search_values (
    rowid INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    path TEXT NOT NULL,
    value TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS search_values_by_record ON search_values(collection, id);
  CREATE VIRTUAL TABLE IF NOT EXISTS search_trigram USING fts5(
    value, content = 'search_values', content_rowid = 'rowid', tokenize = 'trigram case_sensitive 0'
  );
  CREATE VIRTUAL TABLE IF NOT EXISTS search_words USING fts5(
    value, content = 'search_values', content_rowid = 'rowid', detail = none,
    tokenize = 'unicode61 remove_diacritics 0'
  );
  CREATE TRIGGER IF NOT EXISTS search_values_added AFTER INSERT ON search_values BEGIN
    INSERT INTO search_trigram(rowid, value) VALUES (new.rowid, new.value);
    INSERT INTO search_words(rowid, value) VALUES (new.rowid, new.value);
  END;
  CREATE TRIGGER IF NOT EXISTS search_values_removed AFTER DELETE ON search_values BEGIN
    INSERT INTO search_trigram(search_trigram, rowid, value) VALUES ('delete', old.rowid, old.value);
    INSERT INTO search_words(search_words, rowid, value) VALUES ('delete', old.rowid, old.value);
  END;
  CREATE TABLE IF NOT EXISTS search_records (
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    PRIMARY KEY (collection, id)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS search_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
`;

/** The write hook of the embedded store (see src/store/sqlite). */
export interface HookableStore {
  readonly db: Database;
  addWriteHook(hook: {
    onUpsert(collection: string, docs: Doc[]): void;
    onDelete(collection: string, ids: string[]): void;
  }): void;
}

const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** A trigram query as an FTS5 MATCH expression; atoms are quoted strings (substrings). */
export function ftsMatchOf(q: TrigramQuery): string {
  if (q.op === 'all' || q.op === 'none') throw new Error(`${q.op} has no MATCH form`);
  const parts = [...q.atoms.map(quote), ...q.subs.map((s) => `(${ftsMatchOf(s)})`)];
  return parts.join(q.op === 'and' ? ' AND ' : ' OR ');
}

export class FtsSearchIndex implements SearchIndex {
  readonly engine = 'sqlite-fts5' as const;
  readonly synchronous: boolean;
  private readonly statements = new Map<string, Statement>();

  /**
   * @param db the database to keep the index in.
   * @param mode `hooked`: the store calls `write()`/`erase()` inside its own write transaction;
   *   `ownsDatabase`: close the database with the index.
   */
  constructor(
    readonly db: Database,
    private readonly mode: { hooked: boolean; ownsDatabase: boolean },
  ) {
    db.exec(SCHEMA);
    this.synchronous = mode.hooked;
  }

  /** Opens the index inside an embedded store's file and keeps it in step through the write hook. */
  static attachTo(store: HookableStore): FtsSearchIndex {
    const index = new FtsSearchIndex(store.db, { hooked: true, ownsDatabase: false });
    store.addWriteHook({
      onUpsert: (collection, docs) => index.write(collection, docs, false),
      onDelete: (collection, ids) => index.erase(collection, ids),
    });
    return index;
  }

  private stmt(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Indexes records; with `skipUnchanged`, records whose fingerprint is already stored are left alone. */
  write(collection: string, docs: Doc[], skipUnchanged: boolean): number {
    const current = this.stmt(
      'SELECT fingerprint FROM search_records WHERE collection = ? AND id = ?',
    ).pluck();
    const removeValues = this.stmt('DELETE FROM search_values WHERE collection = ? AND id = ?');
    const insertValue = this.stmt(
      'INSERT INTO search_values(collection, id, path, value) VALUES (?, ?, ?, ?)',
    );
    const upsertRecord = this.stmt(
      'INSERT INTO search_records(collection, id, fingerprint) VALUES (?, ?, ?) ' +
        'ON CONFLICT(collection, id) DO UPDATE SET fingerprint = excluded.fingerprint',
    );
    let written = 0;
    for (const doc of docs) {
      const fingerprint = fingerprintOf(doc);
      const before = current.get(collection, doc.id) as string | undefined;
      if (skipUnchanged && before === fingerprint) continue;
      if (before !== undefined) removeValues.run(collection, doc.id);
      for (const { path, value } of indexedValuesOf(doc)) insertValue.run(collection, doc.id, path, value);
      upsertRecord.run(collection, doc.id, fingerprint);
      written++;
    }
    return written;
  }

  erase(collection: string, ids: string[]): void {
    const removeValues = this.stmt('DELETE FROM search_values WHERE collection = ? AND id = ?');
    const removeRecord = this.stmt('DELETE FROM search_records WHERE collection = ? AND id = ?');
    for (const id of ids) {
      removeValues.run(collection, id);
      removeRecord.run(collection, id);
    }
  }

  async index(collection: string, docs: Doc[]): Promise<void> {
    // Records already written through the hook have the same fingerprint: nothing to do.
    this.db.transaction(() => this.write(collection, docs, true))();
  }

  async remove(collection: string, ids: string[]): Promise<void> {
    this.db.transaction(() => this.erase(collection, ids))();
  }

  async candidates(collection: string, predicate: IndexablePredicate, limit: number): Promise<Candidates> {
    let match: string;
    let table: 'search_trigram' | 'search_words';
    if (predicate.kind === 'words') {
      const words = wordsOf(predicate.text);
      if (words.length === 0) return { all: true };
      match = words.map(quote).join(' AND ');
      table = 'search_words';
    } else {
      const query = trigramQueryOfPredicate(predicate);
      if (query.op === 'all') return { all: true };
      if (query.op === 'none') return { all: false, ids: new Set() };
      match = ftsMatchOf(query);
      table = 'search_trigram';
    }
    const scope = indexedPathScope(predicate.path);
    const rows = this.stmt(
      `SELECT v.id FROM ${table} f JOIN search_values v ON v.rowid = f.rowid ` +
        `WHERE ${table} MATCH ? AND v.collection = ? AND (? = '' OR v.path = ? OR (v.path > ? AND v.path < ?))`,
    )
      .pluck()
      .iterate(match, collection, scope, scope, `${scope}.`, `${scope}/`) as IterableIterator<string>;
    const ids = new Set<string>();
    for (const id of rows) {
      ids.add(id);
      if (ids.size > limit) {
        rows.return?.();
        return { all: true };
      }
    }
    return { all: false, ids };
  }

  async clear(collection: string): Promise<void> {
    this.db.transaction(() => {
      this.stmt('DELETE FROM search_values WHERE collection = ?').run(collection);
      this.stmt('DELETE FROM search_records WHERE collection = ?').run(collection);
    })();
  }

  async *fingerprints(collection: string): AsyncIterable<Array<{ id: string; fingerprint: string }>> {
    let after = '';
    for (;;) {
      const batch = this.stmt(
        'SELECT id, fingerprint FROM search_records WHERE collection = ? AND id > ? ORDER BY id LIMIT 5000',
      ).all(collection, after) as Array<{ id: string; fingerprint: string }>;
      if (batch.length === 0) return;
      yield batch;
      after = batch[batch.length - 1]!.id;
    }
  }

  async watermark(): Promise<number> {
    const v = this.stmt("SELECT value FROM search_meta WHERE key = 'watermark'").pluck().get() as
      number | undefined;
    return v ?? 0;
  }

  async setWatermark(seq: number): Promise<void> {
    this.stmt(
      "INSERT INTO search_meta(key, value) VALUES ('watermark', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    ).run(seq);
  }

  /** Bytes used by the index tables (benchmark and stats). */
  sizeBytes(): number {
    try {
      const rows = this.db
        .prepare("SELECT sum(pgsize) AS bytes FROM dbstat WHERE name LIKE 'search\\_%' ESCAPE '\\'")
        .get() as { bytes: number | null };
      return rows.bytes ?? 0;
    } catch {
      return 0;
    }
  }

  async close(): Promise<void> {
    this.statements.clear();
    if (this.mode.ownsDatabase && this.db.open) this.db.close();
  }
}
