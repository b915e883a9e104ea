/**
 * The bulk load path (src/store/sqlite/bulk-load.ts) against the transactional one: the same
 * records, attribute index rows, statistics, search answers and provenance edges; upsert
 * semantics kept; and a load that died before its indexes were built finished on the next open.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import {
  BULK_MIN_RECORDS,
  finishInterruptedBulkLoad,
  pendingBulkLoad,
  SqliteBulkLoad,
} from '../../src/store/sqlite/bulk-load.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import { SqliteEdgeIndex } from '../../src/provenance/sqlite/edge-index.ts';
import { checkCollection, hasDrift, rebuildEach } from '../../search/maintenance.ts';
import { databaseJsonChunks, generateRecords, type GeneratedRecord } from '../../src/data/generator.ts';
import { loadRecords } from '../../src/data/loader.ts';
import type { Doc } from '../../src/store/port.ts';
import type { IndexablePredicate } from '../../search/port.ts';

interface Opened {
  store: SqliteDocumentStore;
  search: FtsSearchIndex;
  edges: SqliteEdgeIndex;
  file: string;
}

const dirs: string[] = [];
const open: Opened[] = [];

function openAt(file: string): Opened {
  const store = new SqliteDocumentStore({ file });
  const search = FtsSearchIndex.attachTo(store);
  const edges = SqliteEdgeIndex.attachTo(store);
  const opened = { store, search, edges, file };
  open.push(opened);
  return opened;
}

function fresh(): Opened {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-bulk-'));
  dirs.push(dir);
  return openAt(path.join(dir, 'nmdc.sqlite'));
}

async function closeAll(): Promise<void> {
  for (const o of open.splice(0)) {
    await o.search.close();
    await o.store.close();
  }
}

afterEach(async () => {
  await closeAll();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** Studies, biosamples and their pipelines (data objects, workflow executions): edges of every kind. */
function generated(biosamples: number): Array<{ collection: string; doc: Doc }> {
  return [...generateRecords({ studies: 4, biosamples, dataObjects: biosamples * 6, seed: 3 })].map((r) => ({
    collection: r.collection,
    doc: r.doc as Doc,
  }));
}

function byCollection(records: Array<{ collection: string; doc: Doc }>): Map<string, Doc[]> {
  const out = new Map<string, Doc[]>();
  for (const { collection, doc } of records) {
    const list = out.get(collection) ?? [];
    list.push(doc);
    out.set(collection, list);
  }
  return out;
}

async function loadTransactionally(o: Opened, records: Array<{ collection: string; doc: Doc }>) {
  for (const [collection, docs] of byCollection(records))
    for (let i = 0; i < docs.length; i += 500) await o.store.upsertMany(collection, docs.slice(i, i + 500));
}

async function loadInBulk(o: Opened, records: Array<{ collection: string; doc: Doc }>, batch = 700) {
  const bulk = new SqliteBulkLoad(o.store);
  for (const [collection, docs] of byCollection(records))
    for (let i = 0; i < docs.length; i += batch) bulk.write(collection, docs.slice(i, i + batch));
  await bulk.finish(rebuildEach(o.store, [o.search, o.edges]));
}

/** Everything both paths must agree on, keys and all (search keys aside: they number rows differently). */
function contents(o: Opened) {
  const all = (sql: string) => o.store.db.prepare(sql).raw().all();
  return {
    docs: all('SELECT collection, id, body, size FROM docs ORDER BY collection, id'),
    attr: all(
      'SELECT p.collection, p.path, x.value, typeof(x.value), x.id FROM attr_index x ' +
        'JOIN attr_paths p ON p.key = x.key ORDER BY 1, 2, 3, 5',
    ),
    irregular: all(
      'SELECT p.collection, p.path, x.id FROM attr_irregular x JOIN attr_paths p ON p.key = x.key ORDER BY 1, 2, 3',
    ),
    attrRecords: all('SELECT collection, path, records FROM attr_paths WHERE records <> 0 ORDER BY 1, 2'),
    stats: all('SELECT collection, count, size FROM collection_stats ORDER BY collection'),
    changes: all('SELECT collection, id, deleted FROM changes ORDER BY collection, id, seq'),
    nodes: all('SELECT id, collection, type, fingerprint FROM graph_nodes ORDER BY id'),
    edges: all(
      'SELECT u.id, d.id, e.slot, e.holder FROM graph_edges e JOIN graph_nodes u ON u.key = e.up ' +
        'JOIN graph_nodes d ON d.key = e.down ORDER BY 1, 2, 3, 4',
    ),
    searchRecords: all('SELECT collection, id, fingerprint FROM search_records ORDER BY collection, id'),
    searchPairs: all(
      'SELECT r.collection, r.id, p.path, s.value FROM search_records r ' +
        'JOIN search_values v ON v.record = r.rowid OR v.record = -r.grp ' +
        'JOIN search_paths p ON p.rowid = v.path JOIN search_strings s ON s.rowid = v.string ORDER BY 1, 2, 3, 4',
    ),
  };
}

