import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestApp, type TestApp } from '../support/server.ts';
import type { Doc } from '../../src/store/port.ts';
import { sortDocs } from '../../src/store/ordering.ts';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';

let t: TestApp;

const biosample = (n: number): Doc => ({
  id: `nmdc:bsm-11-c${String(n).padStart(5, '0')}`,
  type: 'nmdc:Biosample',
  ecosystem_category: n % 4 ? 'Plants' : 'Terrestrial',
  ecosystem_type: n % 5 ? 'Rhizosphere' : 'Soil',
  depth:
    n % 97 === 0
      ? { has_numeric_value: null }
      : n % 89 === 0
        ? { has_numeric_value: [] }
        : n % 83 === 0
          ? '5 cm'
          : { has_numeric_value: n % 7 ? (n * 13) % 41 : [n % 11, 'deep'] },
});

const docs = Array.from({ length: 3000 }, (_, n) => biosample(n));

beforeAll(async () => {
  t = await createTestApp();
  await t.store.upsertMany('biosample_set', docs);
});

afterAll(async () => {
  await t.close();
});

describe('sorted pages on an indexed path through HTTP', () => {
  it.each([
    ['desc', -1],
    ['asc', 1],
  ] as const)('pages and cursors through two filters sorted %s like MongoDB', async (word, direction) => {
    const matches = docs.filter(
      (d) => d.ecosystem_category === 'Plants' && d.ecosystem_type === 'Rhizosphere',
    );
    const expected = sortDocs([...matches], [['depth.has_numeric_value', direction]]).map((d) => d.id);
    const query = {
      filter: 'ecosystem_category:Plants,ecosystem_type:Rhizosphere',
      sort: `depth.has_numeric_value:${word}`,
      fields: 'depth',
    };
    const store = t.store as SqliteDocumentStore;
    const walks = store.counters.sortedIndexWalks;

    const third = await request(t.app)
      .get('/biosamples')
      .query({ ...query, per_page: 25, page: 3 })
      .expect(200);
    expect(third.body.results.map((r: Doc) => r.id)).toEqual(expected.slice(50, 75));
    expect(store.counters.sortedIndexWalks).toBeGreaterThan(walks);

    const seen: string[] = [];
    let cursor = '*';
    for (let pages = 0; pages < 5; pages++) {
      const res = await request(t.app)
        .get('/biosamples')
        .query({ ...query, per_page: 100, cursor })
        .expect(200);
      seen.push(...res.body.results.map((r: Doc) => r.id));
      cursor = res.body.meta.next_cursor;
    }
    expect(seen).toEqual(expected.slice(0, 500));
  });
});

describe('cursor paging in sort order', () => {
  it('continues after the last record returned, even when records before it go away', async () => {
    const store = t.store as SqliteDocumentStore;
    const named = Array.from({ length: 1500 }, (_, n) => ({
      id: `nmdc:bsm-11-n${String(n).padStart(5, '0')}`,
      type: 'nmdc:Biosample',
      name: `sample ${String((n * 7919) % 1500).padStart(4, '0')}`,
      ecosystem_category: 'Named',
    }));
    await store.upsertMany('biosample_set', named);
    const expected = sortDocs([...named], [['name', -1]]).map((d) => d.id);
    const query = { filter: 'ecosystem_category:Named', sort: 'name:desc', fields: 'name', per_page: 200 };
    const seen: string[] = [];
    let cursor = '*';
    for (let pages = 0; pages < 4; pages++) {
      const walks = store.counters.sortedIndexWalks;
      const res = await request(t.app)
        .get('/biosamples')
        .query({ ...query, cursor })
        .expect(200);
      expect(store.counters.lastStrategy).toBe('sorted-index-walk');
      expect(store.counters.sortedIndexWalks).toBe(walks + 1);
      const ids = res.body.results.map((r: Doc) => r.id);
      expect(res.body.results.every((r: Doc) => Object.keys(r).sort().join() === 'id,name')).toBe(true);
      seen.push(...ids);
      // Records already paged through are deleted: a cursor that skipped by count would now jump.
      await store.deleteMany('biosample_set', { id: { $in: ids.slice(0, 50) } });
      cursor = res.body.meta.next_cursor;
    }
    expect(seen).toEqual(expected.slice(0, 800));
  });
});

describe('numbered pages under a filter that goes with the sort key', () => {
  it('answers every page like MongoDB, the second time from rows the first found, and after writes', async () => {
    const store = t.store as SqliteDocumentStore;
    // Each kind's samples named alike: long runs of other kinds lie before and between the matches.
    const kinds = [
      ['Leaf', 'Canopy'],
      ['Permafrost', 'Tundra'],
      ['Sediment', 'Benthic'],
      ['Soil', 'Tundra'],
    ] as const;
    const sample = (n: number, [prefix, category]: readonly [string, string]): Doc => ({
      id: `nmdc:bsm-11-k${String(n).padStart(5, '0')}`,
      type: 'nmdc:Biosample',
      name: `${prefix} sample ${String((n * 7919) % 2000).padStart(4, '0')}`,
      ecosystem_category: category,
    });
    let written = Array.from({ length: 2000 }, (_, n) => sample(n, kinds[Math.floor(n / 500)]!));
    await store.upsertMany('biosample_set', written);
    const pageOf = async (page: number) => {
      const res = await request(t.app)
        .get('/biosamples')
        .query({ filter: 'ecosystem_category:Tundra', sort: 'name', fields: 'name', per_page: 25, page })
        .expect(200);
      return res.body as { meta: { count: number }; results: Doc[] };
    };
    const expectPages = async (pages: number[]) => {
      const tundra = written.filter((d) => d.ecosystem_category === 'Tundra');
      const expected = sortDocs([...tundra], [['name', 1]]).map((d) => ({ id: d.id, name: d.name }));
      for (const page of pages) {
        const body = await pageOf(page);
        expect(body.meta.count).toBe(tundra.length);
        expect(body.results, `page ${page}`).toEqual(expected.slice((page - 1) * 25, page * 25));
      }
    };
    const pages = [1, 31, 21, 2, 40, 41];
    await expectPages(pages);
    const reused = store.counters.walkPositionsReused;
    await expectPages(pages);
    expect(store.counters.walkPositionsReused - reused).toBeGreaterThanOrEqual(pages.length);
    // Tundra samples sorting first, and some Soil samples leaving Tundra.
    const early = Array.from({ length: 30 }, (_, n) => sample(3000 + n, ['Aardvark', 'Tundra']));
    const moved = written.slice(1500, 1520).map((d) => ({ ...d, ecosystem_category: 'Benthic' }));
    await store.upsertMany('biosample_set', [...early, ...moved]);
    const movedIds = new Set(moved.map((d) => d.id));
    written = [...written.filter((d) => !movedIds.has(d.id)), ...moved, ...early];
    await expectPages(pages);
  });
});
