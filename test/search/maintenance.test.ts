import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { RecordWriter } from '../../search/writer.ts';
import { FtsSearchIndex } from '../../search/sqlite/fts-index.ts';
import {
  catchUp,
  checkCollection,
  hasDrift,
  reindexCollection,
  reindexCollections,
  startCatchUpLoop,
} from '../../search/maintenance.ts';
import Database from 'better-sqlite3';

const C = 'study_set';
const studies = Array.from({ length: 50 }, (_, i) => ({
  id: `nmdc:sty-11-${String(i).padStart(8, '0')}`,
  name: `Study ${i} of ${i % 2 ? 'permafrost' : 'river'} microbiomes`,
}));

describe('index maintenance', () => {
  let dir: string;
  let store: SqliteDocumentStore;
  let index: FtsSearchIndex;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'search-maint-'));
    store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    index = FtsSearchIndex.attachTo(store);
    await store.upsertMany(C, studies);
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reports no drift for an index kept by the write hook', async () => {
    const report = await checkCollection(store, index, C);
    expect(report).toMatchObject({
      checked: 50,
      missing: [],
      stale: [],
      extra: [],
      counts: { missing: 0, stale: 0, extra: 0 },
    });
    expect(hasDrift(report)).toBe(false);
  });

  it('reports missing, stale and extra records by id', async () => {
    index.erase(C, [studies[0]!.id]);
    index.write(C, [{ ...studies[1]!, name: 'outdated' }], false);
    index.write(C, [{ id: 'nmdc:sty-11-zzzzzzzz', name: 'ghost' }], false);
    const report = await checkCollection(store, index, C);
    expect(report.missing).toEqual([studies[0]!.id]);
    expect(report.stale).toEqual([studies[1]!.id]);
    expect(report.extra).toEqual(['nmdc:sty-11-zzzzzzzz']);
    expect(hasDrift(report)).toBe(true);
  });

  it('rebuilds a drifted collection from the store, reporting progress', async () => {
    index.erase(C, [studies[0]!.id]);
    index.write(C, [{ id: 'nmdc:sty-11-zzzzzzzz', name: 'ghost' }], false);
    const seen: number[] = [];
    const result = await reindexCollection(store, index, C, (p) => seen.push(p.done), 20);
    expect(result.records).toBe(50);
    expect(seen).toEqual([20, 40, 50]);
    expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
    const hits = await index.candidates(C, { kind: 'search', path: 'name', text: 'permafrost' }, 100);
    expect(hits.all ? -1 : hits.ids.size).toBe(25);
  });

  it('restores the by-string index and prunes strings no record holds after a rebuild, even a failed one', async () => {
    const strings = () => store.db.prepare('SELECT value FROM search_strings').pluck().all() as string[];
    const byString = () =>
      store.db
        .prepare(
          "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'search_values_by_string'",
        )
        .pluck()
        .get();
    index.write(C, [{ id: 'nmdc:sty-11-zzzzzzzz', name: 'ghost study' }], false);
    expect(strings()).toContain('ghost study');
    await reindexCollection(store, index, C);
    expect(byString()).toBe(1);
    expect(strings()).not.toContain('ghost study');
    expect(strings()).toContain(studies[3]!.name);
    const hits = await index.candidates(C, { kind: 'search', path: 'name', text: 'ghost' }, 100);
    expect(hits).toEqual({ all: false, ids: new Set() });

    // Rebuilding the larger collection empties the map wholesale; the other one's rows survive.
    const samples = [
      { id: 'nmdc:bsm-11-00000001', name: 'river sediment core' },
      { id: 'nmdc:bsm-11-00000002', name: 'permafrost active layer' },
    ];
    await store.upsertMany('biosample_set', samples);
    await reindexCollection(store, index, C);
    for (const collection of [C, 'biosample_set'])
      expect(hasDrift(await checkCollection(store, index, collection))).toBe(false);
    const kept = await index.candidates(
      'biosample_set',
      { kind: 'search', path: 'name', text: 'sediment' },
      100,
    );
    expect(kept).toEqual({ all: false, ids: new Set([samples[0]!.id]) });
    // And rebuilding the smaller one deletes just its own rows, pruning only strings they held.
    index.write('biosample_set', [{ id: 'nmdc:bsm-11-zzzzzzzz', name: 'lonely string' }], false);
    await reindexCollection(store, index, 'biosample_set');
    expect(strings()).not.toContain('lonely string');
    expect(strings()).toEqual(expect.arrayContaining([samples[1]!.name, studies[4]!.name]));
    expect(byString()).toBe(1);
    expect(hasDrift(await checkCollection(store, index, 'biosample_set'))).toBe(false);
    const river = await index.candidates(C, { kind: 'search', path: 'name', text: 'river' }, 100);
    expect(river.all ? -1 : river.ids.size).toBe(25);

    // Through both rebuild paths: records as text (prepared off the main thread) and parsed.
    const failingStores = [
      Object.assign(Object.create(store) as SqliteDocumentStore, {
        scanTexts: async function* () {
          yield [JSON.stringify(studies[0]!)];
          throw new Error('source went away');
        },
      }),
      Object.assign(Object.create(store) as SqliteDocumentStore, {
        scanTexts: undefined,
        scan: async function* () {
          yield [studies[0]!];
          throw new Error('source went away');
        },
      }),
    ];
    // A failed rebuild leaves the records it did not reach as they were: nothing is lost.
    for (const failing of failingStores) {
      await expect(reindexCollection(failing, index, C)).rejects.toThrow('source went away');
      expect(byString()).toBe(1);
      const after = await index.candidates(C, { kind: 'search', path: 'name', text: 'river' }, 100);
      expect(after.all ? [] : [...after.ids].sort()).toEqual(
        studies.filter((_, i) => i % 2 === 0).map((s) => s.id),
      );
      expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
    }
    // Records the worker cannot parse fail the rebuild with a reason, however many are in flight.
    const garbled = Object.assign(Object.create(store) as SqliteDocumentStore, {
      scanTexts: async function* () {
        for (let i = 0; i < 5; i++) yield ['{not json'];
      },
    });
    await expect(reindexCollection(garbled, index, C)).rejects.toThrow('preparing a batch failed');
    expect(byString()).toBe(1);
  });
});

