/**
 * The embedded edge index: two tables in the store file, written by the store's write hook in
 * the same transaction as the records, so a walk never sees a record without its edges.
 *
 * `graph_nodes` interns every id the graph mentions (records, and ids only referenced so far)
 * as an integer key; `collection` is set while the id is a record. `graph_edges` holds one row
 * per (upstream, downstream, slot, holder) with integer ends, indexed both ways, so a walk step
 * is an index range per id.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { Doc } from '../../store/port.ts';
import { StatementCache } from '../../store/sqlite/statement-cache.ts';
import { recordGraphAt, type RecordGraph } from '../../store/sqlite/prepared-records.ts';
import type { WrittenRecords } from '../../store/sqlite/records.ts';
import { fingerprintAmong, fingerprintOf } from '../../../search/indexed-values.ts';
import type { HookableStore } from '../../../search/sqlite/fts-index.ts';
import { edgesOf, inGraph, typeOf } from '../edges.ts';
import type { Direction, EdgeIndex, NodeInfo, Referrer, Step } from '../port.ts';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS graph_nodes (
    key INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    collection TEXT,
    type TEXT,
    fingerprint TEXT
  );
  CREATE INDEX IF NOT EXISTS graph_nodes_collection ON graph_nodes(collection, id);
  CREATE TABLE IF NOT EXISTS graph_edges (
    up INTEGER NOT NULL,
    down INTEGER NOT NULL,
    slot TEXT NOT NULL,
    holder INTEGER NOT NULL,
    PRIMARY KEY (up, down, slot, holder)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS graph_edges_down ON graph_edges(down, up);
  CREATE TABLE IF NOT EXISTS graph_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
`;

/** A write's records as the edges need them, position by position. */
interface GraphView {
  ids: string[];
  graphAt(i: number): RecordGraph;
  fingerprintAt(i: number): string;
}

/** The view of records (`texts`, the records as stored, spare serialising them for fingerprints). */
function viewOfDocs(docs: Doc[], texts?: string[]): GraphView {
  return {
    ids: docs.map((d) => d.id),
    graphAt: (i) => ({ type: typeOf(docs[i]!), edges: edgesOf(docs[i]!) }),
    fingerprintAt: (i) => (texts ? fingerprintAmong(texts, i) : fingerprintOf(docs[i]!)),
  };
}

/** The view of a write hook's records: from what the writing thread's workers prepared, if they did. */
function viewOfWritten(written: WrittenRecords): GraphView {
  const prepared = written.prepared;
  if (!prepared?.records.graph) return viewOfDocs(written.docs(), written.texts);
  const { records, positions } = prepared;
  return {
    ids: written.ids,
    graphAt: (i) => recordGraphAt(records, positions[i]!),
    fingerprintAt: (i) => fingerprintAmong(written.texts, i),
  };
}

/** `holder` column values: which end of the edge holds the reference. */
const UP_HOLDS = 0;
const DOWN_HOLDS = 1;

const FINGERPRINT_PAGE = 2000;

export class SqliteEdgeIndex implements EdgeIndex {
  readonly engine = 'sqlite' as const;
  readonly synchronous = true;
  private readonly statements: StatementCache;

  private constructor(private readonly db: Database) {
    db.exec(SCHEMA);
    this.statements = new StatementCache(db);
  }

  /** Keeps the edges in the store's write transactions from now on. */
  static attachTo(store: HookableStore): SqliteEdgeIndex {
    const index = new SqliteEdgeIndex(store.db);
    store.addWriteHook({
      onUpsert: (collection, written) => {
        if (inGraph(collection) && written.ids.length > 0)
          index.writeView(collection, viewOfWritten(written));
      },
      onDelete: (collection, ids) => index.erase(collection, ids),
    });
    return index;
  }

  covers(collection: string): boolean {
    return inGraph(collection);
  }

  /** True once the edges were built for every record the store held when the tables appeared. */
  isBuilt(): boolean {
    return this.meta('built') === 1;
  }

