/**
 * Counts of filters the attribute index decides, read off the index in pages (index-count.ts):
 * each equals the count over every record, pages of a few rows included (one value spread over
 * many pages, records with several values at the driving path), and no record is parsed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileFilter } from '../../src/store/filter.ts';
import type { Doc, Filter } from '../../src/store/port.ts';
import { planIndex } from '../../src/store/sqlite/attribute-index.ts';
import { countOnIndex } from '../../src/store/sqlite/index-count.ts';
import type { StoreContext } from '../../src/store/sqlite/store-context.ts';
import { openTemporaryStore } from '../support/temporary-store.ts';

const C = 'biosample_set';
const CATEGORIES = ['Terrestrial', 'Aquatic', 'Plants'];
const TYPES = ['Soil', 'Leaf', 'Sediment', 'Root'];

/** What a record holds at depth.has_numeric_value: mostly one of seven numbers, and the odd ones. */
function depthOf(i: number): unknown {
  if (i % 41 === 0) return undefined;
  if (i % 43 === 0) return { has_numeric_value: [3, 6] }; // two values in one range: counted once
  if (i % 37 === 0) return { has_numeric_value: [2, 5] }; // two values: irregular there
  if (i % 31 === 0) return [{ has_numeric_value: 1 }, { has_numeric_value: 4 }];
  if (i % 29 === 0) return { has_numeric_value: '5' }; // text: no numeric range holds it
  if (i % 23 === 0) return { has_numeric_value: null };
  return { has_numeric_value: i % 7 };
}

const docs: Doc[] = Array.from({ length: 700 }, (_, i) => {
  const depth = depthOf(i);
  return {
    // Some ids hold a character SQLite and JavaScript order differently (pages of one row put an
    // edge on each of them).
    id: i % 53 === 0 ? `r\uE000${i}` : `r${String(i).padStart(4, '0')}`,
    ecosystem_category: CATEGORIES[i % 3],
    ecosystem_type: TYPES[i % 4],
    ...(depth === undefined ? {} : { depth }),
  };
});

const FILTERS: Array<{ filter: Filter; paged: boolean }> = [
  { filter: { ecosystem_category: 'Terrestrial', 'depth.has_numeric_value': { $gt: 2 } }, paged: true },
  { filter: { 'depth.has_numeric_value': { $lte: 3 } }, paged: true },
  {
    filter: { 'depth.has_numeric_value': { $gt: 2 }, ecosystem_type: { $in: ['Soil', 'Leaf'] } },
    paged: true,
  },
  { filter: { ecosystem_category: { $in: ['Terrestrial', 'Plants'] }, ecosystem_type: 'Soil' }, paged: true },
  { filter: { ecosystem_category: 'Aquatic' }, paged: true },
  { filter: { ecosystem_category: 'Terrestrial', id: { $gt: 'r0300' } }, paged: true },
  { filter: { ecosystem_type: { $lt: 'Sediment' } }, paged: true },
  { filter: { ecosystem_type: { $gte: 'Root' }, ecosystem_category: 'Plants' }, paged: true },
  { filter: { ecosystem_category: { $in: ['Plants', 'Aquatic', 'Plants'] } }, paged: true },
  { filter: { 'depth.has_numeric_value': { $lt: 4 }, ecosystem_category: 'Aquatic' }, paged: true },
  // Two ranges: counted another way.
  { filter: { 'depth.has_numeric_value': { $gte: 1, $lt: 5 } }, paged: false },
];

describe('counts read off the attribute index in pages', () => {
  const { store, dispose } = openTemporaryStore();
  const ctx = (store as unknown as { context: StoreContext }).context;

  beforeAll(() => store.upsertMany(C, docs));
  afterAll(dispose);

  for (const { filter, paged } of FILTERS) {
    it(`counts ${JSON.stringify(filter)} exactly`, async () => {
      const expected = docs.filter(compileFilter(filter)).length;
      expect(expected).toBeGreaterThan(0);
      const plan = planIndex(filter);
      expect(plan.exact).toBe(true);
      for (const pageRows of [1, 5, 64, 20_000]) {
        expect(await countOnIndex(ctx, C, plan, { pageRows })).toBe(paged ? expected : undefined);
      }
      const parsed = store.counters.bodiesParsed;
      expect(await store.count(C, filter)).toBe(expected);
      if (paged) expect(store.counters.bodiesParsed).toBe(parsed);
    });
  }
});