describe('rebuild of an indexed collection (renewed in place)', () => {
  const B = 'biosample_set';
  const samples = Array.from({ length: 40 }, (_, i) => ({
    id: `nmdc:bsm-11-${String(i).padStart(8, '0')}`,
    name: `sample ${i} of ${i % 2 ? 'peat' : 'loam'}`,
    ecosystem: 'Terrestrial',
    env_medium: 'soil',
  }));

  it('deletes wrong rows, restores missing ones and removes records the store lacks, keeping keys', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'search-renew-'));
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    const index = FtsSearchIndex.attachTo(store);
    try {
      await store.upsertMany(B, samples);
      const db = store.db;
      const one = (sql: string, ...params: unknown[]) =>
        db
          .prepare(sql)
          .pluck()
          .get(...params) as number;
      const recordKey = (id: string) => one('SELECT rowid FROM search_records WHERE id = ?', id);
      const pathKey = (p: string) => one('SELECT rowid FROM search_paths WHERE path = ?', p);
      const stringKey = (v: string) => one('SELECT rowid FROM search_strings WHERE value = ?', v);
      const found = async (text: string, p = 'name') => {
        const c = await index.candidates(B, { kind: 'search', path: p, text }, 100);
        return c.all ? 'ALL' : [...c.ids].sort();
      };
      const group = one('SELECT grp FROM search_records WHERE id = ?', samples[0]!.id);
      expect(group).toBeGreaterThan(0);
      const keysBefore = samples.map((s) => recordKey(s.id));

      // Drift of every kind: a missing row, a wrong row, a damaged group, a stale fingerprint,
      // a missing record and a record the store does not hold.
      index.write(B, [{ id: 'nmdc:bsm-11-ghost', name: 'ghost words' }], false);
      db.prepare('DELETE FROM search_values WHERE record = ? AND string = ?').run(
        recordKey(samples[1]!.id),
        stringKey(samples[1]!.name),
      );
      db.prepare('INSERT INTO search_values(record, path, string) VALUES (?, ?, ?)').run(
        recordKey(samples[2]!.id),
        pathKey('name'),
        stringKey('ghost words'),
      );
      db.prepare('DELETE FROM search_values WHERE record = ? AND path = ?').run(-group, pathKey('ecosystem'));
      db.prepare("UPDATE search_records SET fingerprint = 'stale' WHERE id = ?").run(samples[3]!.id);
      index.erase(B, [samples[4]!.id]);
      expect(await found('ghost')).toEqual(['nmdc:bsm-11-ghost', samples[2]!.id].sort());
      expect(await found('terrestrial', 'ecosystem')).toEqual([]);
      expect((await checkCollection(store, index, B)).counts).toEqual({ missing: 1, stale: 1, extra: 1 });

      await reindexCollection(store, index, B, () => {}, 16);
      expect(hasDrift(await checkCollection(store, index, B))).toBe(false);
      expect(await found('ghost')).toEqual([]);
      expect(await found('peat')).toEqual(samples.filter((_, i) => i % 2).map((s) => s.id));
      expect(await found('terrestrial', 'ecosystem')).toEqual(samples.map((s) => s.id));
      expect(one('SELECT count(*) FROM search_strings WHERE value = ?', 'ghost words')).toBe(0);
      // Renewed in place: records (but the one erased) and the group keep their keys.
      samples.forEach((s, i) => {
        if (i !== 4) expect(recordKey(s.id)).toBe(keysBefore[i]);
      });
      expect(one('SELECT grp FROM search_records WHERE id = ?', samples[0]!.id)).toBe(group);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('turns to bulk when most rows must be written, building the by-string index once at the end', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'search-renew-'));
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    const index = FtsSearchIndex.attachTo(store);
    try {
      const many = Array.from({ length: 600 }, (_, i) => ({
        ...samples[i % samples.length]!,
        id: `nmdc:bsm-11-${String(i).padStart(8, '0')}`,
        name: `sample ${i} of ${i % 3 ? 'peat' : 'loam'}`,
      }));
      await store.upsertMany(B, many);
      store.db.exec('DELETE FROM search_values'); // every row lost, the records rows kept
      const statements: string[] = [];
      const exec = store.db.exec.bind(store.db);
      store.db.exec = (sql: string) => {
        statements.push(sql);
        return exec(sql);
      };
      await reindexCollection(store, index, B);
      expect(statements.filter((sql) => sql.includes('DROP INDEX'))).toHaveLength(1);
      expect(
        store.db
          .prepare("SELECT count(*) FROM sqlite_master WHERE name = 'search_values_by_string'")
          .pluck()
          .get(),
      ).toBe(1);
      expect(hasDrift(await checkCollection(store, index, B))).toBe(false);
      const loam = await index.candidates(B, { kind: 'search', path: 'name', text: 'loam' }, 1000);
      expect(loam.all ? [] : [...loam.ids].sort()).toEqual(
        many.filter((_, i) => i % 3 === 0).map((s) => s.id),
      );
      // An exact index is renewed without dropping anything.
      statements.length = 0;
      await reindexCollection(store, index, B);
      expect(statements.filter((sql) => sql.includes('DROP INDEX'))).toEqual([]);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('catch-up loop', () => {
  /** A store with an index kept in another database, as an index the write hook does not reach. */
  async function withSeparateIndex(
    run: (store: SqliteDocumentStore, index: FtsSearchIndex) => Promise<void>,
  ): Promise<void> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'search-catchup-'));
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    const index = new FtsSearchIndex(new Database(':memory:'), { hooked: false, ownsDatabase: true });
    try {
      await run(store, index);
    } finally {
      await index.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Runs the catch-up loop until the index has no drift (or two seconds pass). */
  async function catchUpFully(store: SqliteDocumentStore, index: FtsSearchIndex): Promise<void> {
    const stop = startCatchUpLoop(
      store,
      index,
      (err) => {
        throw err;
      },
      10,
    );
    try {
      for (let i = 0; i < 100 && hasDrift(await checkCollection(store, index, C)); i++)
        await new Promise((r) => setTimeout(r, 20));
    } finally {
      stop();
    }
    expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
  }

  it('indexes writes made straight to the store and advances the watermark', () =>
    withSeparateIndex(async (store, index) => {
      await store.upsertMany(C, studies);
      await store.deleteMany(C, { id: studies[0]!.id });
      await catchUpFully(store, index);
      expect(await index.watermark()).toBe((await store.changesSince(0)).seq);
    }));

  it('still catches up with writes made after a reindex (the watermark is the newest change, not beyond it)', () =>
    withSeparateIndex(async (store, index) => {
      await store.upsertMany(C, studies.slice(0, 10));
      await reindexCollection(store, index, C);
      expect(await index.watermark()).toBe(await store.latestSeq());
      await store.upsertMany(C, studies.slice(10, 12));
      const fresh = await store.changesSince(await index.watermark());
      expect(fresh.changes.map((c) => c.id)).toEqual([studies[10]!.id, studies[11]!.id]);
      await catchUpFully(store, index);
    }));

  it('indexes an all-or-nothing write across collections made through the record writer', () =>
    withSeparateIndex(async (store, index) => {
      const writer = new RecordWriter(store, index);
      const samples = [{ id: 'nmdc:bsm-11-uw1', name: 'upsertAll sample' }];
      expect(
        await writer.upsertAll([
          { collection: C, docs: studies.slice(0, 3) },
          { collection: 'biosample_set', docs: samples },
        ]),
      ).toEqual({ inserted: 4, updated: 0 });
      expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
      expect(hasDrift(await checkCollection(store, index, 'biosample_set'))).toBe(false);
      expect(await index.watermark()).toBe(await store.latestSeq());
    }));

  it('indexes a read-modify-write made through the record writer, its deletes included', () =>
    withSeparateIndex(async (store, index) => {
      const writer = new RecordWriter(store, index);
      await writer.upsert(C, studies.slice(0, 3));
      const [first, second] = studies;
      const renamed = await writer.readModifyWrite([{ collection: C, id: first!.id }], ([doc]) => ({
        writes: [{ collection: C, docs: [{ ...doc!, id: `${first!.id}x` }] }],
        deletes: [
          { collection: C, id: first!.id },
          { collection: C, id: second!.id },
        ],
        value: `${first!.id}x`,
      }));
      expect(await store.getById(C, renamed)).not.toBeNull();
      expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
      expect(await index.watermark()).toBe(await store.latestSeq());
    }));

  it('rebuilds when the change log was pruned past its watermark (gap), then is exact again', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'search-gap-'));
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite'), changesRetained: 2 });
    const index = new FtsSearchIndex(new Database(':memory:'), { hooked: false, ownsDatabase: true });
    try {
      await store.upsertMany(C, studies.slice(0, 6));
      await store.deleteMany(C, { id: studies[0]!.id });
      store.sweep();
      expect((await store.changesSince(await index.watermark())).gap).toBe(true);
      await catchUp(store, index);
      expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
      expect(await index.watermark()).toBe(await store.latestSeq());
    } finally {
      await index.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("does not let one collection's rebuild skip another collection's writes still to catch up", () =>
    withSeparateIndex(async (store, index) => {
      const samples = [{ id: 'nmdc:bsm-11-wm1', name: 'written before the rebuild' }];
      await store.upsertMany('biosample_set', samples);
      await store.upsertMany(C, studies.slice(0, 5));
      await reindexCollection(store, index, C);
      // The biosample is still to catch up, so the mark stays before it.
      expect(await index.watermark()).toBe(0);
      await catchUp(store, index);
      expect(hasDrift(await checkCollection(store, index, 'biosample_set'))).toBe(false);
      // Rebuilding every collection moves it to where the first rebuild began.
      await store.upsertMany(C, studies.slice(5, 6));
      const before = await store.latestSeq();
      await reindexCollections(store, index, ['biosample_set', C]);
      expect(await index.watermark()).toBe(before);
    }));
});

describe('reindex and check-index commands', () => {
  it('exit 0 on an exact index, 1 on drift, and reindex repairs it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'search-cli-'));
    const env = { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'silent' };
    const run = (script: string, args: string[] = []) =>
      spawnSync(process.execPath, ['--import', 'tsx', script, ...args], { env, encoding: 'utf8' });
    try {
      const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
      FtsSearchIndex.attachTo(store);
      await store.upsertMany(C, studies);
      await store.close();
      // Drift made behind the service's back: a record row without its index rows.
      execFileSync(process.execPath, [
        '-e',
        `const D=require('better-sqlite3');const d=new D(${JSON.stringify(path.join(dir, 'nmdc.sqlite'))});` +
          `d.prepare("DELETE FROM search_records WHERE id = ?").run(${JSON.stringify(studies[3]!.id)});d.close();`,
      ]);
      const drift = run('src/cli/check-index.ts', [C]);
      expect(drift.status).toBe(1);
      expect(drift.stdout).toContain(`study_set: DRIFT — 50 records checked, 1 missing, 0 stale, 0 extra`);
      expect(drift.stdout).toContain(studies[3]!.id);
      const rebuilt = run('src/cli/reindex.ts', [C]);
      expect(rebuilt.status).toBe(0);
      expect(rebuilt.stdout).toMatch(
        /reindexed 50 records in 1 collections in [\d.]+ s \([\d,]+\/s\) on sqlite-fts5/,
      );
      const exact = run('src/cli/check-index.ts');
      expect(exact.status).toBe(0);
      expect(exact.stdout).toContain('index is exact: 50 records in 1 collections');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
