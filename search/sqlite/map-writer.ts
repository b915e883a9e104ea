/**
 * Writing the embedded search index's map (its tables are described in `fts-index.ts`): records,
 * groups, paths and strings are keyed, and each owner's map rows made exactly those of its pairs,
 * a batch in a handful of statements. The store's write hook and a rebuild both write through it.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { Doc } from '../../src/store/port.ts';
import type { StatementCache } from '../../src/store/sqlite/statement-cache.ts';
import { insertRows } from '../../src/store/sqlite/multi-row-insert.ts';
import { fingerprintOf } from '../indexed-values.ts';
import { prepareBatch, type PreparedBatch } from './prepared-batch.ts';
import { STRINGS_GENERATION } from './strings-generation.ts';

/** A renewing batch of at least this many rows, most of them written, turns the rebuild to bulk. */
const BULK_AFTER_ROWS = 1000;

interface StoredRecord {
  rowid: number;
  id: string;
  fingerprint: string;
  grp: number | null;
}

/**
 * A rebuild renewing a collection's entries in place: the groups renewed so far; whether the
 * collection is most of the map, so the by-string index may be dropped; and whether it was.
 */
export interface Renewal {
  collection: string;
  groups: Set<number>;
  bulkable: boolean;
  bulk: boolean;
}

/** Writes batches of records into the map, and erases records from it. */
export class MapWriter {
  /** The rebuild renewing a collection in place, while one runs (set by the index). */
  renewing: Renewal | null = null;

  constructor(
    private readonly db: Database,
    private readonly statements: StatementCache,
  ) {}

  private stmt(sql: string): Statement {
    return this.statements.get(sql);
  }

  private recordKeys(collection: string, ids: string[]): StoredRecord[] {
    return this.stmt(
      'SELECT rowid, id, fingerprint, grp FROM search_records WHERE collection = ? AND id IN (SELECT value FROM json_each(?))',
    ).all(collection, JSON.stringify(ids)) as StoredRecord[];
  }

  /**
   * Indexes records; with `skipUnchanged`, records whose fingerprint is already stored are left
   * alone. `texts`, the records as stored, spare serialising them again for their fingerprints. A batch costs a handful of statements (JSON arrays expanded by `json_each`), not a few
   * per value: per-statement overhead would otherwise set the build rate.
   */
  write(collection: string, docs: Doc[], skipUnchanged: boolean, texts?: string[]): number {
    if (docs.length === 0) return 0;
    if (skipUnchanged) {
      // Leave out what is already indexed before the work of extracting it.
      const stored = new Map(
        this.recordKeys(
          collection,
          docs.map((d) => d.id),
        ).map((r) => [r.id, r.fingerprint]),
      );
      if (stored.size > 0) docs = docs.filter((d) => stored.get(d.id) !== fingerprintOf(d));
    }
    return this.apply(collection, prepareBatch(docs, skipUnchanged ? undefined : texts), skipUnchanged);
  }

