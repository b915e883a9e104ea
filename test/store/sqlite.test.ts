import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteDocumentStore, type WriteHook } from '../../src/store/sqlite/index.ts';
import type { Doc, Filter } from '../../src/store/port.ts';
import { compileFilter } from '../../src/store/filter.ts';
import { sortDocs } from '../../src/store/ordering.ts';
import { indexRecord } from '../../src/store/sqlite/attribute-index.ts';
import { describeDocumentStore } from './behaviour.ts';
import { openTemporaryStore, withTemporaryStore } from '../support/temporary-store.ts';
import Database from 'better-sqlite3';
import type { ChangeLog } from '../../src/store/sqlite/change-log.ts';

describeDocumentStore('SQLite', async () => openTemporaryStore());

describe('SQLite change log pages', () => {
  it('says more when a page stops at its limit, and not when the last change fits exactly', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-store-'));
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite'), changesPage: 2 });
    try {
      await store.upsertMany('study_set', [{ id: 's1' }, { id: 's2' }, { id: 's3' }, { id: 's4' }]);
      const first = await store.changesSince(0);
      expect(first).toEqual({
        changes: [
          { collection: 'study_set', id: 's1', deleted: false },
          { collection: 'study_set', id: 's2', deleted: false },
        ],
        seq: 2,
        more: true,
      });
      const second = await store.changesSince(first.seq);
      expect(second.changes.map((c) => c.id)).toEqual(['s3', 's4']);
      expect(second.seq).toBe(4);
      expect(second.more).toBeUndefined();
      expect(await store.changesSince(second.seq)).toEqual({ changes: [], seq: 4 });
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite change log retention', () => {
  it('answers gap: true to a reader whose position was pruned, and normal pages from after it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-store-'));
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite'), changesRetained: 3 });
    try {
      await store.upsertMany('study_set', [
        { id: 's1' },
        { id: 's2' },
        { id: 's3' },
        { id: 's4' },
        { id: 's5' },
      ]);
      const before = await store.changesSince(0);
      expect(before.gap).toBeUndefined();
      expect(before.changes).toHaveLength(5);
      store.sweep();
      expect(await store.changesSince(0)).toEqual({ changes: [], seq: 5, gap: true });
      expect(await store.changesSince(1)).toEqual({ changes: [], seq: 5, gap: true });
      expect(await store.changesSince(2)).toEqual({
        changes: [
          { collection: 'study_set', id: 's3', deleted: false },
          { collection: 'study_set', id: 's4', deleted: false },
          { collection: 'study_set', id: 's5', deleted: false },
        ],
        seq: 5,
      });
      // A second sweep with nothing new to prune keeps the mark where it was.
      store.sweep();
      expect((await store.changesSince(2)).gap).toBeUndefined();
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  it('sweeps a slice of rows per transaction, moving the gap mark with each', () =>
    withTemporaryStore(
      async (store) => {
        await store.upsertMany(
          'study_set',
          Array.from({ length: 9 }, (_, i) => ({ id: `s${i + 1}` })),
        );
        const log = (store as unknown as { changeLog: ChangeLog }).changeLog;
        expect(log.sweepSome(3)).toBe(true);
        expect(log.prunedThrough()).toBe(3);
        expect((await store.changesSince(3)).changes.map((c) => c.id)).toEqual([
          's4',
          's5',
          's6',
          's7',
          's8',
          's9',
        ]);
        expect((await store.changesSince(2)).gap).toBe(true);
        expect(log.sweepSome(3)).toBe(true);
        expect(log.sweepSome(3)).toBe(false);
        expect(log.prunedThrough()).toBe(7);
        expect((await store.changesSince(7)).changes.map((c) => c.id)).toEqual(['s8', 's9']);
        expect(log.sweepSome(3)).toBe(false);
      },
      { changesRetained: 2 },
    ));

  it('leaves a periodic sweep for later, without waiting, while another connection writes', async () => {
    const failures: unknown[] = [];
    const { store: writer, file, dispose } = openTemporaryStore();
    await writer.upsertMany('study_set', [{ id: 's1' }, { id: 's2' }, { id: 's3' }]);
    const store = new SqliteDocumentStore({
      file,
      changesRetained: 1,
      sweepIntervalMs: 20,
      onSweepError: (err) => failures.push(err),
    });
    await writer.upsertMany('study_set', [{ id: 's4' }, { id: 's5' }]);
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      // The periodic sweeps fail at once (the busy timeout is 5 s), and are told.
      const started = performance.now();
      while (failures.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(performance.now() - started).toBeLessThan(3000);
      expect((failures[0] as { code?: string }).code).toBe('SQLITE_BUSY');
      expect((await store.changesSince(3)).gap).toBeUndefined();
      // Once the other connection is done, a later sweep prunes.
      other.exec('COMMIT');
      const before = failures.length;
      let gap: boolean | undefined;
      while (!gap) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        gap = (await store.changesSince(3)).gap;
      }
      expect(failures.length).toBeLessThanOrEqual(before + 1);
      // Writes still wait for the lock as before.
      expect(store.db.pragma('busy_timeout', { simple: true })).toBe(5000);
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
      await store.close();
      await dispose();
    }
  });
});

describe('SQLite store specifics', () => {
  function biosamples(n: number): Doc[] {
    return Array.from({ length: n }, (_, i) => ({
      id: `nmdc:bsm-11-${String(i).padStart(6, '0')}`,
      type: 'nmdc:Biosample',
      ecosystem_category: i % 100 === 0 ? 'Plants' : 'Terrestrial',
      associated_studies: [`nmdc:sty-11-${i % 7}`],
      depth: { has_numeric_value: i % 50 },
      name: `sample ${i}`,
    }));
  }

  it('estimates an id list by the ids it names, at any length, and a capped count as capped', async () => {
    const { store, dispose } = openTemporaryStore();
    try {
      await store.upsertMany('biosample_set', biosamples(10));
      const many = Array.from({ length: 8000 }, (_, i) => `nmdc:bsm-11-${i}`);
      const estimates = store.conditionEstimates('biosample_set', {
        id: { $in: many },
        ecosystem_category: 'Terrestrial',
      });
      expect(estimates.cap).toBe(5000);
      expect(estimates.conditions).toEqual([
        { condition: expect.stringContaining('id'), entries: 8000, ordered: true, counted: true },
        { condition: expect.stringContaining('ecosystem_category'), entries: 9, ordered: true },
      ]);
    } finally {
      await dispose();
    }
  });

  it('answers a query on an indexed attribute without parsing every record', async () => {
    const { store, dispose } = openTemporaryStore();
    try {
      await store.upsertMany('biosample_set', biosamples(2000));
      store.counters.bodiesParsed = 0;
      const found = await store.find('biosample_set', {
        ecosystem_category: 'Plants',
        name: { $regex: '00$' },
      });
      expect(found).toHaveLength(19);
      // The index's 20 Plants candidates are read; the one whose name fails the regex is passed
      // over unparsed (its name is read off the stored text).
      expect(store.counters.bodiesParsed).toBe(19);

      store.counters.bodiesParsed = 0;
      expect(await store.count('biosample_set', { ecosystem_category: 'Plants' })).toBe(20);
      expect(await store.count('biosample_set', { 'depth.has_numeric_value': { $lt: 1 } })).toBe(40);
      expect(
        await store.count('biosample_set', { ecosystem_category: 'Plants', type: 'nmdc:Biosample' }),
      ).toBe(20);
      expect(
        await store.count('biosample_set', {
          associated_studies: { $in: ['nmdc:sty-11-1', 'nmdc:sty-11-2'] },
        }),
      ).toBe(572);
      expect(store.counters.bodiesParsed).toBe(0);

      // A range with few rows beside an equality drives, the equality probed on each of its rows:
      // no record is parsed.
      store.counters.bodiesParsed = 0;
      expect(
        await store.count('biosample_set', {
          ecosystem_category: 'Plants',
          'depth.has_numeric_value': { $lt: 1 },
        }),
      ).toBe(20);
      expect(store.counters.bodiesParsed).toBe(0);
      // A range with far more rows than the equality's (2,000 against 20) is checked on the
      // equality's candidates only.
      expect(
        await store.count('biosample_set', {
          ecosystem_category: 'Plants',
          'depth.has_numeric_value': { $gte: 0 },
        }),
      ).toBe(20);
      expect(store.counters.bodiesParsed).toBe(20);

      store.counters.bodiesParsed = 0;
      const page = await store.find('biosample_set', { type: 'nmdc:Biosample' }, { limit: 25 });
      expect(page).toHaveLength(25);
      expect(store.counters.bodiesParsed).toBeLessThanOrEqual(32);
    } finally {
      await dispose();
    }
  });

  it('returns the same first page for a broad range whether it walks records or sorts index candidates', async () => {
    const { store, dispose } = openTemporaryStore();
    try {
      await store.upsertMany('biosample_set', biosamples(6000));
      const filter = { 'depth.has_numeric_value': { $gte: 5 } };
      const all = await store.find('biosample_set', filter);
      expect(all).toHaveLength(5400);
      store.counters.bodiesParsed = 0;
      const page = await store.find('biosample_set', filter, { limit: 10, afterId: all[100]!.id });
      expect(page.map((d) => d.id)).toEqual(all.slice(101, 111).map((d) => d.id));
      expect(store.counters.bodiesParsed).toBeLessThan(100);
    } finally {
      await dispose();
    }
  });

  it('sorts the matches of an indexed filter by reading keys in SQLite, parsing only the page', async () => {
    const { store, dispose } = openTemporaryStore();
    try {
      const docs = biosamples(3000);
      await store.upsertMany('biosample_set', docs);
      store.counters.bodiesParsed = 0;
      const page = await store.find(
        'biosample_set',
        { ecosystem_category: 'Terrestrial' },
        {
          sort: [
            ['depth.has_numeric_value', -1],
            ['name', 1],
          ],
          skip: 5,
          limit: 10,
        },
      );
      const expected = docs
        .filter((d) => d.ecosystem_category === 'Terrestrial')
        .sort((a, b) => {
          const da = (a.depth as { has_numeric_value: number }).has_numeric_value;
          const db = (b.depth as { has_numeric_value: number }).has_numeric_value;
          return db - da || (a.name as string).localeCompare(b.name as string);
        })
        .slice(5, 15);
      expect(page).toEqual(expected);
      expect(store.counters.bodiesParsed).toBe(10);
    } finally {
      await dispose();
    }
  });

  it('keeps keyset paging cost flat as the cursor advances', async () => {
    const { store, dispose } = openTemporaryStore();
    try {
      await store.upsertMany('biosample_set', biosamples(3000));
      const parsedFor = async (afterId: string) => {
        store.counters.bodiesParsed = 0;
        const page = await store.find(
          'biosample_set',
          { name: { $regex: 'sample' } },
          { afterId, limit: 25 },
        );
        expect(page).toHaveLength(25);
        expect(page[0]!.id > afterId).toBe(true);
        return store.counters.bodiesParsed;
      };
      const early = await parsedFor('nmdc:bsm-11-000010');
      const late = await parsedFor('nmdc:bsm-11-002900');
      expect(late).toBe(early);
      expect(late).toBeLessThanOrEqual(32);
    } finally {
      await dispose();
    }
  });

  it('runs write hooks inside the write transaction, rolling back records when a hook fails', async () => {
    const { store, dispose } = openTemporaryStore();
    try {
      const seen: string[] = [];
      const hook: WriteHook = {
        onUpsert: (collection, written) => {
          const rows = store.db
            .prepare('SELECT count(*) AS n FROM docs WHERE collection = ?')
            .get(collection) as { n: number };
          seen.push(`upsert ${collection} ${written.ids.join(',')} visible=${rows.n}`);
          if (written.docs().some((d) => d.fail)) throw new Error('index write failed');
        },
        onDelete: (collection, ids) => seen.push(`delete ${collection} ${ids.join(',')}`),
      };
      store.addWriteHook(hook);
      await store.upsertMany('study_set', [{ id: 'nmdc:sty-11-a' }]);
      await expect(
        store.upsertMany('study_set', [{ id: 'nmdc:sty-11-b' }, { id: 'nmdc:sty-11-c', fail: true }]),
      ).rejects.toThrow('index write failed');
      await store.deleteMany('study_set', { id: 'nmdc:sty-11-a' });
      expect(seen).toEqual([
        'upsert study_set nmdc:sty-11-a visible=1',
        'upsert study_set nmdc:sty-11-b,nmdc:sty-11-c visible=3',
        'delete study_set nmdc:sty-11-a',
      ]);
      expect(await store.count('study_set', {})).toBe(0);
      expect(await store.getById('study_set', 'nmdc:sty-11-b')).toBeNull();
    } finally {
      await dispose();
    }
  });

  it('keeps its data across reopening the file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-store-'));
    const file = path.join(dir, 'nested', 'nmdc.sqlite');
    const first = new SqliteDocumentStore({ file });
    await first.upsertMany('study_set', [{ id: 'nmdc:sty-11-a', name: 'kept' }]);
    await first.state.put('k', 'v', 1);
    await first.close();
    const second = new SqliteDocumentStore({ file });
    expect(await second.getById('study_set', 'nmdc:sty-11-a')).toEqual({ id: 'nmdc:sty-11-a', name: 'kept' });
    expect(await second.state.get('k', 'v')).toBe(1);
    expect(second.db.pragma('journal_mode', { simple: true })).toBe('wal');
    await second.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates the records file with 16 KiB pages and the state file with 4 KiB, and opens a file of 4 KiB pages as it is', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-store-'));
    const pageSize = (file: string) => {
      const db = new Database(file, { readonly: true });
      try {
        return db.pragma('page_size', { simple: true });
      } finally {
        db.close();
      }
    };
    try {
      const file = path.join(dir, 'new', 'nmdc.sqlite');
      const created = new SqliteDocumentStore({ file, stateFile: path.join(dir, 'new', 'state.sqlite') });
      await created.upsertMany('study_set', [{ id: 'nmdc:sty-11-a', name: 'new' }]);
      await created.state.put('k', 'v', 1);
      await created.close();
      expect([pageSize(file), pageSize(path.join(dir, 'new', 'state.sqlite'))]).toEqual([16_384, 4096]);

      // A file created with SQLite's own page size (as earlier versions did) keeps it, and serves.
      const older = path.join(dir, 'older.sqlite');
      new Database(older).exec('CREATE TABLE earlier (x)').close();
      const opened = new SqliteDocumentStore({ file: older });
      await opened.upsertMany('study_set', [{ id: 'nmdc:sty-11-b', name: 'older' }]);
      expect(await opened.getById('study_set', 'nmdc:sty-11-b')).toEqual({
        id: 'nmdc:sty-11-b',
        name: 'older',
      });
      await opened.close();
      expect(pageSize(older)).toBe(4096);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite sorted pages read off the attribute index', () => {
  const C = 'biosample_set';
  const P = 'depth.has_numeric_value';

  /** What a record holds at the sort path, by kind; most kinds are plain numbers, strings or arrays of them. */
  function depthOf(i: number): Record<string, unknown> {
    const n = ((i * 7919) % 101) / 4;
    switch (i % 50) {
      case 0:
        return {};
      case 1:
        return { depth: { has_numeric_value: null } };
      case 2:
        return { depth: { has_numeric_value: i % 4 === 2 } };
      case 3:
        return { depth: { has_numeric_value: { value: n } } };
      case 4:
        return { depth: { has_numeric_value: [] } };
      case 5:
        return { depth: { has_numeric_value: [null, n] } };
      case 6:
        return { depth: { has_numeric_value: [[n, 1]] } };
      case 7:
        return { depth: '10 cm' };
      case 8:
        return { depth: [{ has_numeric_value: n }, { has_numeric_value: `${i % 7} m` }, 'loose'] };
      case 9:
        return { depth: { has_numeric_value: `${i % 3}` } };
      case 10:
        return { depth: { has_numeric_value: i % 4 ? '\u{1F600}' : '\uE000' } };
      case 11:
        return { depth: [{ has_numeric_value: null }, { has_numeric_value: n }] };
      case 12:
        return { depth: [{ has_numeric_value: null }] };
      default:
        return { depth: { has_numeric_value: i % 31 === 0 ? [n, (n * 3) % 7, 25 - n] : n } };
    }
  }

  function records(n: number): Doc[] {
    return Array.from({ length: n }, (_, i) => ({
      id: `nmdc:bsm-11-${String((i * 37) % n).padStart(5, '0')}`,
      type: 'nmdc:Biosample',
      ecosystem_category: i % 3 === 0 ? 'Terrestrial' : 'Plants',
      ecosystem_type: i % 5 === 0 ? 'Soil' : 'Rhizosphere',
      ...depthOf(i),
    }));
  }

  async function expectSortedLikeMongo(
    store: SqliteDocumentStore,
    docs: Doc[],
    filter: Filter,
    pages: Array<[skip: number, limit: number]>,
  ): Promise<void> {
    const predicate = compileFilter(filter);
    const matches = docs.filter((d) => predicate(d));
    // Records whose entries do not decide their key are the only ones parsed besides the page.
    const matched = new Set(matches.map((d) => d.id));
    const irregular = (
      store.db
        .prepare(
          'SELECT x.id FROM attr_irregular x JOIN attr_paths p ON p.key = x.key WHERE p.collection = ? AND p.path = ?',
        )
        .all(C, P) as Array<{ id: string }>
    ).filter((r) => matched.has(r.id)).length;
    expect(irregular).toBeGreaterThan(0);
    expect(irregular).toBeLessThan(matches.length / 5);
    for (const direction of [1, -1] as const) {
      const expected = sortDocs([...matches], [[P, direction]]);
      for (const [skip, limit] of pages) {
        store.counters.bodiesParsed = 0;
        const walks = store.counters.sortedIndexWalks;
        const page = await store.find(C, filter, { sort: [[P, direction]], skip, limit });
        expect(page, `${JSON.stringify(filter)} ${direction} ${skip}+${limit}`).toEqual(
          expected.slice(skip, skip + limit),
        );
        expect(store.counters.sortedIndexWalks).toBe(walks + 1);
        expect(store.counters.bodiesParsed).toBeLessThanOrEqual(limit + irregular);
      }
    }
  }

  /**
   * attr_irregular lists exactly the (path, id) pairs the records call for, and attr_paths counts
   * the records with entries or irregular at each path.
   */
  function expectIrregularRows(store: SqliteDocumentStore, docs: Doc[]): void {
    const rows = store.db
      .prepare(
        'SELECT p.path, x.id FROM attr_irregular x JOIN attr_paths p ON p.key = x.key WHERE p.collection = ?',
      )
      .all(C) as Array<{ path: string; id: string }>;
    const want = docs.flatMap((d) => indexRecord(d).irregular.map((p) => `${p} ${d.id}`));
    expect(rows.map((r) => `${r.path} ${r.id}`).sort()).toEqual(want.sort());
    const counted = new Map<string, number>();
    for (const d of docs) {
      const index = indexRecord(d);
      for (const p of new Set([...index.entries.map(([path]) => path), ...index.irregular]))
        counted.set(p, (counted.get(p) ?? 0) + 1);
    }
    const records = store.db
      .prepare('SELECT path, records FROM attr_paths WHERE collection = ? AND records <> 0')
      .all(C) as Array<{ path: string; records: number }>;
    expect(Object.fromEntries(records.map((r) => [r.path, r.records]))).toEqual(Object.fromEntries(counted));
  }

  const PAGES: Array<[number, number]> = [
    [0, 25],
    [37, 50],
    [150, 150],
    [1480, 40],
    [2700, 150],
    [2990, 25],
  ];

  it('pages through numbers, strings, arrays, missing, null and odd values exactly as MongoDB sorts them', () =>
    withTemporaryStore(async (store) => {
      const docs = records(3000);
      await store.upsertMany(C, docs);
      await expectSortedLikeMongo(store, docs, {}, PAGES);
      await expectSortedLikeMongo(store, docs, { ecosystem_category: 'Plants' }, PAGES);
      await expectSortedLikeMongo(
        store,
        docs,
        { ecosystem_category: 'Plants', ecosystem_type: { $in: ['Rhizosphere', 'Mud'] } },
        PAGES,
      );
    }));

  it('keeps the sort side tables in step with updates and deletes', () =>
    withTemporaryStore(async (store) => {
      const docs = records(3000);
      await store.upsertMany(C, docs);
      // Odd values become plain ones and plain ones odd; some records go away.
      const changed = docs.slice(0, 600).map((d, i) => {
        const { depth: _depth, ...rest } = d;
        return { ...rest, ...depthOf(i + 1) };
      });
      await store.upsertMany(C, changed);
      await store.deleteMany(C, { id: { $in: docs.slice(600, 700).map((d) => d.id) } });
      const now = [...changed, ...docs.slice(700)];
      expectIrregularRows(store, now);
      await expectSortedLikeMongo(store, now, { ecosystem_category: 'Plants' }, PAGES);
    }));

  /** attr_index holds exactly the entries of `docs` (values as the index compares them). */
  function expectEntryRows(store: SqliteDocumentStore, docs: Doc[]): void {
    const rows = store.db
      .prepare(
        'SELECT p.path, x.value, x.id FROM attr_index x JOIN attr_paths p ON p.key = x.key WHERE p.collection = ?',
      )
      .raw()
      .all(C) as Array<[string, string | number, string]>;
    const want = docs.flatMap((d) => indexRecord(d).entries.map(([p, v]) => JSON.stringify([p, v, d.id])));
    expect(rows.map((r) => JSON.stringify(r)).sort()).toEqual(want.sort());
    // Numbers are REAL however they were written (a JS number is bound as one), so `=` on the
    // index meets each value once.
    const kinds = store.db.prepare('SELECT DISTINCT typeof(value) FROM attr_index').pluck().all();
    expect(kinds.sort()).toEqual(['real', 'text']);
  }

  /** Record `d` (the i-th) written again: other values, another kind at the sort path for each `shift`. */
  const again = (d: Doc, i: number, shift: number): Doc => {
    const { depth: _depth, ...rest } = d;
    return { ...rest, ecosystem_type: `Type ${(i + shift) % 4}`, ...depthOf(i + shift) };
  };
  /** 100 records not among `records(600)`. */
  const freshRecords = () => records(100).map((d) => ({ ...d, id: `${d.id}-new` }));

  it('indexes the last version of a record written several times in one write', () =>
    withTemporaryStore(async (store) => {
      const docs = records(600);
      await store.upsertMany(C, docs);
      // Each of the first 200 records twice more in one batch, and 100 new records twice, their
      // first version with more entries.
      const fresh = freshRecords();
      const batch = [
        ...docs.slice(0, 200).map((d, i) => again(d, i, 1)),
        ...fresh.map((d, i) => ({ ...d, part_of: [`nmdc:sty-${i}`, 'nmdc:sty-x'] })),
        ...docs.slice(0, 200).map((d, i) => again(d, i, 2)),
        ...fresh,
      ];
      await store.upsertMany(C, batch);
      const now = [...docs.slice(0, 200).map((d, i) => again(d, i, 2)), ...docs.slice(200), ...fresh];
      expectEntryRows(store, now);
      expectIrregularRows(store, now);
    }));

  it('indexes the last version of a record written again in a later entry of one atomic write', () =>
    withTemporaryStore(async (store) => {
      const docs = records(600);
      await store.upsertMany(C, docs);
      const fresh = freshRecords();
      // The attribute entries of the whole write are inserted at its end: versions written over
      // by a later entry (of the same collection, after one of another) must leave nothing behind.
      await store.upsertAtomically([
        { collection: C, docs: docs.slice(0, 200).map((d, i) => again(d, i, 1)) },
        { collection: C, docs: fresh.map((d, i) => ({ ...d, part_of: [`nmdc:sty-${i}`, 'nmdc:sty-x'] })) },
        { collection: 'study_set', docs: [{ id: 'nmdc:sty-11-aa000001', name: 'between' }] },
        { collection: C, docs: docs.slice(0, 200).map((d, i) => again(d, i, 2)) },
        { collection: C, docs: fresh },
      ]);
      const now = [...docs.slice(0, 200).map((d, i) => again(d, i, 2)), ...docs.slice(200), ...fresh];
      expectEntryRows(store, now);
      expectIrregularRows(store, now);
    }));

  it('rebuilds the side tables of a file written before them when it opens', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-store-'));
    const file = path.join(dir, 'nmdc.sqlite');
    try {
      const docs = records(3000);
      const first = new SqliteDocumentStore({ file });
      await first.upsertMany(C, docs);
      // The layout before keys: collection and path in every row, some of them stale.
      const paths = JSON.parse(
        (first.db.prepare("SELECT value FROM meta WHERE key = 'indexed_paths'").get() as { value: string })
          .value,
      ).paths as string[];
      first.db.exec(
        'DROP TABLE attr_index; DROP TABLE attr_irregular; DROP TABLE attr_paths; ' +
          'CREATE TABLE attr_index (collection TEXT NOT NULL, path TEXT NOT NULL, value NOT NULL, id TEXT NOT NULL, ' +
          'PRIMARY KEY (collection, path, value, id)) WITHOUT ROWID; ' +
          'CREATE TABLE attr_irregular (collection TEXT NOT NULL, path TEXT NOT NULL, id TEXT NOT NULL, ' +
          'PRIMARY KEY (collection, path, id)) WITHOUT ROWID; ' +
          `INSERT INTO attr_index VALUES ('${C}', 'ecosystem_category', 'Stale', '${docs[0]!.id}');`,
      );
      first.db
        .prepare("UPDATE meta SET value = ? WHERE key = 'indexed_paths'")
        .run(JSON.stringify({ layout: 2, paths }));
      await first.close();

      const second = new SqliteDocumentStore({ file });
      try {
        expectIrregularRows(second, docs);
        await expectSortedLikeMongo(second, docs, { ecosystem_category: 'Plants' }, PAGES);
      } finally {
        await second.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('orders ids that SQLite and JavaScript compare differently as the reference does', () =>
    withTemporaryStore(async (store) => {
      // Such ids send every page to the slower strategies, so the set is kept small.
      const docs = records(1200).map((d, i) =>
        i % 4 ? d : { ...d, id: d.id.replace('-11-', i % 8 ? '-11-\u{1F600}' : '-11-\uE000') },
      );
      await store.upsertMany(C, docs);
      for (const direction of [1, -1] as const) {
        const expected = sortDocs([...docs], [[P, direction]]);
        // Single-record pages end the walk anywhere inside a value's ids.
        for (let skip = 0; skip < docs.length; skip += 5)
          expect(await store.find(C, {}, { sort: [[P, direction]], skip, limit: 1 })).toEqual([
            expected[skip],
          ]);
      }
    }));

  it('leaves a small match set to the keys in the bodies', () =>
    withTemporaryStore(async (store) => {
      const docs = records(3000).map((d, i) => (i < 40 ? { ...d, ecosystem_subtype: 'Rare' } : d));
      await store.upsertMany(C, docs);
      const filter = { ecosystem_subtype: 'Rare' };
      const page = await store.find(C, filter, { sort: [[P, -1]], limit: 10 });
      expect(page).toEqual(
        sortDocs(
          docs.filter((d) => d.ecosystem_subtype === 'Rare'),
          [[P, -1]],
        ).slice(0, 10),
      );
      expect(store.counters.sortedIndexWalks).toBe(0);
    }));
});
