import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import { FtsSearchIndex, ftsMatchOf } from '../../search/sqlite/fts-index.ts';
import { sharedSets } from '../../search/sqlite/prepared-batch.ts';
import { WorkerPreparer } from '../../search/sqlite/preparer.ts';
import { BatchPairs } from '../../search/indexed-values.ts';
import type { IndexablePredicate } from '../../search/port.ts';
import { checkCollection, hasDrift, reindexCollection } from '../../search/maintenance.ts';
import { trigramQueryOf } from '../../search/regex/trigram-query.ts';
import { describeSearchIndex } from './behaviour.ts';
import { QueryPlanner } from '../../src/query/planner/planner.ts';
import { RecordWriter } from '../../search/writer.ts';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'search-fts-'));
}

/** Runs `test` on a fresh embedded store with the index kept by its write hook, then removes it. */
async function withHookedIndex(
  test: (store: SqliteDocumentStore, index: FtsSearchIndex) => Promise<void>,
): Promise<void> {
  const dir = tempDir();
  const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  const index = FtsSearchIndex.attachTo(store);
  try {
    await test(store, index);
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** An index kept by a fresh embedded store's write hook, for the behaviour suite. */
async function hookedIndexUnderTest(options: { offThreadStrings?: number } = {}) {
  const dir = tempDir();
  const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  const index = FtsSearchIndex.attachTo(store, options);
  return {
    index,
    settle: async () => {},
    dispose: async () => {
      await index.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

describeSearchIndex('FTS5 in the embedded store (write hook)', () => hookedIndexUnderTest());

describeSearchIndex('FTS5 in the embedded store, every MATCH read on a worker thread', () =>
  hookedIndexUnderTest({ offThreadStrings: -1 }),
);

describe('FTS5 index: broad MATCHes read on a worker thread', () => {
  it('answers as the same read on the store connection', async () => {
    const dir = tempDir();
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    const offThread = FtsSearchIndex.attachTo(store, { offThreadStrings: -1 });
    const here = new FtsSearchIndex(store.db, { hooked: false, ownsDatabase: false });
    try {
      await store.upsertMany(
        'biosample_set',
        Array.from({ length: 300 }, (_, i) => ({
          id: `nmdc:bsm-11-${String(i).padStart(4, '0')}`,
          name: `${['Soil', 'Sediment', 'Leaf'][i % 3]} sample ${i}`,
          description: i % 7 === 0 ? `soil core ${i}` : `water ${i % 11}`,
        })),
      );
      const predicates: IndexablePredicate[] = [
        { kind: 'regex', path: 'name', pattern: 'Soil sample 1[0-9]$', flags: '' },
        { kind: 'regex', path: 'description', pattern: 'soil', flags: 'i' },
        { kind: 'regex', path: 'name', pattern: 'water', flags: '' },
        { kind: 'search', path: 'description', text: 'ter 1' },
        { kind: 'words', path: 'name', text: 'Leaf sample' },
      ];
      const answers = async (index: FtsSearchIndex, limit: number) => {
        const out: unknown[] = [];
        for (const p of predicates) {
          const c = await index.candidates('biosample_set', p, limit);
          out.push(c.all ? 'ALL' : [...c.ids].sort());
        }
        return out;
      };
      for (const limit of [5, 1000])
        expect(await answers(offThread, limit)).toEqual(await answers(here, limit));
      expect(offThread.counters.readsOffThread).toBe(2 * predicates.length);
      expect(here.counters.readsOffThread).toBe(0);
      expect((await answers(offThread, 1000))[1]).toHaveLength(43);
    } finally {
      await offThread.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  it('reads on its own connection when the thread cannot read the file', async () => {
    const dir = tempDir();
    // An exclusive lock held by the index's own connection: no other connection can read.
    const db = new Database(path.join(dir, 'index.sqlite'));
    db.pragma('journal_mode = WAL');
    db.pragma('locking_mode = EXCLUSIVE');
    const index = new FtsSearchIndex(db, { hooked: false, ownsDatabase: true, offThreadStrings: -1 });
    try {
      await index.index('biosample_set', [
        { id: 'a', name: 'peat bog' },
        { id: 'b', name: 'fen' },
        { id: 'c', name: 'bog water' },
      ]);
      const bog = await index.candidates('biosample_set', { kind: 'search', path: 'name', text: 'bog' }, 100);
      expect(bog.all ? 'ALL' : [...bog.ids].sort()).toEqual(['a', 'c']);
      expect(index.counters.readsOffThread).toBe(0);
    } finally {
      await index.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeSearchIndex('FTS5 in a file of its own', async () => {
  const index = new FtsSearchIndex(new Database(':memory:'), { hooked: false, ownsDatabase: true });
  return { index, settle: async () => {}, dispose: () => index.close() };
});

describe('FTS5 index kept in step by the store', () => {
  it("keeps nothing of the service's own records, and a planner decides $regex on them by the store alone", () =>
    withHookedIndex(async (store, index) => {
      const jobs = [
        { id: 'nmdc:sys0job1', workflow: { id: 'metag-1.0.0' } },
        { id: 'nmdc:sys0job2', workflow: { id: 'readqc-1.0.6' } },
        { id: 'nmdc:sys0job3', workflow: { id: 'metat-1.0.0' } },
      ];
      await store.upsertMany('jobs', jobs);
      await store.upsertMany('biosample_set', [{ id: 'nmdc:bsm-11-a', name: 'metagenome core' }]);
      expect(index.covers('jobs')).toBe(false);
      expect(index.covers('biosample_set')).toBe(true);
      const rows = (collection: string) =>
        (
          store.db
            .prepare('SELECT count(*) AS n FROM search_records WHERE collection = ?')
            .get(collection) as {
            n: number;
          }
        ).n;
      expect(rows('jobs')).toBe(0);
      expect(rows('biosample_set')).toBe(1);
      const planner = new QueryPlanner(store, index);
      const found = await planner.find('jobs', { 'workflow.id': { $regex: '^meta' } });
      expect(found.map((d) => d.id)).toEqual(['nmdc:sys0job1', 'nmdc:sys0job3']);
      expect(await planner.count('jobs', { 'workflow.id': { $regex: 'qc' } })).toBe(1);
    }));

  it('indexes and unindexes records inside the store write, with no index() call', () =>
    withHookedIndex(async (store, index) => {
      await store.upsertMany('biosample_set', [
        { id: 'a', name: 'Permafrost thaw gradient' },
        { id: 'b', name: 'Hot spring mat' },
      ]);
      const q = { kind: 'regex' as const, path: 'name', pattern: 'thaw', flags: '' };
      expect(await index.candidates('biosample_set', q, 10)).toEqual({ all: false, ids: new Set(['a']) });
      await store.deleteMany('biosample_set', { id: 'a' });
      expect(await index.candidates('biosample_set', q, 10)).toEqual({ all: false, ids: new Set() });
      expect(index.synchronous).toBe(true);
    }));

  it('keys strings an earlier part of the same write added, and strings indexed before, to their one row', () =>
    withHookedIndex(async (store, index) => {
      await store.upsertMany('biosample_set', [{ id: 'old', name: 'shared before' }]);
      // Each entry reaches the hook on its own: the second brings strings the first added (not
      // committed yet), strings indexed before, and new ones, in mixed order.
      await store.upsertAtomically([
        {
          collection: 'biosample_set',
          docs: [
            { id: 'a1', name: 'first part', samp_name: 'shared before' },
            { id: 'a2', name: 'common to both parts' },
          ],
        },
        {
          collection: 'biosample_set',
          docs: [
            { id: 'b1', name: 'second part', samp_name: 'common to both parts' },
            { id: 'b2', name: 'shared before', samp_name: 'first part' },
            { id: 'b3', name: 'only in the second' },
          ],
        },
      ]);
      const rows = store.db
        .prepare(
          'SELECT r.id, p.path, s.value FROM search_values v JOIN search_records r ON r.rowid = v.record ' +
            'JOIN search_paths p ON p.rowid = v.path JOIN search_strings s ON s.rowid = v.string ' +
            "WHERE p.path IN ('name', 'samp_name') ORDER BY 1, 2",
        )
        .raw()
        .all();
      expect(rows).toEqual([
        ['a1', 'name', 'first part'],
        ['a1', 'samp_name', 'shared before'],
        ['a2', 'name', 'common to both parts'],
        ['b1', 'name', 'second part'],
        ['b1', 'samp_name', 'common to both parts'],
        ['b2', 'name', 'shared before'],
        ['b2', 'samp_name', 'first part'],
        ['b3', 'name', 'only in the second'],
        ['old', 'name', 'shared before'],
      ]);
      const strings = store.db.prepare('SELECT value FROM search_strings ORDER BY value').pluck().all();
      expect(strings).toEqual(expect.arrayContaining(['common to both parts', 'first part', 'second part']));
      expect(new Set(strings).size).toBe(strings.length);
      const q = { kind: 'regex' as const, path: 'samp_name', pattern: 'part', flags: '' };
      expect(await index.candidates('biosample_set', q, 10)).toEqual({
        all: false,
        ids: new Set(['b1', 'b2']),
      });
    }));

  it('counts in its size the implicit indexes of its UNIQUE columns', () =>
    withHookedIndex(async (store, index) => {
      await store.upsertMany(
        'biosample_set',
        Array.from({ length: 300 }, (_, i) => ({
          id: `b${i}`,
          name: `sample ${i} of a long name ${i * 7919}`,
        })),
      );
      const pages = (where: string) =>
        (store.db.prepare(`SELECT sum(pgsize) AS n FROM dbstat WHERE ${where}`).get() as { n: number }).n;
      const ownTables = pages("name LIKE 'search\\_%' ESCAPE '\\'");
      const autoindexes = pages("name LIKE 'sqlite\\_autoindex\\_search\\_%' ESCAPE '\\'");
      expect(autoindexes).toBeGreaterThan(0);
      expect(index.sizeBytes()).toBe(ownTables + autoindexes);
    }));

  it('rolls the index back with a failed store write', () =>
    withHookedIndex(async (store, index) => {
      await expect(
        store.upsertMany('biosample_set', [{ id: 'x', name: 'Glacier ice' }, { name: 'no id' } as never]),
      ).rejects.toThrow();
      expect(
        await index.candidates('biosample_set', { kind: 'search', path: 'name', text: 'glacier' }, 10),
      ).toEqual({
        all: false,
        ids: new Set(),
      });
    }));

  it('finds strings holding lone surrogates (stored as U+FFFD, and so are the query literals)', () =>
    withHookedIndex(async (store, index) => {
      await store.upsertMany('biosample_set', [
        { id: 'a', name: 'core\ud800 sample' },
        { id: 'b', name: 'core\udc00 sample' },
        { id: 'c', name: 'other' },
      ]);
      const found = async (q: IndexablePredicate) => {
        const c = await index.candidates('biosample_set', q, 10);
        return c.all ? 'ALL' : [...c.ids].sort();
      };
      expect(await found({ kind: 'search', path: 'name', text: 'sample' })).toEqual(['a', 'b']);
      expect(await found({ kind: 'regex', path: 'name', pattern: 'e\ud800 s', flags: '' })).toEqual([
        'a',
        'b',
      ]);
      // A key holding one too.
      await store.upsertMany('biosample_set', [{ id: 'd', ['odd\udc00key']: 'deep core sample' }]);
      expect(await found({ kind: 'search', path: 'odd\udc00key', text: 'deep' })).toEqual(['d']);
    }));

  it('tests the strings its MATCH finds with the regex, so a string holding only its trigrams leads to no record', () =>
    withHookedIndex(async (store, index) => {
      await store.upsertMany('biosample_set', [
        { id: 'match', name: 'Soil sample 12345 from Toolik' },
        // Every trigram of the pattern's literals ("sample 1234x", "4x "), not the pattern.
        { id: 'near', name: 'Soil sample 12346x and 45 more' },
        // The matching string at another path.
        { id: 'elsewhere', name: 'Soil core', description: 'Soil sample 12345 from Toolik' },
      ]);
      const found = async (pattern: string, flags = '') => {
        const c = await index.candidates(
          'biosample_set',
          { kind: 'regex', path: 'name', pattern, flags },
          10,
        );
        return c.all ? 'ALL' : [...c.ids].sort();
      };
      expect(await found('sample 1234[0-9] ')).toEqual(['match']);
      expect(await found('SAMPLE 1234[0-9] ')).toEqual([]);
      expect(await found('SAMPLE 1234[0-9] ', 'i')).toEqual(['match']);
      expect(await found('sample 1234[0-9]')).toEqual(['match', 'near']);
    }));

  it("reads a new pattern's trigram counts in turns of the event loop, and answers a known one at once", () =>
    withHookedIndex(async (store, index) => {
      await store.upsertMany('biosample_set', [
        { id: 'match', name: 'Soil sample 12345 from Toolik' },
        { id: 'other', name: 'Sediment core from East River' },
      ]);
      /** Whether a callback queued just after asking ran before the answer came. */
      const turnsTaken = async (pattern: string) => {
        let turned = false;
        const asked = index.candidates(
          'biosample_set',
          { kind: 'regex', path: 'name', pattern, flags: '' },
          10,
        );
        setImmediate(() => (turned = true));
        const c = await asked;
        return { turned, ids: c.all ? 'ALL' : [...c.ids] };
      };
      // Each count walks a doclist (tens of ms for a common trigram in a large index): not all in one stretch.
      expect(await turnsTaken('sample 1234[0-9] from')).toEqual({ turned: true, ids: ['match'] });
      // The plan is kept: no count to read, no turn to take.
      expect(await turnsTaken('sample 1234[0-9] from')).toEqual({ turned: false, ids: ['match'] });
    }));

  it('opens a file written by the earlier layout (no groups, a words table) and keeps its records findable', async () => {
    const db = new Database(':memory:');
    db.exec(`
      CREATE TABLE search_strings (rowid INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE);
      CREATE VIRTUAL TABLE search_trigram USING fts5(
        value, content = '', contentless_delete = 1, tokenize = 'trigram case_sensitive 0');
      CREATE VIRTUAL TABLE search_words USING fts5(
        value, content = '', contentless_delete = 1, detail = none, tokenize = 'unicode61 remove_diacritics 0');
      CREATE TRIGGER search_strings_added AFTER INSERT ON search_strings BEGIN
        INSERT INTO search_trigram(rowid, value) VALUES (new.rowid, new.value);
        INSERT INTO search_words(rowid, value) VALUES (new.rowid, new.value);
      END;
      CREATE TABLE search_records (rowid INTEGER PRIMARY KEY, collection TEXT NOT NULL, id TEXT NOT NULL,
        fingerprint TEXT NOT NULL, UNIQUE (collection, id));
      CREATE TABLE search_paths (rowid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);
      CREATE TABLE search_values (record INTEGER NOT NULL, path INTEGER NOT NULL, string INTEGER NOT NULL,
        PRIMARY KEY (record, path, string)) WITHOUT ROWID;
      CREATE INDEX search_values_by_string ON search_values(string, path, record);
      INSERT INTO search_strings(rowid, value) VALUES (1, 'Old permafrost core');
      INSERT INTO search_records(rowid, collection, id, fingerprint) VALUES (1, 'biosample_set', 'old', 'x');
      INSERT INTO search_paths(rowid, path) VALUES (1, 'name');
      INSERT INTO search_values VALUES (1, 1, 1);
    `);
    const index = new FtsSearchIndex(db, { hooked: false, ownsDatabase: true });
    try {
      expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'search_words'").pluck().get()).toBe(
        0,
      );
      // The trigram index with positions was built again without them, from the strings.
      expect(
        db.prepare("SELECT sql FROM sqlite_master WHERE name = 'search_trigram'").pluck().get(),
      ).toContain('detail = none');
      const batch = Array.from({ length: 8 }, (_, i) => ({
        id: `new-${i}`,
        name: `New permafrost core ${i}`,
        type: 'x',
      }));
      await index.index('biosample_set', batch);
      const found = await index.candidates(
        'biosample_set',
        { kind: 'search', path: 'name', text: 'permafrost' },
        100,
      );
      expect(found.all ? 'ALL' : [...found.ids].sort()).toEqual([
        'new-0',
        'new-1',
        'new-2',
        'new-3',
        'new-4',
        'new-5',
        'new-6',
        'new-7',
        'old',
      ]);
    } finally {
      await index.close();
    }
  });

  it('opens a file whose strings were tokenized by an insert trigger, and tokenizes each new string once', async () => {
    const db = new Database(':memory:');
    // The layout before strings were tokenized a batch at a time: the same tables, and a trigger.
    new FtsSearchIndex(db, { hooked: false, ownsDatabase: false });
    db.exec(`
      CREATE TRIGGER search_strings_added AFTER INSERT ON search_strings BEGIN
        INSERT INTO search_trigram(rowid, value) VALUES (new.rowid, new.value);
      END;
      INSERT INTO search_strings(value) VALUES ('Old permafrost core');
    `);
    const index = new FtsSearchIndex(db, { hooked: false, ownsDatabase: true });
    try {
      expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").pluck().get()).toBe(0);
      await index.index('biosample_set', [
        { id: 'a', name: 'Frozen tundra core', type: 'x' },
        { id: 'b', name: 'Thawed tundra core', type: 'x' },
      ]);
      // Each trigram counts the strings holding it: 'tun' is in two, 'zen' in one, 'ore' in three.
      const strings = db.prepare('SELECT doc FROM search_trigram_vocab WHERE term = ?').pluck();
      expect([strings.get('tun'), strings.get('zen'), strings.get('ore')]).toEqual([2, 1, 3]);
      const found = await index.candidates(
        'biosample_set',
        { kind: 'search', path: 'name', text: 'tundra' },
        10,
      );
      expect(found.all ? 'ALL' : [...found.ids].sort()).toEqual(['a', 'b']);
    } finally {
      await index.close();
    }
  });

  it('renders trigram queries as FTS5 MATCH expressions of quoted substrings', () => {
    expect(ftsMatchOf(trigramQueryOf('abc|x"yz'))).toBe('"abc" OR "x""yz"');
    expect(ftsMatchOf(trigramQueryOf('abc.*(def|ghi)'))).toBe('"abc" AND ("def" OR "ghi")');
  });
});

describe('FTS5 index: recurring pairs kept once per set (groups)', () => {
  const C = 'biosample_set';
  const soil = (i: number) => ({
    id: `soil-${String(i).padStart(2, '0')}`,
    name: `Soil core ${i}`,
    ecosystem: 'Terrestrial',
    env_medium: { term: { id: 'ENVO:00001998', name: 'soil' }, type: 'nmdc:ControlledIdentifiedTermValue' },
    alternative_identifiers: [`gold:Gb${i}`, 'shared-but-alone'],
  });
  const lake = (i: number) => ({
    id: `lake-${String(i).padStart(2, '0')}`,
    name: `Lake sediment ${i}`,
    ecosystem: 'Aquatic',
    env_medium: {
      term: { id: 'ENVO:00002007', name: 'sediment' },
      type: 'nmdc:ControlledIdentifiedTermValue',
    },
  });
  const ids = (c: Awaited<ReturnType<FtsSearchIndex['candidates']>>) => (c.all ? 'ALL' : [...c.ids].sort());

  it('groups pairs that records share, and stays exact through updates, deletes and a rebuild', () =>
    withHookedIndex(async (store, index) => {
      const count = (sql: string) => store.db.prepare(sql).pluck().get() as number;
      const soils = Array.from({ length: 20 }, (_, i) => soil(i));
      const lakes = Array.from({ length: 20 }, (_, i) => lake(i));
      await store.upsertMany(C, [...soils, ...lakes]);
      // Two sets: each soil record shares five pairs, each lake record four.
      expect(count('SELECT count(*) FROM search_groups')).toBe(2);
      expect(count('SELECT count(*) FROM search_records WHERE grp IS NOT NULL')).toBe(40);
      // Own rows: soil name + gold id, lake name + id; group rows 6 + 4... fewer than one row per pair.
      const pairs = 20 * 7 + 20 * 5;
      expect(count('SELECT count(*) FROM search_values')).toBeLessThan(pairs / 2);

      const medium = { kind: 'search' as const, path: 'env_medium', text: 'soil' };
      const soilIds = soils.map((d) => d.id);
      expect(ids(await index.candidates(C, medium, 100))).toEqual(soilIds);
      expect(
        ids(
          await index.candidates(C, { kind: 'regex', path: 'ecosystem', pattern: '^Aqua', flags: '' }, 100),
        ),
      ).toEqual(lakes.map((d) => d.id));
      // Word predicates are answered by their words' trigrams; words shorter than a trigram cannot narrow.
      expect(
        ids(await index.candidates(C, { kind: 'words', path: 'name', text: 'CORE, soil!' }, 100)),
      ).toEqual(soilIds);
      expect(await index.candidates(C, { kind: 'words', path: 'name', text: 'a 7' }, 100)).toEqual({
        all: true,
      });

      // soil-00 becomes a lake sample on its own (a batch of one keeps every pair as its own row).
      await store.upsertMany(C, [{ ...lake(99), id: 'soil-00' }]);
      expect(ids(await index.candidates(C, medium, 100))).toEqual(soilIds.slice(1));
      expect(
        ids(
          await index.candidates(C, { kind: 'search', path: 'env_medium.term.name', text: 'sediment' }, 100),
        ),
      ).toEqual([...lakes.map((d) => d.id), 'soil-00'].sort());
      await store.deleteMany(C, { id: 'soil-01' });
      expect(ids(await index.candidates(C, medium, 100))).toEqual(soilIds.slice(2));
      // A set no record points at any more is pruned by a rebuild, with its rows.
      await store.upsertMany(
        C,
        lakes.map((d) => ({ ...d, ecosystem: 'Freshwater' })),
      );
      expect(count('SELECT count(*) FROM search_groups')).toBe(3);
      const before = count('SELECT count(*) FROM search_values');
      expect(index.pruneGroups()).toBe(1);
      expect(count('SELECT count(*) FROM search_groups')).toBe(2);
      expect(count('SELECT count(*) FROM search_values')).toBe(before - 4);
      expect(
        ids(await index.candidates(C, { kind: 'search', path: 'ecosystem', text: 'aquatic' }, 100)),
      ).toEqual(['soil-00']);
      await reindexCollection(store, index, C);
      expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
      expect(ids(await index.candidates(C, medium, 100))).toEqual(soilIds.slice(2));
      expect(
        ids(await index.candidates(C, { kind: 'search', path: 'ecosystem', text: 'fresh' }, 100)),
      ).toEqual(lakes.map((d) => d.id));
    }));

  it('groups only sets that records share: pairs that recur apart (dates, depths) stay own rows', () => {
    const batch = new BatchPairs();
    for (let i = 0; i < 64; i++)
      batch.add({ id: `r${i}`, date: `d${i % 8}`, depth: `${i % 7} m`, type: 'x', unit: 'm' });
    const shared = sharedSets(batch);
    const named = shared.sets.map((s) =>
      s
        .map((p) => `${batch.pairPath[p]}=${batch.pairValue[p]}`)
        .sort()
        .join(' '),
    );
    // Records 0-7 share their (date, depth) with records 56-63; the other 48 share only {type, unit}.
    expect([...named].sort()).toEqual(
      [
        ...Array.from({ length: 8 }, (_, i) => `date=d${i} depth=${i % 7} m type=x unit=m`).sort(),
        'type=x unit=m',
      ].sort(),
    );
    const users = new Map<number, number>();
    for (const g of shared.groupOf) users.set(g, (users.get(g) ?? 0) + 1);
    expect(users.get(-1)).toBeUndefined();
    expect([...users.values()].every((n) => n >= 2)).toBe(true);
    expect(named[shared.groupOf[20]!]).toBe('type=x unit=m');
    // A batch too small to tell what recurs: no groups.
    const small = new BatchPairs();
    for (let i = 0; i < 3; i++) small.add({ id: `r${i}`, type: 'x', unit: 'm' });
    expect(sharedSets(small).sets).toEqual([]);
  });
});

describe('FTS5 index: the rebuild worker looks up string keys', () => {
  it('uses the keys it read only while no string has been removed since', () =>
    withHookedIndex(async (store, index) => {
      await store.upsertMany('biosample_set', [{ id: 'a', name: 'alpha marsh' }]);
      await store.upsertMany('biosample_set', [{ id: 'z', name: 'zeta fen' }]);
      const keyOf = (value: string) =>
        store.db.prepare('SELECT rowid FROM search_strings WHERE value = ?').pluck().get(value) as
          number | undefined;
      const found = async (text: string, path = 'name') => {
        const c = await index.candidates('biosample_set', { kind: 'search', path, text }, 10);
        return c.all ? 'ALL' : [...c.ids].sort();
      };
      const preparer = new WorkerPreparer(store.db.name, 2048);
      try {
        const text = (id: string) => JSON.stringify({ id, name: 'zeta fen', note: `new ${id}` });
        const fresh = await preparer.prepare([text('b')]);
        const known = new Map(fresh.pairValue.map((v, p) => [v, fresh.known?.keys[p]]));
        expect(known).toEqual(
          new Map([
            ['b', 0],
            ['zeta fen', keyOf('zeta fen')],
            ['new b', 0],
          ]),
        );
        store.db.transaction(() => index.apply('biosample_set', fresh, true))();
        expect(await found('zeta')).toEqual(['b', 'z']);
        expect(await found('new b', 'note')).toEqual(['b']);

        // Prepared, then its string is removed and its key given to another string.
        const stale = await preparer.prepare([text('d')]);
        const staleKey = keyOf('zeta fen')!;
        await store.deleteMany('biosample_set', { id: 'z' });
        await index.remove('biosample_set', ['b']); // indexed above, not stored
        expect(index.pruneStrings()).toBeGreaterThan(0);
        // A pruned string's trigrams went with it: each trigram finds exactly the strings holding it.
        const matched = (t: string) =>
          store.db
            .prepare('SELECT rowid FROM search_trigram WHERE search_trigram MATCH ? ORDER BY rowid')
            .pluck()
            .all(`"${t}"`);
        const holding = (t: string) =>
          store.db
            .prepare('SELECT rowid FROM search_strings WHERE instr(lower(value), ?) > 0 ORDER BY rowid')
            .pluck()
            .all(t);
        expect(matched('zet')).toEqual([]);
        await store.upsertMany('biosample_set', [{ id: 'c', name: 'other string' }]);
        const holder = store.db.prepare('SELECT value FROM search_strings WHERE rowid = ?').pluck();
        expect(holder.get(staleKey)).toMatch(/^(c|other string)$/);
        for (const t of ['zet', 'fen', 'new', 'oth', 'str']) expect(matched(t)).toEqual(holding(t));
        store.db.transaction(() => index.apply('biosample_set', stale, true))();
        expect(await found('zeta')).toEqual(['d']);
        expect(await found('other')).toEqual(['c']);
      } finally {
        await preparer.close();
      }
    }));
});

describe('FTS5 index: rebuild when the workers cannot read the file', () => {
  it('looks the keys up on the writing thread instead', async () => {
    const dir = tempDir();
    const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    // An exclusive lock held by the index's own connection: no other connection can read.
    const db = new Database(path.join(dir, 'index.sqlite'));
    db.pragma('locking_mode = EXCLUSIVE');
    const index = new FtsSearchIndex(db, { hooked: false, ownsDatabase: true });
    try {
      const docs = Array.from({ length: 30 }, (_, i) => ({
        id: `nmdc:bsm-11-${String(i).padStart(4, '0')}`,
        name: `core ${i} from ${i % 3 ? 'fen' : 'bog'}`,
      }));
      await store.upsertMany('biosample_set', docs);
      for (let round = 0; round < 2; round++) {
        const result = await reindexCollection(store, index, 'biosample_set', () => {}, 8);
        expect(result.records).toBe(30);
        const bog = await index.candidates(
          'biosample_set',
          { kind: 'search', path: 'name', text: 'bog' },
          100,
        );
        expect(bog.all ? [] : [...bog.ids].sort()).toEqual(
          docs.filter((_, i) => i % 3 === 0).map((d) => d.id),
        );
        expect(hasDrift(await checkCollection(store, index, 'biosample_set'))).toBe(false);
      }
    } finally {
      await index.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('FTS5 index: batches prepared ahead of a write on worker threads', () => {
  const C = 'biosample_set';
  const sample = (i: number, place = 'Toolik Lake') => ({
    id: `nmdc:bsm-11-${String(i).padStart(4, '0')}`,
    name: `Core ${i} from ${place}`,
    ecosystem: 'Aquatic',
    env_medium: {
      term: { id: 'ENVO:00002007', name: 'sediment' },
      type: 'nmdc:ControlledIdentifiedTermValue',
    },
    alternative_identifiers: [`gold:Gb${i}`],
  });
  /** The map as (owner's ids, path, string) rows, whatever keys the owners got. */
  const mapRows = (store: SqliteDocumentStore) =>
    store.db
      .prepare(
        `SELECT coalesce(r.id, (SELECT group_concat(m.id) FROM (SELECT id FROM search_records WHERE grp = -v.record ORDER BY id) m)) AS owner,
                p.path, s.value
           FROM search_values v JOIN search_paths p ON p.rowid = v.path JOIN search_strings s ON s.rowid = v.string
           LEFT JOIN search_records r ON r.rowid = v.record
          ORDER BY 1, 2, 3`,
      )
      .raw()
      .all();
  const ids = (c: Awaited<ReturnType<FtsSearchIndex['candidates']>>) => (c.all ? 'ALL' : [...c.ids].sort());

  it('writes them as the hook would have prepared them, and leaves them when the records differ', async () => {
    const first = Array.from({ length: 30 }, (_, i) => sample(i));
    const second = Array.from({ length: 30 }, (_, i) => sample(i + 30, 'Kellogg Station'));
    const writes = [
      { collection: C, docs: first },
      { collection: C, docs: second },
    ];
    let plain: unknown[] = [];
    await withHookedIndex(async (store, index) => {
      await new RecordWriter(store, index).upsertAll(writes);
      expect(index.counters.preparedAhead).toBe(0);
      plain = mapRows(store);
    });
    expect(plain.length).toBeGreaterThan(60);
    await withHookedIndex(async (store, index) => {
      const writer = new RecordWriter(store, index);
      const prepared = writer.prepare(writes);
      await writer.upsertAll(await prepared.ready);
      prepared.release();
      expect(index.counters.preparedAhead).toBe(2);
      expect(mapRows(store)).toEqual(plain);
      expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
      const toolik = { kind: 'search' as const, path: 'name', text: 'toolik' };
      expect(ids(await index.candidates(C, toolik, 100))).toEqual(first.map((d) => d.id));

      // Prepared, then other versions of the records written: the hook prepares those itself.
      const renamed = first.map((d) => ({ ...d, name: `${d.name} renamed` }));
      const stale = writer.prepare([{ collection: C, docs: first.map((d) => ({ ...d, name: 'Stale' })) }]);
      await stale.ready;
      await writer.upsertAll([{ collection: C, docs: renamed }]);
      stale.release();
      expect(index.counters.preparedAhead).toBe(2);
      expect(hasDrift(await checkCollection(store, index, C))).toBe(false);
      expect(ids(await index.candidates(C, { kind: 'search', path: 'name', text: 'renamed' }, 100))).toEqual(
        first.map((d) => d.id),
      );
      expect(await index.candidates(C, { kind: 'search', path: 'name', text: 'stale' }, 100)).toEqual({
        all: false,
        ids: new Set(),
      });
      await index.close();
    });
  });
});