  markBuilt(): void {
    this.setMeta('built', 1);
  }

  private stmt(sql: string): Statement {
    return this.statements.get(sql);
  }

  private meta(key: string): number | undefined {
    return this.stmt('SELECT value FROM graph_meta WHERE key = ?').pluck().get(key) as number | undefined;
  }

  private setMeta(key: string, value: number): void {
    this.stmt(
      'INSERT INTO graph_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    ).run(key, value);
  }

  /** The key of `id`, interning it when new. */
  private keyOf(id: string): number {
    const key = this.stmt('SELECT key FROM graph_nodes WHERE id = ?').pluck().get(id) as number | undefined;
    if (key !== undefined) return key;
    return this.stmt('INSERT INTO graph_nodes(id) VALUES (?) RETURNING key').pluck().get(id) as number;
  }

  /** Removes the edges the record `key` holds; returns the other ends, for `collect`. */
  private dropHeldEdges(key: number): number[] {
    const ends = [
      ...(this.stmt('DELETE FROM graph_edges WHERE up = ? AND holder = ? RETURNING down')
        .pluck()
        .all(key, UP_HOLDS) as number[]),
      ...(this.stmt('DELETE FROM graph_edges WHERE down = ? AND holder = ? RETURNING up')
        .pluck()
        .all(key, DOWN_HOLDS) as number[]),
    ];
    return ends;
  }

  /** Forgets ids that are no record and no edge mentions any more. */
  private collect(keys: Iterable<number>): void {
    const gc = this.stmt(
      `DELETE FROM graph_nodes WHERE key = @key AND collection IS NULL
         AND NOT EXISTS (SELECT 1 FROM graph_edges WHERE up = @key)
         AND NOT EXISTS (SELECT 1 FROM graph_edges WHERE down = @key)`,
    );
    for (const key of new Set(keys)) gc.run({ key });
  }

  /**
   * Writes the nodes and edges of the records at `positions` of `view` one record at a time,
   * replacing the edges each held before (the caller holds a transaction).
   */
  private writeOneByOne(collection: string, view: GraphView, positions: number[]): void {
    const find = this.stmt('SELECT key, collection FROM graph_nodes WHERE id = ?');
    const insertNode = this.stmt(
      'INSERT INTO graph_nodes(id, collection, type, fingerprint) VALUES (?, ?, ?, ?) RETURNING key',
    );
    const updateNode = this.stmt(
      'UPDATE graph_nodes SET collection = ?, type = ?, fingerprint = ? WHERE key = ?',
    );
    const insertEdge = this.stmt(
      'INSERT OR IGNORE INTO graph_edges(up, down, slot, holder) VALUES (?, ?, ?, ?)',
    );
    const orphans: number[] = [];
    for (const i of positions) {
      const id = view.ids[i]!;
      const { type, edges } = view.graphAt(i);
      const fingerprint = view.fingerprintAt(i);
      const found = find.get(id) as { key: number; collection: string | null } | undefined;
      let key: number;
      if (found === undefined) {
        key = insertNode.pluck().get(id, collection, type, fingerprint) as number;
      } else {
        key = found.key;
        if (found.collection !== null) orphans.push(...this.dropHeldEdges(key));
        updateNode.run(collection, type, fingerprint, key);
      }
      for (const edge of edges) {
        if (edge.holder === 'down') insertEdge.run(this.keyOf(edge.up), key, edge.slot, DOWN_HOLDS);
        else insertEdge.run(key, this.keyOf(edge.down), edge.slot, UP_HOLDS);
      }
    }
    if (orphans.length > 0) this.collect(orphans);
  }

  /** Removes deleted records: their edges go, references to them stay (they may come back). */
  erase(collection: string, ids: string[]): void {
    if (!inGraph(collection) || ids.length === 0) return;
    const find = this.stmt('SELECT key FROM graph_nodes WHERE id = ? AND collection = ?').pluck();
    const unset = this.stmt(
      'UPDATE graph_nodes SET collection = NULL, type = NULL, fingerprint = NULL WHERE key = ?',
    );
    const touched: number[] = [];
    for (const id of ids) {
      const key = find.get(id, collection) as number | undefined;
      if (key === undefined) continue;
      touched.push(key, ...this.dropHeldEdges(key));
      unset.run(key);
    }
    this.collect(touched);
  }

  async index(collection: string, docs: Doc[]): Promise<void> {
    this.db.transaction(() => this.write(collection, docs))();
  }

  /**
   * Records as stored JSON text (a rebuild), written as `write` does.
   */
  async indexTexts(collection: string, texts: string[]): Promise<void> {
    if (!inGraph(collection) || texts.length === 0) return;
    const docs = texts.map((t) => JSON.parse(t) as Doc);
    this.db.transaction(() => this.write(collection, docs, texts))();
  }

  /**
   * Writes records' nodes and edges (the caller holds a transaction, or this is one statement
   * group); `texts`, the records as stored (their `JSON.stringify`), spare serialising them again
   * for their fingerprints. Records that are no node of a record yet (all of them in a new
   * collection or a rebuild after `clear`) are written a batch at a time, a few statements in all
   * (JSON arrays expanded by `json_each`): per-record statements would set the write rate. The
   * others replace their edges one by one.
   */
  write(collection: string, docs: Doc[], texts?: string[]): void {
    if (!inGraph(collection) || docs.length === 0) return;
    this.writeView(collection, viewOfDocs(docs, texts));
  }

  /** `write` of the records of `view`. */
  private writeView(collection: string, view: GraphView): void {
    const { ids } = view;
    const present = new Set(
      this.stmt(
        'SELECT n.id FROM json_each(?) j JOIN graph_nodes n ON n.id = j.value WHERE n.collection IS NOT NULL',
      )
        .pluck()
        .all(JSON.stringify(ids)) as string[],
    );
    // The last version of an id wins, as in the store.
    const latest = new Map<string, number>();
    ids.forEach((id, i) => {
      latest.delete(id);
      latest.set(id, i);
    });
    const nodes: Array<[string, string, string]> = [];
    const edges: Array<[string, string, string, number]> = [];
    const referenced = new Set<string>();
    const oneByOne: number[] = [];
    for (const i of latest.values()) {
      const id = ids[i]!;
      if (present.has(id)) {
        oneByOne.push(i);
        continue;
      }
      const graph = view.graphAt(i);
      nodes.push([id, graph.type, view.fingerprintAt(i)]);
      for (const edge of graph.edges) {
        referenced.add(edge.holder === 'down' ? edge.up : edge.down);
        edges.push([edge.up, edge.down, edge.slot, edge.holder === 'down' ? DOWN_HOLDS : UP_HOLDS]);
      }
    }
    if (nodes.length > 0)
      this.stmt(
        'INSERT INTO graph_nodes(id, collection, type, fingerprint) ' +
          'SELECT value ->> 0, ?, value ->> 1, value ->> 2 FROM json_each(?) WHERE true ' +
          'ON CONFLICT(id) DO UPDATE SET collection = excluded.collection, type = excluded.type, fingerprint = excluded.fingerprint',
      ).run(collection, JSON.stringify(nodes));
    if (referenced.size > 0)
      this.stmt('INSERT OR IGNORE INTO graph_nodes(id) SELECT value FROM json_each(?)').run(
        JSON.stringify([...referenced]),
      );
    if (edges.length > 0)
      this.stmt(
        'INSERT OR IGNORE INTO graph_edges(up, down, slot, holder) ' +
          'SELECT u.key, d.key, j.value ->> 2, j.value ->> 3 FROM json_each(?) j ' +
          'JOIN graph_nodes u ON u.id = j.value ->> 0 JOIN graph_nodes d ON d.id = j.value ->> 1',
      ).run(JSON.stringify(edges));
    if (oneByOne.length > 0) this.writeOneByOne(collection, view, oneByOne);
  }

  async remove(collection: string, ids: string[]): Promise<void> {
    this.db.transaction(() => this.erase(collection, ids))();
  }

  async clear(collection: string): Promise<void> {
    this.db.transaction(() => {
      const keys = this.stmt('SELECT key FROM graph_nodes WHERE collection = ?')
        .pluck()
        .all(collection) as number[];
      const touched: number[] = [];
      const unset = this.stmt(
        'UPDATE graph_nodes SET collection = NULL, type = NULL, fingerprint = NULL WHERE key = ?',
      );
      for (const key of keys) {
        touched.push(key, ...this.dropHeldEdges(key));
        unset.run(key);
      }
      this.collect(touched);
    })();
  }

  async *fingerprints(collection: string): AsyncIterable<Array<{ id: string; fingerprint: string }>> {
    let after = '';
    for (;;) {
      const rows = this.stmt(
        'SELECT id, fingerprint FROM graph_nodes WHERE collection = ? AND id > ? ORDER BY id LIMIT +?',
      ).all(collection, after, FINGERPRINT_PAGE) as Array<{ id: string; fingerprint: string }>;
      if (rows.length === 0) return;
      yield rows;
      after = rows[rows.length - 1]!.id;
    }
  }

  async nodes(ids: readonly string[]): Promise<NodeInfo[]> {
    if (ids.length === 0) return [];
    return this.stmt(
      `SELECT n.id, n.type, n.collection FROM json_each(?) j JOIN graph_nodes n ON n.id = j.value
        WHERE n.collection IS NOT NULL`,
    ).all(JSON.stringify(ids)) as NodeInfo[];
  }

  async step(ids: readonly string[], direction: Direction): Promise<Step[]> {
    if (ids.length === 0) return [];
    const [near, far] = direction === 'downstream' ? ['up', 'down'] : ['down', 'up'];
    return this.stmt(
      `SELECT f.id AS "from", t.id AS "to", e.slot AS slot, t.type AS type, t.collection AS collection
         FROM json_each(?) j
         JOIN graph_nodes f ON f.id = j.value
         JOIN graph_edges e ON e.${near} = f.key
         JOIN graph_nodes t ON t.key = e.${far}
        WHERE t.collection IS NOT NULL`,
    ).all(JSON.stringify([...new Set(ids)])) as Step[];
  }

  async referrers(
    ids: readonly string[],
    limit: number,
    excluding: readonly string[] = [],
  ): Promise<Referrer[]> {
    if (ids.length === 0 || limit <= 0) return [];
    // An edge's holder is its downstream end for an upstream slot, its upstream end otherwise.
    const held = (targetEnd: 'up' | 'down', holderEnd: 'up' | 'down', holder: number) =>
      `SELECT h.id AS id, h.collection AS collection, COALESCE(h.type, '') AS type, e.slot AS slot, t.id AS target
         FROM json_each(@ids) j
         JOIN graph_nodes t ON t.id = j.value
         JOIN graph_edges e ON e.${targetEnd} = t.key AND e.holder = ${holder}
         JOIN graph_nodes h ON h.key = e.${holderEnd}
        WHERE h.collection IS NOT NULL AND h.id NOT IN (SELECT value FROM json_each(@excluding))`;
    return this.stmt(
      `${held('up', 'down', DOWN_HOLDS)} UNION ALL ${held('down', 'up', UP_HOLDS)} LIMIT +@limit`,
    ).all({
      ids: JSON.stringify([...new Set(ids)]),
      excluding: JSON.stringify(excluding),
      limit,
    }) as Referrer[];
  }

  async watermark(): Promise<number> {
    return this.meta('watermark') ?? 0;
  }

  async setWatermark(seq: number): Promise<void> {
    this.setMeta('watermark', seq);
  }

  async close(): Promise<void> {
    // The store owns the database.
  }
}
