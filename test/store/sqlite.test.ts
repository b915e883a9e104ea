import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteDocumentStore, type WriteHook } from '../../src/store/sqlite/index.ts';
import type { Doc } from '../../src/store/port.ts';
import { describeDocumentStore } from './behaviour.ts';

function openTemporaryStore(): { store: SqliteDocumentStore; dispose: () => Promise<void> } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-store-'));
  const store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
  return {
    store,
    dispose: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

describeDocumentStore('SQLite', async () => openTemporaryStore());

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
      expect(store.counters.bodiesParsed).toBe(20);

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

      // A range beside a more selective equality is checked on the equality's candidates only.
      store.counters.bodiesParsed = 0;
      expect(
        await store.count('biosample_set', {
          ecosystem_category: 'Plants',
          'depth.has_numeric_value': { $lt: 1 },
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
        onUpsert: (collection, docs) => {
          const rows = store.db
            .prepare('SELECT count(*) AS n FROM docs WHERE collection = ?')
            .get(collection) as { n: number };
          seen.push(`upsert ${collection} ${docs.map((d) => d.id).join(',')} visible=${rows.n}`);
          if (docs.some((d) => d.fail)) throw new Error('index write failed');
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
});