  /**
   * Writes a prepared batch: replaces the map rows of records indexed before, points records at
   * their groups (creating the missing ones with their pairs) and adds each record's own pairs.
   * With `skipUnchanged`, records whose fingerprint is already stored are left alone.
   */
  apply(collection: string, batch: PreparedBatch, skipUnchanged: boolean): number {
    if (batch.ids.length === 0) return 0;
    const renewing = this.renewing?.collection === collection ? this.renewing : null;
    const stored = new Map(this.recordKeys(collection, batch.ids).map((r) => [r.id, r]));
    const renewed: number[] = [];
    const written: number[] = [];
    batch.ids.forEach((id, i) => {
      const before = stored.get(id);
      if (skipUnchanged && before?.fingerprint === batch.fingerprints[i]) return;
      if (before !== undefined) renewed.push(before.rowid);
      written.push(i);
    });
    if (written.length === 0) return 0;
    const groups = this.groupKeys(collection, batch, new Set(written.map((i) => batch.groupOf[i]!)));

    // Records rows, written only when new or changed; a record keeps its key when updated.
    const changed: Array<[string, string, number | null]> = [];
    for (const i of written) {
      const set = batch.groupOf[i]!;
      const row: [string, string, number | null] = [
        batch.ids[i]!,
        batch.fingerprints[i]!,
        set < 0 ? null : groups.get(set)!.key,
      ];
      const before = stored.get(row[0]);
      if (before?.fingerprint !== row[1] || before.grp !== row[2]) changed.push(row);
    }
    // RETURNING lists rows in no set order: keys are matched by id.
    const recordKey = new Map(
      changed.length === 0
        ? []
        : (this.stmt(
            'INSERT INTO search_records(collection, id, fingerprint, grp) ' +
              'SELECT ?, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?) WHERE true ' +
              'ON CONFLICT(collection, id) DO UPDATE SET fingerprint = excluded.fingerprint, grp = excluded.grp ' +
              'RETURNING id, rowid',
          )
            .raw()
            .all(collection, JSON.stringify(changed)) as Array<[string, number]>),
    );

    // Map rows: each record's pairs outside its group, and the pairs of groups created now.
    const owned: Array<[number, number[]]> = [];
    for (const i of written) {
      const key = recordKey.get(batch.ids[i]!) ?? stored.get(batch.ids[i]!)?.rowid;
      if (key === undefined)
        throw new Error(
          `search index: record id ${JSON.stringify(batch.ids[i])} did not read back as written`,
        );
      owned.push([key, batch.own[i]!]);
    }
    // Rows of owners indexed before are made exact: the records replaced, and during a rebuild
    // each group the first time a batch uses it.
    for (const [set, g] of groups) {
      if (g.created) owned.push([-g.key, batch.sets[set]!]);
      else if (renewing && !renewing.groups.has(g.key)) {
        renewing.groups.add(g.key);
        owned.push([-g.key, batch.sets[set]!]);
        renewed.push(-g.key);
      }
    }
    if (renewing) {
      this.stmt('DELETE FROM temp.search_unseen WHERE rowid IN (SELECT value FROM json_each(?))').run(
        JSON.stringify(owned.map(([owner]) => owner).filter((owner) => owner > 0)),
      );
    }
    // Keys the worker read stay valid if no string was removed since (read in this transaction).
    const known =
      batch.known !== undefined && batch.known.generation === this.stringsGeneration()
        ? batch.known.keys
        : undefined;
    const { rows, written: changedRows } = this.insertPairs(batch, owned, renewed, known);
    if (renewing?.bulkable && !renewing.bulk && rows >= BULK_AFTER_ROWS && changedRows * 2 > rows) {
      // Most rows are being written after all (a new layout, a damaged map): keeping the
      // by-string index up to date row by row is then dearer than building it once at the end.
      renewing.bulk = true;
      this.db.exec('DROP INDEX IF EXISTS search_values_by_string');
    }
    return written.length;
  }

  /**
   * The group of each shared set in `used`, created when missing (its pairs must then be
   * written). Looked up in the database every time: another process may have rebuilt the index.
   */
  private groupKeys(
    collection: string,
    batch: PreparedBatch,
    used: Set<number>,
  ): Map<number, { key: number; created: boolean }> {
    const out = new Map<number, { key: number; created: boolean }>();
    used.delete(-1);
    if (used.size === 0) return out;
    const hashes = [...used].map((set) => batch.hashes[set]!);
    const { keys: key, added: created } = this.keysOf('search_groups', 'hash', hashes, collection);
    for (const set of used) {
      const hash = batch.hashes[set]!;
      out.set(set, { key: key.get(hash)!, created: created.has(hash) });
    }
    return out;
  }

