/**
 * The attribute index's writes for a batch of records in one statement each rather than a few
 * per record: the entries and irregular marks of the batch's records inserted in key order from
 * one JSON array, and each path's record count adjusted once. What a record's new version no
 * longer has is deleted first, record by record (updates only). A record written twice in a batch
 * is indexed at its last version.
 */
import type { Doc } from '../port.ts';
import {
  coveredPaths,
  indexRecord,
  type EntryWriter,
  type IndexValue,
  type RecordIndex,
} from './attribute-index.ts';
import { insertRows } from './multi-row-insert.ts';
import { entriesOf, recordIndexAt, type PreparedRecords } from './prepared-records.ts';

/** Entries (key, value, id) inserted by `insertRows`; a JS number is bound as REAL. */
const INSERT_ENTRIES = 'INSERT OR IGNORE INTO attr_index(key, value, id) VALUES';
const INSERT_IRREGULAR =
  'INSERT OR IGNORE INTO attr_irregular(key, id) SELECT value ->> 0, value ->> 1 FROM json_each(?) ORDER BY 1, 2';
const DELETE_ENTRY = 'DELETE FROM attr_index WHERE key = ? AND value = ? AND id = ?';
const DELETE_IRREGULAR = 'DELETE FROM attr_irregular WHERE key = ? AND id = ?';
const ADD_RECORDS = 'UPDATE attr_paths SET records = records + ? WHERE key = ?';

/** Irregular marks per insert statement of a flush. */
const FLUSH_SLICE = 50_000;

const entryKey = (p: string, v: IndexValue) => `${p}\u0000${typeof v}\u0000${v}`;

/** A record's entries in a batch the writing thread's workers prepared (see prepared-records.ts). */
interface PreparedIndex {
  prepared: PreparedRecords;
  at: number;
}

/**
 * The attribute index writes of one batch of records of one collection, inside the caller's
 * transaction. A batch may span several writes of one transaction (an atomic write of many
 * records): its entries are then inserted in key order once, at its `flush`.
 */
export class AttributeBatch {
  /** The last version of each record written in the batch: its index, or where it was prepared. */
  private readonly now = new Map<string, RecordIndex | PreparedIndex>();
  /** Records covered, by key: versions written less the versions they replace. */
  private readonly records = new Map<number, number>();

  constructor(
    private readonly w: EntryWriter,
    private readonly collection: string,
  ) {}

  private count(path: string, by: number): void {
    const key = this.w.keys.ensure(this.collection, path);
    this.records.set(key, (this.records.get(key) ?? 0) + by);
  }

  /** A record written; `before` is the version it replaces (the stored one, or one written earlier in the batch). */
  add(doc: Doc, before?: Doc): void {
    this.addIndex(doc.id, indexRecord(doc), before);
  }

  /**
   * Record `at` of a prepared batch written (its entries are read from there at `flush`);
   * `before` as for `add`.
   */
  addPrepared(prepared: PreparedRecords, at: number, before?: Doc): void {
    const id = prepared.ids[at]!;
    if (before) return this.addIndex(id, recordIndexAt(prepared, at), before);
    const { paths, path, irregular } = prepared.entries;
    const { from, to } = entriesOf(prepared, at);
    // A path's entries are together (`indexRecord` takes the paths one by one).
    for (let k = from; k < to; k++)
      if (k === from || path[k] !== path[k - 1]) this.count(paths[path[k]!]!, 1);
    for (const n of irregular[at] ?? []) {
      let entered = false;
      for (let k = from; k < to && !entered; k++) entered = path[k] === n;
      if (!entered) this.count(paths[n]!, 1);
    }
    this.now.set(id, { prepared, at });
  }

  private addIndex(id: string, now: RecordIndex, before?: Doc): void {
    const { statements, keys } = this.w;
    const paths = coveredPaths(now);
    if (before) {
      // Entries in the table that the new version does not keep; those it keeps are inserted
      // again and ignored. (A version written earlier in this batch has none in the table yet.)
      const keep = new Set(now.entries.map(([p, v]) => entryKey(p, v)));
      const old = indexRecord(before);
      const deleteEntry = statements.get(DELETE_ENTRY);
      const deleteIrregular = statements.get(DELETE_IRREGULAR);
      for (const [p, v] of old.entries)
        if (!keep.has(entryKey(p, v))) deleteEntry.run(keys.get(this.collection, p), v, id);
      for (const p of old.irregular)
        if (!now.irregular.includes(p)) deleteIrregular.run(keys.get(this.collection, p), id);
      for (const p of coveredPaths(old)) {
        if (paths.has(p)) paths.delete(p);
        else this.count(p, -1);
      }
    }
    for (const p of paths) this.count(p, 1);
    this.now.set(id, now);
  }

  /**
   * Writes the batch's entries, irregular marks and record counts. Entries go in key by key (in
   * record order within a key), so each path's part of the index is written in one stretch; their
   * values are not sorted: sorting 10^6 entries by value here cost more than it saved SQLite.
   */
  flush(): void {
    const { statements, keys } = this.w;
    const byPath = new Map<string, Array<IndexValue | string>>();
    const irregular: Array<[number, string]> = [];
    let count = 0;
    const pairsOf = (p: string) => {
      let pairs = byPath.get(p);
      if (!pairs) byPath.set(p, (pairs = []));
      return pairs;
    };
    for (const [id, r] of this.now) {
      if ('prepared' in r) {
        const { paths, path, value, irregular: odd } = r.prepared.entries;
        const { from, to } = entriesOf(r.prepared, r.at);
        for (let k = from; k < to; k++) pairsOf(paths[path[k]!]!).push(value[k]!, id);
        count += to - from;
        for (const n of odd[r.at] ?? []) irregular.push([keys.ensure(this.collection, paths[n]!), id]);
        continue;
      }
      for (const [p, v] of r.entries) pairsOf(p).push(v, id);
      count += r.entries.length;
      for (const p of r.irregular) irregular.push([keys.ensure(this.collection, p), id]);
    }
    const byKey = [...byPath]
      .map(([p, pairs]) => [keys.ensure(this.collection, p), pairs] as const)
      .sort(([a], [b]) => a - b);
    // Flattened in key order: [key, value, id] per entry.
    const entries: Array<IndexValue | string> = new Array(count * 3);
    let at = 0;
    for (const [key, pairs] of byKey) {
      for (let i = 0; i < pairs.length; i += 2) {
        entries[at++] = key;
        entries[at++] = pairs[i]!;
        entries[at++] = pairs[i + 1]!;
      }
    }
    insertRows(statements, INSERT_ENTRIES, 3, count, (params, to, row) => {
      params[to] = entries[3 * row];
      params[to + 1] = entries[3 * row + 1];
      params[to + 2] = entries[3 * row + 2];
    });
    const insertIrregular = statements.get(INSERT_IRREGULAR);
    for (let i = 0; i < irregular.length; i += FLUSH_SLICE)
      insertIrregular.run(JSON.stringify(irregular.slice(i, i + FLUSH_SLICE)));
    const addRecords = statements.get(ADD_RECORDS);
    for (const [key, n] of this.records) if (n !== 0) addRecords.run(n, key);
    this.now.clear();
    this.records.clear();
  }
}