const PREDICATES: Array<[string, IndexablePredicate]> = [
  ['biosample_set', { kind: 'search', path: 'name', text: 'soil' }],
  ['biosample_set', { kind: 'regex', path: 'samp_name', pattern: '^[a-z]+ 1', flags: 'i' }],
  ['biosample_set', { kind: 'words', path: 'env_broad_scale.term.name', text: 'biome' }],
  ['study_set', { kind: 'search', path: 'name', text: 'micro' }],
  ['data_object_set', { kind: 'regex', path: 'name', pattern: 'fastq', flags: '' }],
];

async function answers(o: Opened) {
  const out: unknown[] = [];
  for (const [collection, p] of PREDICATES) {
    const c = await o.search.candidates(collection, p, 1_000_000);
    out.push(c.all ? 'all' : [...c.ids].sort());
  }
  return out;
}

async function expectNoDrift(o: Opened) {
  for (const collection of await o.store.nonEmptyCollections()) {
    expect(hasDrift(await checkCollection(o.store, o.search, collection)), collection).toBe(false);
    expect(hasDrift(await checkCollection(o.store, o.edges, collection)), `edges of ${collection}`).toBe(
      false,
    );
  }
}

describe('bulk load', () => {
  it('leaves the same records, attribute rows, statistics, search answers and edges as the transactional path', async () => {
    const records = generated(120);
    const a = fresh();
    const b = fresh();
    await loadTransactionally(a, records);
    await loadInBulk(b, records);
    expect(contents(b)).toEqual(contents(a));
    const answered = await answers(a);
    expect(answered.some((x) => Array.isArray(x) && x.length > 0)).toBe(true);
    expect(await answers(b)).toEqual(answered);
    await expectNoDrift(b);
    expect(pendingBulkLoad(b.store.db)).toBeUndefined();
    // About 2 s alone; 12.8 s in one CI run beside the other test files, over a third of 30 s.
  }, 60_000);

  it('keeps the records of each collection it loaded in id order in the table (rowids follow ids)', async () => {
    // Written in an order other than their ids' (every third record first), as records come.
    const records = generated(40);
    const shuffled = [0, 1, 2].flatMap((r) => records.filter((_, i) => i % 3 === r));
    const a = fresh();
    const b = fresh();
    await loadTransactionally(a, shuffled);
    await loadInBulk(b, shuffled);
    const tableOrder = (o: Opened, collection: string) =>
      o.store.db
        .prepare('SELECT id FROM docs WHERE collection = ? ORDER BY rowid')
        .pluck()
        .all(collection) as string[];
    const collections = [...byCollection(shuffled).keys()];
    expect(collections.length).toBeGreaterThan(2);
    for (const collection of collections) {
      const ids = byCollection(shuffled)
        .get(collection)!
        .map((d) => d.id);
      const sorted = [...new Set(ids)].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      expect(tableOrder(b, collection)).toEqual(sorted);
      // The transactional path keeps them as written.
      if (ids.length > 2) expect(tableOrder(a, collection)).not.toEqual(sorted);
    }
    expect(contents(b)).toEqual(contents(a));
    await expectNoDrift(b);
  }, 60_000);

  it('upserts by id over stored records: replaced ones lose their old entries, identical ones are skipped', async () => {
    const records = generated(60);
    const a = fresh();
    const b = fresh();
    const first = records.slice(0, 200);
    await loadTransactionally(a, first);
    await loadTransactionally(b, first);
    // The rest, some stored records changed, one record twice in a batch, one rewritten unchanged.
    const changed = first.slice(0, 30).map(({ collection, doc }) => ({
      collection,
      doc: { ...doc, description: `renamed ${doc.id}`, ecosystem_category: 'Changed' } as Doc,
    }));
    const again = [
      ...changed,
      records[250]!,
      { ...records[250]!, doc: { ...records[250]!.doc, name: 'second' } },
    ];
    const rest = [...records.slice(200), ...again, first[40]!];
    await loadTransactionally(a, rest);
    const bulk = new SqliteBulkLoad(b.store);
    const results = [...byCollection(rest)].map(([collection, docs]) => bulk.write(collection, docs));
    await bulk.finish(rebuildEach(b.store, [b.search, b.edges]));
    expect(contents(b)).toEqual(contents(a));
    expect(await answers(b)).toEqual(await answers(a));
    const updated = results.reduce((n, r) => n + r.updated, 0);
    // 30 changed; records[250] (in the rest already) twice more, unchanged then changed; first[40] unchanged.
    expect(updated).toBe(33);
    await expectNoDrift(b);
  });

  it('finishes on the next open a bulk load whose process died before building the indexes', async () => {
    const records = generated(80);
    const a = fresh();
    await loadTransactionally(a, records);
    const b = fresh();
    // Written on behalf of a process that is gone, as a load whose process was killed.
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    const bulk = new SqliteBulkLoad(b.store, gone);
    for (const [collection, docs] of byCollection(records)) bulk.write(collection, docs);
    // No finish: the process "dies" here.
    expect(pendingBulkLoad(b.store.db)?.sort()).toEqual([...byCollection(records).keys()].sort());
    await b.search.close();
    await b.store.close();
    open.splice(open.indexOf(b), 1);
    const reopened = openAt(b.file);
    expect(() => new SqliteBulkLoad(reopened.store)).toThrow(/interrupted bulk load/);
    const rebuilt = await finishInterruptedBulkLoad(
      reopened.store,
      rebuildEach(reopened.store, [reopened.search, reopened.edges]),
    );
    expect(rebuilt.length).toBeGreaterThan(0);
    expect(pendingBulkLoad(reopened.store.db)).toBeUndefined();
    expect(contents(reopened)).toEqual(contents(a));
    expect(await answers(reopened)).toEqual(await answers(a));
    await expectNoDrift(reopened);
  });

  it('leaves the mark of a load still running to that load, and clears only its own', async () => {
    const o = fresh();
    const running = new SqliteBulkLoad(o.store);
    running.write('study_set', [{ id: 'nmdc:sty-11-00000002', name: 'estuary' }]);
    expect(pendingBulkLoad(o.store.db)).toBeUndefined();
    expect(await finishInterruptedBulkLoad(o.store, async () => {})).toEqual([]);
    await running.finish(rebuildEach(o.store, [o.search, o.edges]));
    expect(o.store.db.prepare('SELECT 1 FROM meta WHERE key = ?').get('bulk_load')).toBeUndefined();
    expect(
      await o.search.candidates('study_set', { kind: 'search', path: 'name', text: 'estuary' }, 10),
    ).toEqual({
      all: false,
      ids: new Set(['nmdc:sty-11-00000002']),
    });
  });

  it("merges the trigram index's segments a build from empty left, so no later write merges them", async () => {
    const o = fresh();
    // Enough strings for FTS5 to flush its pending terms several times while the build runs.
    await loadInBulk(o, generated(1500));
    const segments = () =>
      o.store.db.prepare('SELECT count(DISTINCT segid) FROM search_trigram_idx').pluck().get();
    expect(segments()).toBe(1);
    expect(o.search.bulkBuildPending()).toBe(false);
    // The index still answers, and a write after the build adds a segment of its own.
    await o.store.upsertMany('biosample_set', [{ id: 'nmdc:bsm-11-zz000001', name: 'permafrost core' }]);
    expect(
      await o.search.candidates(
        'biosample_set',
        { kind: 'search', path: 'name', text: 'permafrost core' },
        10,
      ),
    ).toEqual({ all: false, ids: new Set(['nmdc:bsm-11-zz000001']) });
    expect(segments()).toBe(2);
  });

  it('restores the FTS5 merge settings and the by-string index a build from empty that died changed', async () => {
    const o = fresh();
    const bulk = new SqliteBulkLoad(o.store);
    bulk.write('study_set', [{ id: 'nmdc:sty-11-00000001', name: 'river delta sediment' }]);
    await o.search.beginRebuild('study_set'); // a build from empty: settings turned down
    const setting = (k: string) =>
      o.store.db.prepare('SELECT v FROM search_trigram_config WHERE k = ?').pluck().get(k);
    expect(setting('automerge')).toBe(0);
    expect(o.search.bulkBuildPending()).toBe(true);
    // The process dies: a new connection opens the file.
    const again = new FtsSearchIndex(o.store.db, { hooked: false, ownsDatabase: false });
    expect(setting('automerge')).toBe(4);
    expect(setting('crisismerge')).toBe(16);
    expect(again.bulkBuildPending()).toBe(false);
    await again.close();
  });
});