  /**
   * Writes map rows for owners and their pairs (numbers of `batch`), adding unseen paths and
   * strings; the other rows of the `renewed` owners are deleted. Rows already there are neither
   * written nor deleted, so renewing an exact index writes nothing. `known` holds string keys by
   * pair, already looked up (0: look it up here).
   */
  private insertPairs(
    batch: PreparedBatch,
    owned: Array<[number, number[]]>,
    renewed: number[],
    known?: Float64Array,
  ): { rows: number; written: number } {
    const paths = new Set<string>();
    const strings = new Set<string>();
    for (const [, mine] of owned)
      for (const p of mine) {
        paths.add(batch.pairPath[p]!);
        if (!known?.[p]) strings.add(batch.pairValue[p]!);
      }
    const pathKey = this.keysOf('search_paths', 'path', [...paths]).keys;
    const stringKey = this.stringKeys([...strings]);
    const rows: Array<[number, number, number]> = [];
    for (const [owner, mine] of owned)
      for (const p of mine) {
        const path = pathKey.get(batch.pairPath[p]!);
        const string = known?.[p] || stringKey.get(batch.pairValue[p]!);
        // A missing key would make INSERT OR IGNORE drop the row, and the record would be missed.
        if (path === undefined || string === undefined)
          throw new Error('search index: a path or string did not read back as written');
        rows.push([owner, path, string]);
      }
    return { rows: rows.length, written: this.writeRows(rows, renewed) };
  }

  /**
   * Makes the map rows of the `renewed` owners exactly those of `rows` among theirs, and adds the
   * rows of other owners. The rows already there are compared in memory: only the difference is
   * written, and renewing an exact index writes nothing.
   */
  private writeRows(rows: Array<[number, number, number]>, renewed: number[]): number {
    let deleted = 0;
    let missing = rows;
    if (renewed.length > 0) {
      // Each renewed owner's wanted rows by (path, string), as one number while keys are small.
      const pairOf = (path: number, string: number): number | string =>
        path < 2 ** 21 && string < 2 ** 32 ? path * 2 ** 32 + string : `${path},${string}`;
      const wanted = new Map<number, Map<number | string, [number, number, number]>>(
        renewed.map((owner) => [owner, new Map()]),
      );
      missing = [];
      for (const row of rows) {
        const mine = wanted.get(row[0]);
        if (mine) mine.set(pairOf(row[1], row[2]), row);
        else missing.push(row);
      }
      const wrong: Array<[number, number, number]> = [];
      const present = this.stmt(
        'SELECT record, path, string FROM search_values WHERE record IN (SELECT value FROM json_each(?))',
      )
        .raw()
        .all(JSON.stringify(renewed)) as Array<[number, number, number]>;
      for (const row of present) if (!wanted.get(row[0])!.delete(pairOf(row[1], row[2]))) wrong.push(row);
      for (const mine of wanted.values()) for (const row of mine.values()) missing.push(row);
      deleted = wrong.length;
      if (wrong.length > 0)
        this.stmt(
          'DELETE FROM search_values WHERE (record, path, string) IN (SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?))',
        ).run(JSON.stringify(wrong));
    }
    this.insertRows(missing);
    return deleted + missing.length;
  }

  /** Inserts map rows (those already there are ignored), bound as numbers (`insertRows`). */
  private insertRows(rows: Array<[number, number, number]>): void {
    insertRows(
      this.statements,
      'INSERT OR IGNORE INTO search_values(record, path, string) VALUES',
      3,
      rows.length,
      (params, at, i) => {
        const row = rows[i]!;
        params[at] = row[0];
        params[at + 1] = row[1];
        params[at + 2] = row[2];
      },
    );
  }

