/**
 * Sorted pages under a filter the attribute index decides, when the filter correlates with the
 * sort key (each category's records named alike, so long runs of other categories lie before
 * and between its matches): a later page of the same walk starts from a row an earlier page
 * found, and every page is still the one MongoDB's order gives, after writes from this
 * connection or another one over the same file included.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteDocumentStore } from '../../src/store/sqlite/index.ts';
import type { Doc, Filter, Sort } from '../../src/store/port.ts';
import { compileFilter } from '../../src/store/filter.ts';
import { sample, TERRESTRIAL } from '../support/correlated-samples.ts';
import { sortDocs } from '../../src/store/ordering.ts';

const C = 'biosample_set';

/** Pages asked in an order that leaves a deeper page known before shallower ones. */
const PAGES: Array<[skip: number, limit: number]> = [
  [0, 25],
  [1175, 25],
  [400, 25],
  [25, 25],
  [1190, 30],
  [620, 50],
];

let dir: string;
let store: SqliteDocumentStore;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nmdc-walk-'));
  store = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
});

afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Every page as MongoDB orders the matches; returns how many pages started from a kept row. */
async function expectPages(docs: Doc[], filter: Filter, sort: Sort, pages = PAGES): Promise<number> {
  const predicate = compileFilter(filter);
  const expected = sortDocs(
    docs.filter((d) => predicate(d)),
    [...sort, ['id', 1]],
  );
  const reused = store.counters.walkPositionsReused;
  for (const [skip, limit] of pages) {
    const walks = store.counters.sortedIndexWalks;
    const page = await store.find(C, filter, { sort, skip, limit });
    expect(
      page.map((d) => d.id),
      `${JSON.stringify(sort)} ${skip}+${limit}`,
    ).toEqual(expected.slice(skip, skip + limit).map((d) => d.id));
    expect(page).toEqual(expected.slice(skip, skip + limit));
    expect(store.counters.sortedIndexWalks).toBe(walks + 1);
  }
  return store.counters.walkPositionsReused - reused;
}

describe('sorted pages under a filter correlated with the sort key', () => {
  const docs = Array.from({ length: 3000 }, (_, i) => sample(i));

  it('start each later page from a row an earlier one found, with the same answers', async () => {
    await store.upsertMany(C, docs);
    expect(docs.filter((d) => d.ecosystem_category === 'Terrestrial')).toHaveLength(1200);
    for (const direction of [1, -1] as const) {
      const sort: Sort = [['name', direction]];
      // The first round finds rows on its way; the second starts every page from one.
      const first = await expectPages(docs, TERRESTRIAL, sort);
      expect(first).toBeGreaterThan(0);
      expect(first).toBeLessThan(PAGES.length);
      expect(await expectPages(docs, TERRESTRIAL, sort)).toBe(PAGES.length);
      // Two conditions, one of them an $in: a walk of its own.
      const both: Filter = {
        ecosystem_category: { $in: ['Terrestrial', 'Aquatic'] },
        type: 'nmdc:Biosample',
      };
      await expectPages(docs, both, sort);
      expect(await expectPages(docs, both, sort)).toBe(PAGES.length);
    }
    // Large groups of one value: a descending walk steps within a value in id order, then below it.
    const byCategory: Sort = [['ecosystem_category', -1]];
    const deep: Array<[number, number]> = [
      [2390, 40],
      [1150, 100],
      [2995, 10],
      [1790, 20],
    ];
    await expectPages(docs, { type: 'nmdc:Biosample' }, byCategory, deep);
    expect(await expectPages(docs, { type: 'nmdc:Biosample' }, byCategory, deep)).toBe(deep.length);
  });

  it('starts later pages of a filter the index does not decide from a match found before', async () => {
    await store.upsertMany(C, docs);
    const residual: Filter[] = [
      // Index conditions and a check of each record's body.
      { ecosystem_category: 'Terrestrial', name: { $regex: '[13579]$' } },
      // No index condition: every record is checked.
      { name: { $regex: 'SOIL|leaf', $options: 'i' } },
    ];
    for (const filter of residual) {
      for (const direction of [1, -1] as const) {
        const sort: Sort = [['name', direction]];
        const pages: Array<[number, number]> = [
          [0, 20],
          [450, 40],
          [180, 25],
          [30, 30],
          [900, 10],
          [455, 5],
        ];
        await expectPages(docs, filter, sort, pages);
        expect(await expectPages(docs, filter, sort, pages)).toBeGreaterThanOrEqual(4);
      }
    }
    // Written records are met again: the kept matches are dropped.
    const renamed = docs.slice(0, 400).map((d) => ({ ...d, name: `Soil sample renamed ${String(d.id)}` }));
    await store.upsertMany(C, renamed);
    const now = [...renamed, ...docs.slice(400)];
    const filter: Filter = { name: { $regex: 'SOIL|leaf', $options: 'i' } };
    await expectPages(
      now,
      filter,
      [['name', 1]],
      [
        [0, 20],
        [450, 40],
        [180, 25],
      ],
    );
  });

  it('keeps what it found in step with records written, deleted or moved to other positions', async () => {
    await store.upsertMany(C, docs);
    const sort: Sort = [['name', 1]];
    await expectPages(docs, TERRESTRIAL, sort);
    // New matches sorting before every kept row, matches leaving the filter, records deleted.
    const early = Array.from({ length: 40 }, (_, i) => ({
      ...sample(5000 + i, 'Leaf'),
      ecosystem_category: 'Terrestrial',
    }));
    const leaving = docs.filter((d) => d.ecosystem_category === 'Terrestrial').slice(0, 30);
    await store.upsertMany(C, [...early, ...leaving.map((d) => ({ ...d, ecosystem_category: 'Aquatic' }))]);
    const deleted = new Set(
      docs
        .filter((d) => String(d.name).startsWith('Soil'))
        .slice(0, 15)
        .map((d) => d.id),
    );
    await store.deleteMany(C, { id: { $in: [...deleted] } });
    const left = new Set(leaving.map((d) => d.id));
    const now = [
      ...docs
        .filter((d) => !deleted.has(d.id))
        .map((d) => (left.has(d.id) ? { ...d, ecosystem_category: 'Aquatic' } : d)),
      ...early,
    ];
    // Every page starts from the kept rows, brought up to the writes.
    expect(await expectPages(now, TERRESTRIAL, sort)).toBe(PAGES.length);
    expect(await expectPages(now, TERRESTRIAL, sort)).toBe(PAGES.length);
  });

  it('forgets what it found when another connection writes to the same file', async () => {
    await store.upsertMany(C, docs);
    const sort: Sort = [['name', -1]];
    await expectPages(docs, TERRESTRIAL, sort);
    const other = new SqliteDocumentStore({ file: path.join(dir, 'nmdc.sqlite') });
    const late = Array.from({ length: 60 }, (_, i) => ({
      ...sample(7000 + i, 'Sediment'),
      ecosystem_category: 'Terrestrial',
    }));
    try {
      await other.upsertMany(C, late);
    } finally {
      await other.close();
    }
    const now = [...docs, ...late];
    expect(await expectPages(now, TERRESTRIAL, sort)).toBeLessThan(PAGES.length);
    expect(await expectPages(now, TERRESTRIAL, sort)).toBe(PAGES.length);
    // A commit that logs no change (as a repair of the index would): kept rows are dropped too.
    const raw = new Database(path.join(dir, 'nmdc.sqlite'));
    try {
      raw.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('walk-test', '1')").run();
    } finally {
      raw.close();
    }
    expect(await expectPages(now, TERRESTRIAL, sort)).toBeLessThan(PAGES.length);
  });
});