describe('loader', () => {
  it('takes the bulk path for a large load into an empty collection and the transactional one for a small load', async () => {
    const o = fresh();
    const input = (records: Iterable<GeneratedRecord>) => Readable.from(databaseJsonChunks(records));
    const big = [
      ...generateRecords({ studies: 2, biosamples: BULK_MIN_RECORDS + 10, dataObjects: 0, seed: 5 }),
    ];
    const loaded = await loadRecords({
      store: o.store,
      searchIndex: o.search,
      edgeIndex: o.edges,
      input: input(big),
      format: { kind: 'database' },
      validate: false,
    });
    expect(loaded.bulk).toEqual(['biosample_set']);
    expect(loaded.counts).toEqual({ study_set: 2, biosample_set: BULK_MIN_RECORDS + 10 });
    expect(loaded.inserted).toBe(BULK_MIN_RECORDS + 12);
    const small = big.slice(2, 12).map((r) => ({ ...r, doc: { ...r.doc, name: `renamed ${r.doc.id}` } }));
    const reloaded = await loadRecords({
      store: o.store,
      searchIndex: o.search,
      edgeIndex: o.edges,
      input: input(small),
      format: { kind: 'database' },
      validate: false,
    });
    expect(reloaded.bulk).toEqual([]);
    expect(reloaded.updated).toBe(10);
    const renamed = await o.search.candidates(
      'biosample_set',
      { kind: 'search', path: 'name', text: `renamed ${String(big[5]!.doc.id)}` },
      100,
    );
    expect(renamed).toEqual({ all: false, ids: new Set([big[5]!.doc.id]) });
    await expectNoDrift(o);
  }, 60_000);
});