  /**
   * Keys of `values` in a table with a unique text `column` (scoped to `collection` when given),
   * adding the missing ones; `added` lists those. The values are inserted first and only those
   * the insert ignored (already there) are looked up. (Strings have `stringKeys`.)
   */
  private keysOf(
    table: 'search_paths' | 'search_groups',
    column: 'path' | 'hash',
    values: string[],
    collection?: string,
  ): { keys: Map<string, number>; added: Set<string> } {
    if (values.length === 0) return { keys: new Map(), added: new Set() };
    const scope = collection === undefined ? [] : [collection];
    const scoped = collection === undefined ? '' : 'collection = ? AND ';
    const into =
      collection === undefined ? `${table}(${column}) SELECT` : `${table}(collection, ${column}) SELECT ?,`;
    const keys = new Map(
      this.stmt(`INSERT OR IGNORE INTO ${into} value FROM json_each(?) RETURNING ${column}, rowid`)
        .raw()
        .all(...scope, JSON.stringify(values)) as Array<[string, number]>,
    );
    const added = new Set(keys.keys());
    if (keys.size < values.length) {
      const there = values.filter((v) => !added.has(v));
      const rows = this.stmt(
        `SELECT ${column}, rowid FROM ${table} WHERE ${scoped}${column} IN (SELECT value FROM json_each(?))`,
      )
        .raw()
        .all(...scope, JSON.stringify(there)) as Array<[string, number]>;
      for (const [value, rowid] of rows) keys.set(value, rowid);
    }
    return { keys, added };
  }

  /**
   * Keys of strings, adding the missing ones, which are then tokenized into the trigram index in
   * one statement (`tokenizeFrom`). Each string is inserted with the key it would get if it were
   * new, the next ones after the highest; only those the insert ignored (already there: the
   * strings of the write's earlier batches, or of another writer since the batch was prepared) are
   * read back. 603,000 new strings into an empty table: 0.70-1.12 s, against 1.26-1.35 s with
   * every key read back (`RETURNING value, rowid`, a JS string per row).
   */
  private stringKeys(values: string[]): Map<string, number> {
    if (values.length === 0) return new Map();
    const last = this.lastStringKey();
    const added = this.stmt(
      'INSERT OR IGNORE INTO search_strings(rowid, value) SELECT ? + key, value FROM json_each(?)',
    ).run(last + 1, JSON.stringify(values)).changes;
    const keys = new Map(values.map((v, i) => [v, last + 1 + i]));
    if (added > 0) this.tokenizeFrom(last);
    if (added < values.length) {
      // The keys given (integers, cheap to read) tell which strings were ignored.
      const given = new Uint8Array(values.length);
      for (const key of this.stmt('SELECT rowid FROM search_strings WHERE rowid > ?')
        .pluck()
        .all(last) as number[])
        given[key - last - 1] = 1;
      const there = values.filter((_, i) => given[i] === 0);
      for (const value of there) keys.delete(value);
      const rows = this.stmt(
        'SELECT value, rowid FROM search_strings WHERE value IN (SELECT value FROM json_each(?))',
      )
        .raw()
        .all(JSON.stringify(there)) as Array<[string, number]>;
      for (const [value, rowid] of rows) keys.set(value, rowid);
    }
    return keys;
  }

  /** The highest key of a string (0: none). Strings added later get higher keys. */
  private lastStringKey(): number {
    return (this.stmt('SELECT max(rowid) FROM search_strings').pluck().get() as number | null) ?? 0;
  }

  /**
   * Tokenizes the strings with keys above `last` (those just added) into the trigram index. One
   * statement for a batch's strings rather than an insert trigger firing per string: 603,000
   * strings took 3.2-3.4 s instead of 4.1-4.6 s.
   */
  private tokenizeFrom(last: number): void {
    this.stmt(
      'INSERT INTO search_trigram(rowid, value) SELECT rowid, value FROM search_strings WHERE rowid > ?',
    ).run(last);
  }

  /** Removes records: their own map rows and their records row (a group they were in stays until pruned). */
  erase(collection: string, ids: string[]): void {
    this.eraseKeys(this.recordKeys(collection, ids).map((r) => r.rowid));
  }

  /** Removes records by their keys (as `erase`). */
  eraseKeys(records: number[]): void {
    const keys = JSON.stringify(records);
    this.stmt('DELETE FROM search_values WHERE record IN (SELECT value FROM json_each(?))').run(keys);
    this.stmt('DELETE FROM search_records WHERE rowid IN (SELECT value FROM json_each(?))').run(keys);
  }

  private stringsGeneration(): number {
    return (this.stmt(STRINGS_GENERATION.read).pluck().get() as number | undefined) ?? 0;
  }
}
